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

from dataclasses import dataclass, field
from datetime import datetime, timezone

from .sources import InputFile
from .structured import bounded_float, bounded_int, loads_json

MAX_RECORD_BYTES = 4 * 1024 * 1024
# A time before 1970 or after 2200, or a rank beyond a million, is no real job's: such a field is
# left out (and said so) rather than trusted, and the rest of the record is read.
LATEST_TIME = 7_258_118_400.0
MAX_RANK = 1_000_000


@dataclass(frozen=True)
class ErrorRecord:
    message: str
    traceback: str
    time: float | None
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    ignored: tuple[str, ...] = field(default=(), compare=False)  # fields left out, with why


def parse_error_record(data: bytes | str) -> ErrorRecord | None:
    """The record in a torchelastic error file, or None when the content is not one."""
    try:
        document = loads_json(data, max_depth=16, lenient=True)
    except ValueError:  # not JSON, or JSON no error file holds (NaN, 1e999, 100,000 deep)
        return None
    if not isinstance(document, dict):
        return None
    ignored: list[str] = []
    message = document.get("message")
    if isinstance(message, str):  # the newer flat shape: {"message": "...", "timestamp": N}
        return ErrorRecord(message, "", _time(document, "timestamp", ignored), ignored=tuple(ignored))
    if not isinstance(message, dict) or not isinstance(message.get("message"), str):
        return None
    extra = message.get("extraInfo") if isinstance(message.get("extraInfo"), dict) else {}
    time = _time(extra, "time", ignored)
    if time is None:
        time = _time(extra, "timestamp", ignored)
    return ErrorRecord(
        message=message["message"], traceback=str(extra.get("py_callstack") or ""), time=time,
        rank=_whole(extra, "rank", MAX_RANK, ignored), local_rank=_whole(extra, "local_rank", MAX_RANK, ignored),
        host=extra.get("host") if isinstance(extra.get("host"), str) else None,
        pid=_whole(extra, "pid", 1 << 32, ignored), ignored=tuple(ignored),
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
    """The input to scan in place of `item` when it is a torchelastic error file (its `notes` say
    which fields were left out), else None (it is then read as a log, as it is).

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
    if not data or len(data) > MAX_RECORD_BYTES:
        return None
    record = parse_error_record(data)
    if record is None:
        return None
    notes = tuple(f"partly read: {reason}" for reason in record.ignored)
    return InputFile(display=item.display, relative=item.relative, content=record_as_log(record).encode("utf-8"), notes=notes)


def _time(fields: dict, key: str, ignored: list[str]) -> float | None:
    value = fields.get(key)
    if value is None or value == "":
        return None
    time = bounded_float(value, 0.0, LATEST_TIME)
    if time is None:
        ignored.append(f"`{key}` {str(value)[:40]!r} is not a time; the record is read without it")
    return time


def _whole(fields: dict, key: str, high: int, ignored: list[str]) -> int | None:
    value = fields.get(key)
    if value is None or value == "":
        return None
    number = bounded_int(value, 0, high)
    if number is None:
        ignored.append(f"`{key}` {str(value)[:40]!r} is not a {key.replace('_', ' ')}; the record is read without it")
    return number
