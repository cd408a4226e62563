"""Arguments -> library -> renderer. Exit codes: 0 healthy/ok, 1 failure found, 2 tool error.

`firstfault COMMAND ...` and `python -m firstfault COMMAND ...` both land in `main`. The
configuration file (firstfault.config) fills the options the command line leaves open; `-o FILE`
sends results to a file (replaced only when the command did its job); `-q` keeps standard error
to errors.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from . import __version__
from .errors import FirstfaultError, UsageError

# Each module registers its subcommands; keep this table the only place that names them.
# Only the module of the command given is imported (a tiny log is answered in a fraction of a
# second); `firstfault --help`, or an unknown command, imports them all to list them.
COMMAND_MODULES = {
    "diagnose": ("diagnose",),
    "encyclopedia": ("explain", "list", "search", "compare"),
    "kbcheck": ("kb",),
    "evaluate": ("eval",),
    "rules": ("rules",),
    "lab": ("lab",),
    "serve": ("serve",),
    "live": ("watch", "run"),
    "fleet": ("fleet",),
    "lsp": ("lsp",),
    "completion": ("completion",),
    "history": ("history", "ask", "why"),
}

EXIT_OK, EXIT_FAILURE_FOUND, EXIT_TOOL_ERROR = 0, 1, 2
TRACEBACK_ENV = "FIRSTFAULT_TRACEBACK"  # set: an internal error shows its traceback
READS_LOGS = ("diagnose", "watch", "run", "eval", "lab", "serve")  # where the matcher's speed shows
# Commands that hold nothing open once they have written their output: the process ends there,
# without the interpreter's teardown (freeing every object one by one takes 20-35 ms after a
# diagnosis of a large job, about 5 % of a 200 MB run). Not the commands that start servers,
# clusters or jobs, whose exit handlers stop them.
ENDS_WITHOUT_TEARDOWN = ("diagnose",)


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


def _command_of(argv: list[str] | None) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None) if argv is not None else None


def _modules_for(argv: list[str] | None) -> list[str]:
    command = _command_of(argv)
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
        from .commands.options import resolve
        from .config import load_config

        resolve(args, load_config())
        with _quiet(args), _output(args) as status:
            if args.command in READS_LOGS:
                from .commands.options import warn_if_slow_matcher

                warn_if_slow_matcher()
            status.code = args.func(args)
        return status.code
    except FirstfaultError as exc:
        from .render.printable import printable  # a message may quote a file name from the user

        print(f"firstfault: error: {printable(exc.message)}", file=sys.stderr)
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
    except Exception as exc:  # a bug of ours: said plainly, the traceback only when asked for
        if os.environ.get(TRACEBACK_ENV):
            raise
        from .render.printable import printable

        print(f"firstfault: internal error: {type(exc).__name__}: {printable(str(exc))}", file=sys.stderr)
        print(f"hint: this is a bug in firstfault {__version__}, not a problem with your logs; run it again with "
              f"{TRACEBACK_ENV}=1 to see where, and report that (the logs stay yours: nothing was sent)", file=sys.stderr)
        return EXIT_TOOL_ERROR


def console() -> None:
    """`firstfault ...` and `python -m firstfault ...`: `main`, then the end of the process."""
    code = main()
    if _command_of(sys.argv[1:]) in ENDS_WITHOUT_TEARDOWN and _nothing_left_running():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: the usual exit says nothing more of it
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _nothing_left_running() -> bool:
    """No thread but this one, and no child process (the scan's workers are gone)."""
    import threading

    if threading.active_count() > 1:
        return False
    processes = sys.modules.get("multiprocessing")
    return processes is None or not processes.active_children()


class _Status:
    code = EXIT_TOOL_ERROR


@contextlib.contextmanager
def _quiet(args):
    """-q/--quiet: standard error keeps errors and hints only, for the command's whole run."""
    if not getattr(args, "quiet", False):
        yield
        return
    from .commands.options import QuietStderr

    original = sys.stderr
    sys.stderr = QuietStderr(original)
    try:
        yield
    finally:
        sys.stderr = original


@contextlib.contextmanager
def _output(args):
    """-o/--output FILE: results go to a temporary file beside FILE, which replaces FILE when
    the command did its job (exit 0 or 1); after a tool error FILE is left as it was."""
    status = _Status()
    target = getattr(args, "output", None)
    if not target:
        yield status
        return
    folder = os.path.dirname(os.path.abspath(target))
    try:
        import tempfile  # (only for -o: its imports cost a diagnosis 5 ms)

        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".firstfault-", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}", "give -o a path in a folder you can write") from None
    stream = os.fdopen(handle, "w", encoding="utf-8", newline="")
    original = sys.stdout
    sys.stdout = stream
    try:
        yield status
    finally:
        sys.stdout = original
        stream.close()
        if status.code in (EXIT_OK, EXIT_FAILURE_FOUND):
            os.replace(temporary, target)
        else:
            os.unlink(temporary)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
