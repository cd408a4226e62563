"""A log as a collector stored it: a time (and the stream) before every line, read as the log.

    item = as_logged(item, head)   # the same item when it is not such a log

Kubernetes' kubelet writes a container's output under `/var/log/pods/` one line at a time behind
`2026-12-05T08:00:00.123456789Z stderr F ` (the CRI log format); GitHub Actions and other CI
runners put `2026-12-05T08:00:00.1234567Z ` before each line; Docker's json-file driver writes
each line as a record (`{"log":"...\\n","stream":"stderr","time":"..."}`), read here as the CRI
line it says the same as. The collector's time is a true time of the line (often its only one),
but in front of the line it hides what the line says at its start: the launcher prefix
(`[rank3]:`, `3: `) that tells which rank wrote it. When every non-empty line of a text starts
with such a time, the stream and tag are dropped and the time is put behind the launcher prefix
(`[rank3]:2026-12-05T08:00:00.1Z RuntimeError: ...`), where the rank is read first and the time
right after it; line numbers do not change.
"""
from __future__ import annotations

import re
from dataclasses import replace

from .sources import InputFile
from .structured import loads_json

MAX_COLLECTED_BYTES = 256 * 1024 * 1024  # larger texts are read as they are (the copy would sit in memory)
MAX_JSON_LOG_BYTES = 64 * 1024 * 1024  # a JSON record a line is decoded one by one

# an RFC 3339 time in UTC or with an offset, fractions up to nanoseconds; kubelet's stream and
# full/partial tag after it
_TIME = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)"
_COLLECTOR = rb"(" + _TIME + rb") (?:(?:stdout|stderr) [FP] )?"
# the launcher prefixes a line of a training job starts with: srun's task label, pdsh's host
# (DeepSpeed's multi-node launcher: `gpu-node-3: `, a name with a digit or an IPv4 address, as
# ingest.attribution reads it), torchrun's `[rank3]:` / `[default3]:[rank11]:`, Open MPI's `[1,3]<stdout>:`
_PDSH_HOST = rb"(?:[A-Za-z][A-Za-z0-9_.-]{0,62}\d[A-Za-z0-9_.-]{0,62}|\d{1,3}(?:\.\d{1,3}){3}): "
_LAUNCHER = rb"((?: {0,5}\d{1,6}: )?(?:" + _PDSH_HOST + rb")?(?:\[[^\]\n]{1,40}\](?:<std(?:out|err)>)?:)*)"
_COLLECTED_LINE = re.compile(rb"^" + _COLLECTOR + _LAUNCHER, re.MULTILINE)
# NCCL's own lines name their host and device first (`host:pid:tid [3] NCCL INFO`): the collector's
# time is dropped there (a time between would hide the device), as the line was written
_COLLECTED_NCCL_LINE = re.compile(rb"^" + _COLLECTOR + _LAUNCHER + rb"(?=[\w.-]{1,64}:\d{1,10}:\d{1,10} \[\d{1,3}\] )",
                                  re.MULTILINE)
_STARTS_COLLECTED = re.compile(_COLLECTOR)
_TIME_ONLY = re.compile(_TIME)
# a line that is not blank and does not start with a collector's time
_OTHER_LINE = re.compile(rb"^(?!" + _TIME + rb" )[ \t]*[^ \t\r\n]", re.MULTILINE)


def as_logged(item: InputFile, head: bytes | None) -> InputFile:
    """`item` with each line's collector time put behind its launcher prefix (in-memory
    content); `head`: its first bytes (None: it cannot be one)."""
    if not head:
        return item
    if head.lstrip()[:1] == b"{" and b'"log"' in head:
        data = item.whole(MAX_JSON_LOG_BYTES)
        data = _docker_as_cri(data) if data is not None else None
    elif _STARTS_COLLECTED.match(head.lstrip(b"\r\n")) is not None:
        data = item.whole(MAX_COLLECTED_BYTES)
        data = data if data is not None and _OTHER_LINE.search(data) is None else None
    else:
        return item
    if data is None:
        return item
    data = _COLLECTED_NCCL_LINE.sub(rb"\2", data)
    return replace(item, path=None, content=_COLLECTED_LINE.sub(rb"\2\1 ", data))


def _docker_as_cri(data: bytes) -> bytes | None:
    """Docker's json-file log (`{"log":"...\\n","stream":"stderr","time":"..."}` a line) as the
    CRI lines it says the same as; None when a line is not such a record."""
    lines = []
    for line in data.split(b"\n"):
        if not line.strip():
            lines.append(b"")
            continue
        try:
            record = loads_json(line, max_depth=2)
        except ValueError:
            return None
        if not (isinstance(record, dict) and isinstance(record.get("log"), str) and isinstance(record.get("time"), str)
                and _TIME_ONLY.fullmatch(record["time"].encode()) and record.get("stream") in ("stdout", "stderr", None)):
            return None
        text = record["log"].rstrip("\r\n").replace("\n", " ")
        lines.append(f"{record['time']} {record.get('stream') or 'stdout'} F {text}".encode("utf-8", "surrogatepass"))
    return b"\n".join(lines)
