"""`firstfault completion bash|zsh|fish`: a shell completion script, generated from the parser.

    eval "$(firstfault completion bash)"                      # ~/.bashrc
    eval "$(firstfault completion zsh)"                       # ~/.zshrc (through bashcompinit)
    firstfault completion fish > ~/.config/fish/completions/firstfault.fish

The script knows every command, subcommand and option of this version, the choices of options
that have them, and the knowledge-base ids for `explain` and the categories for `compare` and
`list --category`; files are completed where a command takes paths. Regenerate after upgrading.
"""
from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh", "fish")


def register(subparsers) -> None:
    parser = subparsers.add_parser("completion", help="print a shell completion script (bash, zsh, fish)",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.add_argument("-o", "--output", metavar="FILE", default=None, help="write the script to FILE")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..cli import build_parser

    tree = command_tree(build_parser())
    script = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell](tree)
    sys.stdout.write(script)
    return 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def command_tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[dict]:
    """One node per command path: ("diagnose",), ("lab", "run"), ...; its options, their choices,
    its subcommands, and what its positional arguments are (files, ids, categories, words)."""
    nodes = []
    options, positional = [], []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.dest == "help":
            continue
        if action.option_strings:
            takes = action.nargs != 0
            choices = list(action.choices or ()) or (_known_words(action.dest) if takes else [])
            options.append({"flags": list(action.option_strings), "choices": choices, "takes": takes,
                            "help": _plain((action.help or "").split(" (")[0])})
        else:
            positional.append({"dest": action.dest, "choices": list(action.choices or ())})
    children = _subparsers(parser)
    nodes.append({"path": path, "options": options, "positional": positional, "commands": list(children),
                  "helps": {name: _help_of(parser, name) for name in children}})
    for name, child in children.items():
        nodes.extend(command_tree(child, path + (name,)))
    return nodes


def _words_for(node: dict) -> tuple[list[str], bool]:
    """(words to offer for a positional argument, whether file names fit too)."""
    positional = node["positional"][0] if node["positional"] else None
    if positional is None:
        return [], False
    if positional["choices"]:
        return positional["choices"], False
    dest = positional["dest"]
    return _known_words(dest), dest in ("paths", "corpus", "command")


def _known_words(dest: str) -> list[str]:
    """Values an argument takes that the parser does not list: entry ids, categories and topics."""
    if dest == "id":
        from ..kb import load_knowledge_base

        return [entry.id for entry in load_knowledge_base().entries]
    if dest == "category":
        from ..kb.compare import comparison_topics

        return list(comparison_topics())
    return []


def _plain(text: str) -> str:
    return text.replace("'", "").replace('"', "").replace("`", "")


def _case_label(path: tuple[str, ...]) -> str:
    return " ".join(path) if path else ""


def bash_script(tree: list[dict]) -> str:
    cases = []
    for node in tree:
        words, files = _words_for(node)
        flags = [flag for option in node["options"] for flag in option["flags"]]
        choices = [f'        {flag}) COMPREPLY=($(compgen -W "{" ".join(option["choices"])}" -- "$cur")); return;;'
                   for option in node["options"] if option["choices"] for flag in option["flags"]]
        takes_value = [flag for option in node["options"] if option["takes"] and not option["choices"] for flag in option["flags"]]
        offer = " ".join(node["commands"] + words)
        cases.append(
            f'    "{_case_label(node["path"])}")\n'
            f'      case "$prev" in\n' + "\n".join(choices) + ("\n" if choices else "")
            + (f'        {"|".join(takes_value)}) COMPREPLY=($(compgen -f -- "$cur")); return;;\n' if takes_value else "")
            + '      esac\n'
            f'      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "{" ".join(flags)}" -- "$cur")); return; fi\n'
            f'      COMPREPLY=($(compgen -W "{offer}" -- "$cur"))' + ('; COMPREPLY+=($(compgen -f -- "$cur"))' if files else "")
            + "\n      ;;")
    commands = sorted({node["path"] for node in tree if node["commands"]}, key=len, reverse=True)
    known = " ".join(f'"{_case_label(path)}"' for path in commands if path)
    return f'''# firstfault completion for bash (generated by `firstfault completion bash`)
_firstfault() {{
  local cur prev path word i
  cur="${{COMP_WORDS[COMP_CWORD]}}"
  prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  path=""
  # the command path so far: the words that name (sub)commands, options and their values skipped
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${{COMP_WORDS[i]}}"
    [[ "$word" == -* ]] && continue
    if [[ -z "$path" ]]; then candidate="$word"; else candidate="$path $word"; fi
    case "$candidate" in
      {"|".join(sorted({f'"{_case_label(node["path"])}"' for node in tree if node["path"]}))}) path="$candidate";;
    esac
  done
  case "$path" in
{chr(10).join(cases)}
  esac
}}
complete -o default -F _firstfault firstfault
# subcommand groups: {known}
'''


def zsh_script(tree: list[dict]) -> str:
    return ("# firstfault completion for zsh (generated by `firstfault completion zsh`): the bash completion,\n"
            "# run through zsh's bashcompinit\n"
            "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n"
            + bash_script(tree).split("\n", 1)[1])


def fish_script(tree: list[dict]) -> str:
    lines = ["# firstfault completion for fish (generated by `firstfault completion fish`)",
             "complete -c firstfault -f"]
    for node in tree:
        path = node["path"]
        if not path:
            condition = "__fish_use_subcommand"
        else:
            condition = " && ".join(f"__fish_seen_subcommand_from {word}" for word in path)
        for name in node["commands"]:
            help_text = _plain(node["helps"].get(name, ""))
            sub_condition = condition if path else "__fish_use_subcommand"
            if path:
                sub_condition += f" && not __fish_seen_subcommand_from {' '.join(node['commands'])}"
            lines.append(f"complete -c firstfault -n '{sub_condition}' -a {name} -d '{help_text}'")
        for option in node["options"]:
            long = [flag[2:] for flag in option["flags"] if flag.startswith("--")]
            short = [flag[1:] for flag in option["flags"] if not flag.startswith("--")]
            parts = [f"complete -c firstfault -n '{condition}'"]
            parts += [f"-l {name}" for name in long] + [f"-s {name}" for name in short]
            if option["choices"]:
                parts.append(f"-x -a '{' '.join(option['choices'])}'")
            elif option["takes"]:
                parts.append("-r -F")
            parts.append(f"-d '{option['help'][:60]}'")
            lines.append(" ".join(parts))
        words, files = _words_for(node)
        if path and words:
            lines.append(f"complete -c firstfault -n '{condition}' -a '{' '.join(words)}'")
        if path and files:
            lines.append(f"complete -c firstfault -n '{condition}' -F")
    return "\n".join(lines) + "\n"
