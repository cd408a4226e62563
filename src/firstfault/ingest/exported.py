"""A log platform's export (records in JSON), read back as the logs of the pods or streams it holds.

    pieces = export_pieces(data)   # [] when `data` is no such export

On a managed cluster the logs an engineer has are often what the platform's log store hands back:
`gcloud logging read ... --format=json` or the Logs Explorer's download (a JSON array of Cloud
Logging entries: `textPayload` or `jsonPayload.message`, `timestamp`, the pod in
`resource.labels.pod_name`), `aws logs filter-log-events` (`{"events": [{"logStreamName",
"timestamp" in ms, "message"}]}`), Loki's `logcli query --output=jsonl` (a record a line:
`labels`, `line`, `timestamp`), an ECS document's `message`, `@timestamp` and
`kubernetes.pod.name`. Read as text, every pod's lines run together inside JSON strings (no
launcher prefix starts a line, a traceback's quotes are escaped), and gcloud lists them newest
first. Here each source's records become an input of their own, named by the source (a pod's
name is its host; `trainjob-worker-1` is what `kubectl logs` would have saved), its lines in the
order they were written (an export listed newest first is turned round), each line behind the
time the platform recorded for it when every record has one (read as a collector's time,
`collected.py`). A structured logger's records (python-json-logger: `message`, `asctime`, the
traceback in `exc_info`) are read the same way, each exception after its message. systemd's
journal (`journalctl -o json`: `MESSAGE`, `__REALTIME_TIMESTAMP`, `_HOSTNAME`, `_PID`) is read as
the text `journalctl -o short-iso` prints, one line a record, which names the host and process. Line numbers are those of the source's lines, counted from 1: the JSON's own do
not say where a line is.

Where the fields are (cited from each platform's reference):
- Cloud Logging `LogEntry`: https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry
- CloudWatch Logs `FilteredLogEvent`: https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilteredLogEvent.html
- Loki `logcli` JSON lines output: https://grafana.com/docs/loki/latest/query/logcli/
- Elastic Common Schema (`message`, `@timestamp`, `kubernetes.pod.name`): https://www.elastic.co/guide/en/ecs/current/
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from .structured import loads_json
from .timestamps import Clock

MAX_EXPORT_BYTES = 32 * 1024 * 1024  # parsed whole (its records take several times its size in memory)
TOO_BIG_AN_EXPORT = (f"partly read: a log export over {MAX_EXPORT_BYTES >> 20} MiB is read as the text it is, "
                     "its pods' lines together (export each pod or stream to a file of its own)")
MAX_SOURCES = 4096
# where a record keeps its line, its time and its source, first found first
TEXT_FIELDS = (("textPayload",), ("jsonPayload", "message"), ("message",), ("@message",), ("line",), ("log",),
               ("msg",), ("MESSAGE",))
# a record's exception, kept beside its line by structured loggers (python-json-logger's `exc_info`,
# ECS's `error.stack_trace`, zap's `error`): read after the line, as a plain log prints it after it
EXCEPTION_FIELDS = (("exc_info",), ("exc_text",), ("exception",), ("stack_info",), ("stack_trace",), ("traceback",),
                    ("error",), ("err",), ("error", "stack_trace"), ("jsonPayload", "exc_info"),
                    ("jsonPayload", "stack_trace"), ("jsonPayload", "exception"), ("jsonPayload", "error"))
TIME_FIELDS = (("timestamp",), ("@timestamp",), ("time",), ("receiveTimestamp",), ("asctime",))
SOURCE_FIELDS = (("resource", "labels", "pod_name"), ("logStreamName",), ("@logStream",), ("labels", "pod"),
                 ("kubernetes", "pod_name"), ("kubernetes", "pod", "name"), ("resource", "labels", "instance_id"),
                 ("host", "name"), ("hostname",))
RECORD_LISTS = ("entries", "events")  # Cloud Logging's entries.list, CloudWatch's filter-log-events
# what the first bytes of an export hold: a record's text field, quoted as a JSON key
_TEXT_KEY = re.compile(rb'"(?:textPayload|message|@message|line|msg|MESSAGE)"\s*:')
MAX_TIME_TEXT = 64  # characters of a time field read
_EPOCH_MS = (10 ** 12, 10 ** 14)  # a number in this range is a time in milliseconds (2001-5138)


def looks_like_an_export(head: bytes) -> bool:
    """A cheap first look: JSON that opens on records with a text field."""
    start = head.lstrip()[:1]
    return start in (b"[", b"{") and _TEXT_KEY.search(head) is not None


def export_pieces(data: bytes) -> list[tuple[bytes | None, int, bytes]]:
    """(source, 1, its lines) for each source of the export, in the order they first appear in the
    written order; [] when `data` is no export of log records (or too big to parse here)."""
    if len(data) > MAX_EXPORT_BYTES:
        return []
    records = _records(data)
    if not records:
        return []
    clock = Clock()
    times = [_time_of(record, clock) for record in records]
    timed = [when for when in times if when is not None]
    if len(timed) >= 2 and timed[0] > timed[-1]:  # newest first (gcloud's default order)
        records, times = records[::-1], times[::-1]
    stamped = len(timed) == len(records)
    sources: dict[str, list[str]] = {}
    for record, when in zip(records, times):
        journal = _journal_prefix(record, when)
        lines = sources.setdefault(None if journal is not None else _source_of(record), [])
        for line in _text_of(record).rstrip("\r\n").split("\n"):
            if journal is not None:
                lines.append(journal + line)
            else:
                lines.append(f"{_rfc3339(when)} {line}" if stamped else line)
    if len(sources) > MAX_SOURCES:
        return []
    return [(name.encode("utf-8", "replace") if name else None, 1, "\n".join(lines).encode("utf-8", "surrogatepass"))
            for name, lines in sources.items()]


def _records(data: bytes) -> list[dict]:
    """The export's records: a JSON array, an object holding one (RECORD_LISTS), or a record a line."""
    try:
        value = loads_json(data, lenient=True)
    except ValueError:
        value = _json_lines(data)
    if isinstance(value, dict):
        value = next((value[key] for key in RECORD_LISTS if isinstance(value.get(key), list)), None)
    if not isinstance(value, list) or not value or not all(isinstance(record, dict) for record in value):
        return []
    with_text = sum(1 for record in value if isinstance(_field(record, TEXT_FIELDS), str))
    return value if with_text * 2 > len(value) else []


def _json_lines(data: bytes) -> list | None:
    records = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            records.append(loads_json(line, lenient=True))
        except ValueError:
            return None
    return records


def _field(record: dict, paths: tuple[tuple[str, ...], ...]):
    for path in paths:
        value = record
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and value != "":
            return value
    return None


def _journal_prefix(record: dict, when: float | None) -> str | None:
    """For a record of systemd's journal (`journalctl -o json`), the prefix `journalctl -o
    short-iso` prints before its message (`2026-12-05T12:00:00.123456+0000 gpu-node-3 python3[4100]: `),
    which the reader takes the host and process from; None for any other record."""
    if "MESSAGE" not in record or not isinstance(record.get("_HOSTNAME", record.get("SYSLOG_IDENTIFIER")), str):
        return None
    moment = datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+0000") if when is not None else "-"
    ident = record.get("SYSLOG_IDENTIFIER") or record.get("_COMM") or "journal"
    pid = record.get("_PID")
    process = f"{ident}[{pid}]" if isinstance(pid, str) and pid.isdigit() else str(ident)
    return f"{moment} {record.get('_HOSTNAME') or 'localhost'} {process}: "


def _text_of(record: dict) -> str:
    """The record's line, then the exception a structured logger kept beside it; a record without a
    line is shown whole, as compact JSON (nothing is dropped)."""
    text = _field(record, TEXT_FIELDS)
    if isinstance(text, list) and all(isinstance(item, int) and 0 <= item < 256 for item in text):
        text = bytes(text).decode("utf-8", "replace")  # the journal's message that is not UTF-8
    if not isinstance(text, str):
        return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for path in EXCEPTION_FIELDS:
        extra = _field(record, (path,))
        if isinstance(extra, str) and extra.strip() and extra.strip() not in text:
            text = f"{text.rstrip()}\n{extra.rstrip()}"
    return text


def _source_of(record: dict) -> str | None:
    source = _field(record, SOURCE_FIELDS)
    if not isinstance(source, str) or not source.strip():
        return None
    return source.strip()


def _time_of(record: dict, clock: Clock) -> float | None:
    """The record's time in seconds: a date and time the log reader knows (RFC 3339, Python
    logging's), milliseconds since 1970, or the journal's microseconds."""
    value = _field(record, TIME_FIELDS)
    journal = record.get("__REALTIME_TIMESTAMP")
    if value is None and isinstance(journal, str) and journal.isdigit():
        return int(journal) / 1_000_000  # the journal's microseconds since 1970
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1000 if _EPOCH_MS[0] <= value < _EPOCH_MS[1] else None
    seconds = clock.parse(value[:MAX_TIME_TEXT]) if isinstance(value, str) else None
    return float(seconds) if seconds is not None else None


def _rfc3339(seconds: float) -> str:
    """`seconds` as an RFC 3339 time in UTC, cut (not rounded) to the microsecond."""
    whole = int(seconds // 1)
    micros = min(int((seconds - whole) * 1e6), 999_999)
    return datetime.fromtimestamp(whole, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{micros:06d}Z"
