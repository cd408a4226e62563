"""Pick flight-recorder dumps and stack dumps out of the input files and analyze them together.

The engine calls analyze_files with every input file (analyze_contents for inputs held in
memory); the inputs listed in the report's `consumed` were dumps (read here, or refused
here) and are not logs.
"""
from __future__ import annotations

import os
from typing import Iterable

from firstfault.errors import InputError

from .analysis import analyze_flight_recorder
from .flight_recorder import DEFAULT_MAX_BYTES, load_dump, parse_dump
from .ranks import format_ranks, rank_from_name
from .results import DumpReport, FlightRecorderResult, StackResult
from .sniff import HEAD_BYTES, has_dump_name, is_pickle, looks_like_dump, read_head
from .stacks import group_stacks, load_stacks, looks_like_stacks, parse_stack_text

FLIGHT_RECORDER_KIND = "flight_recorder"
STACKS_KIND = "stacks"


def classify(path: str, head: bytes) -> str | None:
    """'flight_recorder', 'stacks' or None (a log, or not ours) from the name and first bytes."""
    if is_pickle(head):
        return FLIGHT_RECORDER_KIND  # any pickle: only the restricted loader may open it
    if looks_like_dump(head) or has_dump_name(path, head):
        return FLIGHT_RECORDER_KIND
    if looks_like_stacks(head) and b"Fatal Python error: " not in head:
        # faulthandler's stacks after "Fatal Python error:" report a crash: a log, not a dump
        # taken of a live process
        return STACKS_KIND
    return None


def analyze_files(paths: Iterable[str], *, world_size: int | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> DumpReport:
    """Read the dumps among `paths`, analyze them, and say which files were taken."""
    return analyze_heads(((path, read_head(path)) for path in paths), world_size=world_size, max_bytes=max_bytes)


def analyze_heads(heads: Iterable[tuple[str, bytes]], *, world_size: int | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> DumpReport:
    """The same, from (path, first HEAD_BYTES) pairs already read (`sniff.dump_candidates`)."""
    taken = _Taken()
    for path, head in heads:
        kind = classify(path, head)
        if kind == FLIGHT_RECORDER_KIND:
            taken.add(path, lambda path=path: taken.dumps.append(load_dump(path, max_bytes=max_bytes)))
        elif kind == STACKS_KIND:
            taken.add(path, lambda path=path: taken.stacks.extend(load_stacks(path)))
    return taken.report(world_size)


def analyze_contents(named_contents: Iterable[tuple[str, bytes | str]], *,
                     world_size: int | None = None,
                     max_bytes: int = DEFAULT_MAX_BYTES) -> DumpReport:
    """The same for inputs already in memory (uploads): (name, content) pairs."""
    taken = _Taken()
    for name, content in named_contents:
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        kind = classify(name, data[:HEAD_BYTES])
        if kind == FLIGHT_RECORDER_KIND:
            taken.add(name, lambda name=name, data=data: taken.dumps.append(
                _dump_from_bytes(name, data, max_bytes)))
        elif kind == STACKS_KIND:
            taken.add(name, lambda name=name, data=data: taken.stacks.extend(
                _stacks_from_bytes(name, data)))
    return taken.report(world_size)


class _Taken:
    """The dumps and stacks read so far, the inputs taken, and those refused."""

    def __init__(self) -> None:
        self.dumps: list = []
        self.stacks: list = []
        self.consumed: list[str] = []
        self.skipped: list[tuple[str, str]] = []

    def add(self, name: str, read) -> None:
        self.consumed.append(name)  # taken even when refused: it is not a log
        try:
            read()
        except InputError as error:
            self.skipped.append((name, error.message))
        except _MALFORMED as error:  # a side file never stops the diagnosis of the logs beside it
            self.skipped.append((name, f"{name}: malformed, not read ({type(error).__name__})"))

    def report(self, world_size: int | None) -> DumpReport:
        flight = _analysed(lambda: analyze_flight_recorder(self.dumps, world_size), self.dumps, "flight-recorder dumps", self)
        stacks = _analysed(lambda: group_stacks(self.stacks), self.stacks, "stack dumps", self)
        return _report(flight, stacks, tuple(self.consumed), tuple(self.skipped), world_size)


# what reading or analysing a malformed side file may raise; each becomes a skip with a reason
_MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError,
              MemoryError, UnicodeError, ZeroDivisionError)


def _analysed(analyse, items, what: str, taken: _Taken):
    if not items:
        return None
    try:
        return analyse()
    except _MALFORMED as error:
        for source in sorted({getattr(item, "source", "") for item in items}):
            taken.skipped.append((source, f"{what} could not be compared ({type(error).__name__}); left out"))
        return None


def _dump_from_bytes(name: str, data: bytes, max_bytes: int):
    if len(data) > max_bytes:
        raise InputError(f"{name}: flight-recorder dump of {len(data)} bytes is over the "
                         f"{max_bytes}-byte limit", "raise max_bytes if the file is genuine")
    return parse_dump(data, name, rank_from_name(name))


def _stacks_from_bytes(name: str, data: bytes):
    stacks = parse_stack_text(data.decode("utf-8", "replace"), name, rank_from_name(name))
    if not stacks:
        raise InputError(f"{name}: no stack found", "pass py-spy dump or faulthandler output")
    return stacks


def _report(flight: FlightRecorderResult | None, stacks: StackResult | None,
            consumed, skipped, world_size: int | None) -> DumpReport:
    by_fr = flight.named_ranks if flight else ()
    by_stacks = stacks.odd_ranks if stacks else ()
    named_by = tuple(name for name, ranks in (("flight recorder", by_fr),
                                              ("stack dumps", by_stacks)) if ranks)
    explanation = list(flight.explanation) if flight else []
    explanation += list(stacks.explanation) if stacks else []
    explanation += _joined(by_fr, by_stacks, flight)
    explanation += _missing_evidence(flight, stacks, world_size)
    explanation += [f"{os.path.basename(path)}: {reason}" for path, reason in skipped]
    return DumpReport(flight_recorder=flight, stacks=stacks, consumed=consumed, skipped=skipped,
                      named_ranks=tuple(sorted(set(by_fr) | set(by_stacks))),
                      named_by=named_by, explanation=tuple(explanation))


def _joined(by_fr, by_stacks, flight) -> list[str]:
    if not (by_fr and by_stacks):
        return []
    if set(by_fr) == set(by_stacks):
        return [f"The flight recorder and the stack dumps both point at {format_ranks(by_fr)}."]
    return [f"The flight recorder names {format_ranks(by_fr)} but the stack dumps single out "
            f"{format_ranks(by_stacks)}: the dumps and stacks may come from different moments."]


def _missing_evidence(flight, stacks, world_size) -> list[str]:
    lines = []
    if flight is None:
        lines.append("No flight-recorder dump: set TORCH_FR_BUFFER_SIZE (or "
                     "TORCH_NCCL_TRACE_BUFFER_SIZE) and TORCH_NCCL_DUMP_ON_TIMEOUT=1 to get one.")
    expected = set(range(world_size)) if world_size else set()
    if flight:
        expected |= {position.rank for position in flight.positions} | set(flight.missing_dumps)
    if stacks and expected:
        covered = {rank for group in stacks.groups for rank in group.ranks}
        absent = sorted(expected - covered)
        if absent:
            lines.append(f"No stack dump from {format_ranks(absent)}: the grouping cannot say "
                         "where it is.")
    return lines
