"""torchelastic error files (`TORCHELASTIC_ERROR_FILE`, `.../attempt_N/<local_rank>/error.json`).

The shape torchelastic's `@record` writes, which `firstfault.install()` writes too:

    {"message": {"message": "IndexError: ...", "extraInfo": {"py_callstack": "Traceback ...",
                 "timestamp": "1764694000"}}}

firstfault's hook adds `time` (float seconds), `rank`, `local_rank`, `host` and `pid` under
`extraInfo`; torchelastic reads only the fields it knows. A record becomes log text the same
matcher reads: the traceback's lines, each carrying the record's time and a `[rankN]:` prefix when
the rank is known (else the path's `attempt_N/<local_rank>/` hint names it).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from .sources import InputFile

MAX_RECORD_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ErrorRecord:
    message: str
    traceback: str
    time: float | None
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None


def parse_error_record(data: bytes | str) -> ErrorRecord | None:
    """The record in a torchelastic error file, or None when the content is not one."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    message = document.get("message")
    if isinstance(message, str):  # the newer flat shape: {"message": "...", "timestamp": N}
        return ErrorRecord(message, "", _number(document.get("timestamp")))
    if not isinstance(message, dict) or not isinstance(message.get("message"), str):
        return None
    extra = message.get("extraInfo") if isinstance(message.get("extraInfo"), dict) else {}
    time = _number(extra.get("time"))
    if time is None:
        time = _number(extra.get("timestamp"))
    return ErrorRecord(
        message=message["message"], traceback=str(extra.get("py_callstack") or ""), time=time,
        rank=_integer(extra.get("rank")), local_rank=_integer(extra.get("local_rank")),
        host=extra.get("host") if isinstance(extra.get("host"), str) else None, pid=_integer(extra.get("pid")),
    )


def record_as_log(record: ErrorRecord) -> str:
    """Log lines the engine's matcher reads: the traceback (or the message), timed and attributed."""
    stamp = ""
    if record.time is not None:
        stamp = datetime.fromtimestamp(record.time, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") + " "
    prefix = f"[rank{record.rank}]:" if record.rank is not None else ""
    body = record.traceback.rstrip("\n") or record.message
    lines = body.split("\n")
    if record.message and record.traceback and record.message not in lines[-1]:
        lines.append(record.message)
    return "".join(f"{prefix}{stamp}{line}\n" for line in lines)


def error_record_input(item: InputFile) -> InputFile | None:
    """The input to scan in place of `item` when it is a torchelastic error file, else None.

    For `diagnose`: the traceback inside the JSON is then matched line by line, timed and attributed,
    instead of as one long JSON line. Works for files on disk and for in-memory content alike."""
    if item.is_stdin or not (item.relative.endswith(".json") or item.display.endswith(".json")):
        return None
    data = item.content
    if data is None and item.path is not None:
        try:
            if item.path.stat().st_size > MAX_RECORD_BYTES:
                return None
            data = item.path.read_bytes()
        except OSError:
            return None
    record = parse_error_record(data) if data else None
    if record is None:
        return None
    return InputFile(display=item.display, relative=item.relative, content=record_as_log(record).encode("utf-8"))


def _number(value) -> float | None:
    try:
        return float(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def _integer(value) -> int | None:
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None
