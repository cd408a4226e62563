"""Arguments -> library -> renderer. Exit codes: 0 healthy/ok, 1 failure found, 2 tool error."""
from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import FirstfaultError

# Each module registers its subcommands; keep this list the only place that names them.
COMMAND_MODULES = (
    "diagnose",
    "encyclopedia",
    "kbcheck",
    "evaluate",
    "lab",
    "serve",
    "live",
)

EXIT_OK, EXIT_FAILURE_FOUND, EXIT_TOOL_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="firstfault",
        description="Find the first fault in the logs of a failed (distributed) training run.",
    )
    parser.add_argument("--version", action="version", version=f"firstfault {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f".commands.{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.commands.{name}":
                continue  # a subsystem not built in this checkout
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
