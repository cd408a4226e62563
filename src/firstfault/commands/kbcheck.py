"""`firstfault kb check`: validate every entry and run every signature example."""
from __future__ import annotations

import json
import sys

from .options import FORMATS, add_output_options, use_color


def register(subparsers) -> None:
    kb = subparsers.add_parser("kb", help="knowledge-base maintenance")
    kb_sub = kb.add_subparsers(dest="kb_command", metavar="ACTION", required=True)
    check = kb_sub.add_parser("check", help="validate every entry; report all problems with file:line")
    add_output_options(check, FORMATS)
    check.set_defaults(func=run_check)


def run_check(args) -> int:
    from ..kb.loader import ENTRIES_DIR, check_entries

    entries, problems = check_entries()
    for folder in getattr(args, "signature_folders", ()) or ():  # the configuration's own entries
        own, own_problems = check_entries(folder, known=tuple(entries))
        entries, problems = entries + own, problems + own_problems
    signatures = sum(len(entry.signatures) for entry in entries)
    examples = sum(len(s.examples) + len(s.near_misses) for entry in entries for s in entry.signatures)
    summary = f"{len(entries)} entries, {signatures} signatures, {examples} examples checked"
    if args.format == "json":
        print(json.dumps({"entries": len(entries), "signatures": signatures, "examples": examples,
                          "problems": [{"path": p.path, "line": p.line, "message": p.message} for p in problems]},
                         indent=2))
    elif args.format == "markdown":
        print(f"### Knowledge-base check: {len(problems)} problem(s)\n\n{summary} ({ENTRIES_DIR.name}).\n")
        print("".join(f"- `{problem}`\n" for problem in problems), end="")
    else:
        from ..render.entry_terminal import Style

        style = Style(use_color(args.color, sys.stdout))
        for problem in problems:
            print(style("literal", str(problem)))
        if problems:
            print(f"{len(problems)} problem(s); {summary}", file=sys.stderr)
        else:
            print(style("code", "ok:") + f" {summary}")
    return 1 if problems else 0
