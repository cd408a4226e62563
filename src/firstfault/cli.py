"""Arguments -> library -> renderer. Exit codes: 0 healthy/ok, 1 failure found, 2 tool error."""
from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import FirstfaultError

# Each module registers its subcommands; keep this table the only place that names them.
# Only the module of the command given is imported (a tiny log is answered in a fraction of a
# second); `firstfault --help`, or an unknown command, imports them all to list them.
COMMAND_MODULES = {
    "diagnose": ("diagnose",),
    "encyclopedia": ("explain", "list", "search", "compare"),
    "kbcheck": ("kb",),
    "evaluate": ("eval",),
    "lab": ("lab",),
    "serve": ("serve",),
    "live": ("watch", "run"),
    "fleet": ("fleet",),
}

EXIT_OK, EXIT_FAILURE_FOUND, EXIT_TOOL_ERROR = 0, 1, 2


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, with only the subcommand they name registered."""
    parser = argparse.ArgumentParser(
        prog="firstfault",
        description="Find the first fault in the logs of a failed (distributed) training run.",
    )
    parser.add_argument("--version", action="version", version=f"firstfault {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _modules_for(argv):
        try:
            module = importlib.import_module(f".commands.{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.commands.{name}":
                continue  # a subsystem not built in this checkout
            raise
        module.register(subparsers)
    return parser


def _modules_for(argv: list[str] | None) -> list[str]:
    command = next((arg for arg in argv if not arg.startswith("-")), None) if argv is not None else None
    named = [module for module, commands in COMMAND_MODULES.items() if command in commands]
    return named or list(COMMAND_MODULES)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_TOOL_ERROR
    try:
        return args.func(args)
    except FirstfaultError as exc:
        print(f"firstfault: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return EXIT_TOOL_ERROR
    except KeyboardInterrupt:
        print("firstfault: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `firstfault ... | head` closed the pipe: not an error of ours
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
