"""Frozen results of the dump analyses. No I/O here."""
from __future__ import annotations

from dataclasses import dataclass

FLIGHT_RECORDER = "flight recorder"
STACK_DUMPS = "stack dumps"


@dataclass(frozen=True)
class Frame:
    """One Python (or symbolized C++) frame; `line` is 0 when the source gives none."""

    function: str
    file: str
    line: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.function} ({where})"


@dataclass(frozen=True)
class Collective:
    """The collective where ranks first disagree."""

    pg_id: str
    pg_name: str
    pg_desc: str
    seq_id: int
    op: str  # profiling name, e.g. "nccl:all_reduce"
    is_p2p: bool = False

    def __str__(self) -> str:
        kind = "p2p seq" if self.is_p2p else "seq"
        group = self.pg_desc or self.pg_name or self.pg_id
        return f"{self.op} {kind} {self.seq_id} in process group {self.pg_id} ({group})"


@dataclass(frozen=True)
class Mismatch:
    """One field on which the ranks' entries for the same collective differ."""

    field: str  # "op", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes"
    values: tuple[tuple[str, tuple[int, ...]], ...]  # (value, ranks holding it), commonest first
    odd_ranks: tuple[int, ...]


@dataclass(frozen=True)
class RankPosition:
    """Where a rank's flight recorder leaves it: its last entry in the group examined."""

    rank: int
    seq_id: int | None
    op: str
    state: str  # "completed", "started", "scheduled", "absent"
    frames: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class FlightRecorderResult:
    """Cross-rank reading of flight-recorder dumps."""

    collective: Collective | None
    silent_ranks: tuple[int, ...]  # never entered the collective
    stuck_ranks: tuple[int, ...]  # entered it and never completed while others did
    waiting_ranks: tuple[int, ...]  # entered it and wait for the others: collateral
    mismatch: tuple[Mismatch, ...]
    missing_dumps: tuple[int, ...]  # ranks expected (pg size, world size) with no dump
    suspected_ranks: tuple[int, ...]  # missing dumps that the others' waiting points at
    positions: tuple[RankPosition, ...]
    explanation: tuple[str, ...]
    sources: tuple[str, ...]
    named_by: str = FLIGHT_RECORDER

    @property
    def named_ranks(self) -> tuple[int, ...]:
        odd = {rank for item in self.mismatch for rank in item.odd_ranks}
        named = set(self.silent_ranks) | set(self.stuck_ranks) | odd
        return tuple(sorted(named or set(self.suspected_ranks)))


@dataclass(frozen=True)
class StackGroup:
    """Ranks whose main-thread stacks are the same once normalized."""

    ranks: tuple[int, ...]
    frames: tuple[Frame, ...]  # innermost first, from the first rank of the group
    in_collective: bool

    @property
    def location(self) -> str:
        return str(self.frames[0]) if self.frames else "an empty stack"


@dataclass(frozen=True)
class StackResult:
    """Ranks grouped by stack; the odd ones out named when the grouping allows it."""

    groups: tuple[StackGroup, ...]  # largest first
    odd_ranks: tuple[int, ...]
    explanation: tuple[str, ...]
    sources: tuple[str, ...]
    named_by: str = STACK_DUMPS


@dataclass(frozen=True)
class DumpReport:
    """What analyze_files found: both analyses, the files it took, the ranks it names."""

    flight_recorder: FlightRecorderResult | None
    stacks: StackResult | None
    consumed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (path, one-line reason)
    named_ranks: tuple[int, ...]
    named_by: tuple[str, ...]  # which evidence named them
    explanation: tuple[str, ...]
