"""`firstfault.install()`: a structured per-rank error record when a process dies of an exception.

Wraps `sys.excepthook`. On an uncaught exception it writes the record torchelastic's `@record`
writes (see `ingest/error_records.py` for the shape) to `$TORCHELASTIC_ERROR_FILE` when torchrun set
one, and to `<error_dir>/rank<R>.json` when an error folder is given (argument, else
`$FIRSTFAULT_ERROR_DIR`, which `firstfault run` sets); then it calls the previous hook, so the
traceback is printed as before. It never raises: a record that cannot be written is skipped.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
import traceback

ERROR_DIR_ENV = "FIRSTFAULT_ERROR_DIR"
_STARTED = time.time()


def install(error_dir: str | os.PathLike | None = None):
    """Install the hook (idempotent); returns the hook function."""
    previous = sys.excepthook
    if getattr(previous, "_firstfault_hook", False):
        return previous
    directory = error_dir if error_dir is not None else os.environ.get(ERROR_DIR_ENV) or None

    def firstfault_excepthook(exc_type, exc_value, exc_traceback):
        if not issubclass(exc_type, KeyboardInterrupt):
            try:
                write_records(exc_type, exc_value, exc_traceback, directory)
            except Exception:  # the job's own traceback matters more than our record
                pass
        previous(exc_type, exc_value, exc_traceback)

    firstfault_excepthook._firstfault_hook = True
    sys.excepthook = firstfault_excepthook
    return firstfault_excepthook


def error_record(exc_type, exc_value, exc_traceback) -> dict:
    """The record, in torchelastic's shape plus firstfault's exact fields under extraInfo."""
    now = time.time()
    rank = _env_int("RANK")
    return {
        "message": {
            "message": f"{exc_type.__name__}: {exc_value}",
            "extraInfo": {
                "py_callstack": "".join(traceback.format_exception(exc_type, exc_value, exc_traceback)),
                "timestamp": str(int(now)),
                "time": now,
                "rank": rank,
                "local_rank": _env_int("LOCAL_RANK"),
                "host": socket.gethostname(),
                "pid": os.getpid(),
            },
        }
    }


def write_records(exc_type, exc_value, exc_traceback, error_dir=None) -> list[str]:
    record = json.dumps(error_record(exc_type, exc_value, exc_traceback))
    written = []
    elastic_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if elastic_file and not _written_by_this_process(elastic_file):
        _write(elastic_file, record)
        written.append(elastic_file)
    if error_dir:
        rank = _env_int("RANK")
        name = f"rank{rank}.json" if rank is not None else f"pid{os.getpid()}.json"
        path = os.path.join(os.fspath(error_dir), name)
        os.makedirs(os.fspath(error_dir), exist_ok=True)
        _write(path, record)
        written.append(path)
    return written


def _written_by_this_process(path: str) -> bool:
    """torchelastic's own `@record` already wrote this run's file: keep its record."""
    try:
        return os.path.getmtime(path) >= _STARTED and os.path.getsize(path) > 0
    except OSError:
        return False


def _write(path: str, content: str) -> None:
    # written whole then renamed, so a follower never reads half a record
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # hidden: followers skip dotfiles
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(content)
    os.replace(temporary, path)


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None
