"""Read PyTorch flight-recorder dumps, pickle or JSON, without ever executing the file.

A dump is what `torch._C._distributed_c10d._dump_fr_trace()` (and the dump-on-timeout
writer, one file per rank named `<TORCH_FR_DUMP_TEMP_FILE><rank>`) returns: a pickle
of plain dicts, lists, tuples, str, int, float, bool and None, written by c10d's
FlightRecorder::dump_dict. `_dump_fr_trace_json()` writes the same content as JSON,
where pg_status values are strings and missing times are 0. The dump does not hold
its own rank: the rank comes from the file name.

A dump is untrusted input: the unpickler refuses every global, so no callable can be
reached and nothing in the file runs; what it builds is then checked (ingest/structured.py) to
be plain, at most a few levels deep and no larger than the file, before anything walks it, so
neither deep nesting, `Infinity`, nor lists sharing their items can crash or stall a run.
"""
from __future__ import annotations

import io
import os
import pickle
from dataclasses import dataclass, field

from firstfault.errors import InputError
from firstfault.ingest.structured import MAX_DEPTH, TooComplex, bounded_int, check_plain, loads_json

from .ranks import parse_rank_list, rank_from_name
from .results import Frame

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_HINT = "pass the per-rank files written by TORCH_FR_DUMP_TEMP_FILE / _dump_fr_trace()"
_PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                  IndexError, KeyError, MemoryError, OverflowError, RecursionError,
                  UnicodeDecodeError)
_INT64 = 1 << 63


class _RefusingUnpickler(pickle.Unpickler):
    """Builds only the pickle machine's own values: every global and persistent id is refused."""

    def find_class(self, module: str, name: str):  # noqa: D401 - pickle's interface
        raise pickle.UnpicklingError(f"refused to load global {module}.{name}")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused a persistent id")


@dataclass(frozen=True)
class Entry:
    """One recorded collective or p2p operation, as one rank saw it."""

    record_id: int
    pg_id: str
    pg_name: str
    pg_desc: str
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    profiling_name: str
    is_p2p: bool
    state: str
    input_sizes: tuple
    input_dtypes: tuple
    output_sizes: tuple
    output_dtypes: tuple
    time_created_ns: int
    frames: tuple[Frame, ...] = ()
    retired: bool = False  # the recorder's own mark that the work is over

    @property
    def seq_id(self) -> int:
        return self.p2p_seq_id if self.is_p2p else self.collective_seq_id


@dataclass(frozen=True)
class FlightRecorderDump:
    """One rank's dump, normalized across the pickle and JSON forms."""

    source: str
    rank: int | None
    version: str
    entries: tuple[Entry, ...]
    pg_ranks: dict = field(default_factory=dict, hash=False)  # pg name -> ranks
    pg_status: dict = field(default_factory=dict, hash=False)  # pg id -> {last_*: int}

    def last_completed(self, pg_id: str) -> int:
        return self.pg_status.get(pg_id, {}).get("last_completed_collective", -1)

    def completed(self, entry: Entry) -> bool:
        """Gloo never marks an entry completed: its pg_status says how far it got, and each
        finished work is retired (pg_status can lag behind the retired entries on a busy host:
        a rank then looked stuck in a collective it had finished)."""
        if entry.state == "completed" or (entry.retired and entry.profiling_name.startswith("gloo:")):
            return True
        return not entry.is_p2p and 0 < entry.collective_seq_id <= self.last_completed(entry.pg_id)

    def started(self, entry: Entry) -> bool:
        if entry.state in ("started", "completed") or self.completed(entry):
            return True
        last_started = self.pg_status.get(entry.pg_id, {}).get("last_started_collective", -1)
        return not entry.is_p2p and 0 < entry.collective_seq_id <= last_started


def load_dump(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
              rank: int | None = None) -> FlightRecorderDump:
    """Read one per-rank dump; rank defaults to the number in the file name."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise InputError(f"{path}: flight-recorder dump of {size} bytes is over the "
                             f"{max_bytes}-byte limit", "raise max_bytes if the file is genuine")
        with open(path, "rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}", _HINT) from None
    return parse_dump(data, path, rank if rank is not None else rank_from_name(path))


def parse_dump(data: bytes, source: str, rank: int | None) -> FlightRecorderDump:
    """Bytes of a dump (pickle or JSON) to a FlightRecorderDump; InputError when not one."""
    raw = restricted_loads(data, source) if data[:1] == b"\x80" else _unjson(data, source)
    try:
        check_plain(raw, max_depth=MAX_DEPTH, max_nodes=4 * len(data) + 10_000)
    except TooComplex as error:
        raise InputError(f"{source}: not a flight-recorder dump: it {error}", _HINT) from None
    if not isinstance(raw, dict) or "version" not in raw or not (
            "entries" in raw or "pg_config" in raw):
        raise InputError(f"{source}: not a flight-recorder dump (no version/entries keys)", _HINT)
    try:
        return _normalize(raw, source, rank)
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError, IndexError) as error:
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise InputError(f"{source}: malformed flight-recorder dump: {reason}", _HINT) from None


def restricted_loads(data: bytes, source: str) -> object:
    """Unpickle plain values only; InputError (nothing executed) for anything else."""
    try:
        return _RefusingUnpickler(io.BytesIO(data)).load()
    except _PICKLE_ERRORS as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(f"{source}: refused pickle: {reason}",
                         "a flight-recorder dump holds only plain values; this file does "
                         "not, so it was not loaded") from None


def _unjson(data: bytes, source: str) -> object:
    try:
        return loads_json(data, max_depth=MAX_DEPTH)
    except ValueError as error:
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise InputError(f"{source}: not a flight-recorder dump: {reason}", _HINT) from None


def _int(value, default: int = 0) -> int:
    """A 64-bit integer field (JSON dumps write some as strings); ValueError for anything else."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return int(value)
    number = bounded_int(value, -_INT64, _INT64)
    if number is None:
        raise ValueError(f"{str(value)[:40]!r} is not an integer")
    return number


def _normalize(raw: dict, source: str, rank: int | None) -> FlightRecorderDump:
    pg_ranks = {}
    for key, info in (raw.get("pg_config") or {}).items():
        info = info if isinstance(info, dict) else {}
        pg_ranks[str(info.get("name", key))] = parse_rank_list(info.get("ranks"))
    pg_status = {
        str(pg_id): {str(name): _int(value) for name, value in status.items()}
        for pg_id, status in (raw.get("pg_status") or {}).items() if isinstance(status, dict)
    }
    entries = tuple(_entry(item) for item in raw.get("entries") or () if isinstance(item, dict))
    return FlightRecorderDump(source=source, rank=rank, version=str(raw.get("version")),
                              entries=entries, pg_ranks=pg_ranks, pg_status=pg_status)


def _entry(item: dict) -> Entry:
    group = item.get("process_group") or ("", "")
    if isinstance(group, str):
        group = (group, "")
    collective_seq = item.get("collective_seq_id", item.get("seq_id", 0))
    return Entry(
        record_id=_int(item.get("record_id")),
        pg_id=str(item.get("pg_id", group[0])),
        pg_name=str(group[0]),
        pg_desc=str(group[1]) if len(group) > 1 else "",
        collective_seq_id=_int(collective_seq),
        p2p_seq_id=_int(item.get("p2p_seq_id")),
        op_id=_int(item.get("op_id")),
        profiling_name=str(item.get("profiling_name", "")),
        is_p2p=bool(item.get("is_p2p", False)),
        state=str(item.get("state", "scheduled")),
        input_sizes=_freeze(item.get("input_sizes", ())),
        input_dtypes=_freeze(item.get("input_dtypes", ())),
        output_sizes=_freeze(item.get("output_sizes", ())),
        output_dtypes=_freeze(item.get("output_dtypes", ())),
        time_created_ns=_int(item.get("time_created_ns")),
        frames=tuple(_frame(frame) for frame in item.get("frames") or () if isinstance(frame, dict)),
        retired=item.get("retired") is True,
    )


def _frame(frame: dict) -> Frame:
    return Frame(function=str(frame.get("name", "?")), file=str(frame.get("filename", "?")),
                 line=_int(frame.get("line")))


def _freeze(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    return value
