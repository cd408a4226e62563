"""`firstfault lsp`: the editor server, the Language Server Protocol over stdin/stdout."""
from __future__ import annotations

import logging
import os
import sys

LOG_LEVELS = ("error", "warning", "info", "debug")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "lsp", help="run the editor server (Language Server Protocol over stdio)",
        description="The Language Server Protocol over stdin/stdout, for editors (VS Code, Neovim, Helix, "
                    "Emacs): a log file opened in the editor is diagnosed with its whole run folder, read from "
                    "disk; the first fault and the collateral lines are marked where they are. Start it from "
                    "the editor (see the README, \"In the editor\"). Needs the lsp extra.",
    )
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default; editors may pass it)")
    parser.add_argument("--log-file", metavar="PATH", help="write the server's own log to PATH (default: stderr)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning", help="how much the server logs (default: warning)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..errors import UsageError
    from ..lsp import INSTALL_HINT, missing_requirements

    missing = missing_requirements()
    if missing:
        raise UsageError(f"the editor server needs {', '.join(missing)}", INSTALL_HINT)
    if sys.stdin.isatty():
        print("firstfault lsp: waiting for an editor on stdin (the Language Server Protocol); start it from the "
              "editor's configuration (README: \"In the editor\"). Ctrl-C stops.", file=sys.stderr)
    _configure_logging(args.log_file, args.log_level)
    protocol_in, protocol_out = _protocol_streams()
    from ..lsp.features import build_server

    build_server().start_io(protocol_in, protocol_out)
    return 0


def _protocol_streams():
    """The protocol gets its own handles on stdin and stdout; file descriptor 0 becomes
    /dev/null and 1 becomes stderr. Nothing else in the process can write into the message
    stream (a print, a worker process flushing the stdout it inherited), and a worker process
    forked to scan files does not hang closing a stdin whose lock the protocol's reader holds."""
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, sys.stdin.fileno())
    os.close(null)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (lives as long as the process)
    sys.stdout = sys.stderr
    return protocol_in, protocol_out


class _NoTracebacks(logging.Filter):
    """Requests that fail on bad input are logged as one line: the error is the message."""

    def __init__(self) -> None:
        super().__init__()
        from pygls.exceptions import JsonRpcException

        self.request_errors = JsonRpcException

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], self.request_errors):
            record.exc_info, record.exc_text = None, None
        return True


def _configure_logging(path: str | None, level: str) -> None:
    handler = logging.FileHandler(path, encoding="utf-8") if path else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_NoTracebacks())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))
