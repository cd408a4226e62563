"""Frozen values passed between the pipeline stages. No I/O here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("root", "symptom", "collateral")


@dataclass(frozen=True)
class Signature:
    """One compiled-from-data message pattern of an entry."""

    entry_id: str
    name: str
    role: str
    weight: float
    pattern: str
    message: str = ""
    examples: tuple[str, ...] = ()
    near_misses: tuple[str, ...] = ()
    core_class: str = ""  # the entry's core failure class, when the entry specialises one
    condition: str = ""  # numeric test over the captures (firstfault.match.conditions)
    first_only: bool = False  # only its first hit in each file is kept (context saying what ran)

    @property
    def key(self) -> str:
        return f"{self.entry_id}/{self.name}"


@dataclass(frozen=True)
class Entry:
    """A knowledge-base entry. `data` keeps every documented field for the renderers."""

    id: str
    title: str
    category: str
    severity: str
    status: str
    signatures: tuple[Signature, ...]
    data: dict = field(compare=False, hash=False, repr=False)
    path: str = ""

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass(frozen=True)
class Origin:
    """Where a line came from and who wrote it."""

    source: str
    line: int
    rank: int | None = None
    host: str | None = None
    time: float | None = None  # POSIX seconds, None when the line carries none
    time_inherited: bool = False  # True when the time was carried forward from an earlier line


@dataclass(frozen=True)
class LogLine:
    """One masked line of input with its attribution."""

    text: str
    origin: Origin


@dataclass(frozen=True)
class Match:
    """A signature hit on one line, with the values it captured."""

    signature: Signature
    line: LogLine
    captures: dict = field(default_factory=dict, compare=False, hash=False)
    order: int = 0  # global input order, the tie-break when times are missing

    @property
    def entry_id(self) -> str:
        return self.signature.entry_id

    @property
    def role(self) -> str:
        return self.signature.role


@dataclass(frozen=True)
class Skipped:
    """An input (or part of one) that could not be read, and why."""

    source: str
    reason: str


@dataclass(frozen=True)
class Evidence:
    source: str
    line: int
    rank: int | None
    host: str | None
    time: float | None
    text: str
    failure_id: str = ""
    signature: str = ""
    role: str = ""


@dataclass(frozen=True)
class Finding:
    """One failure the engine considered, with its evidence. `failure_id` is the knowledge-base
    entry that explains it (its fix is shown); `failure_class` the core class that entry
    specialises, when it is not one itself (grad-norm-nonfinite is a loss-nan)."""

    failure_id: str
    confidence: float
    evidence: tuple[Evidence, ...] = ()
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    count: int = 0
    message: str = ""
    failure_class: str = ""

    @property
    def class_id(self) -> str:
        """The core failure class: what the contract reports as `failure_id`."""
        return self.failure_class or self.failure_id


@dataclass(frozen=True)
class InputSummary:
    files: tuple[str, ...] = ()
    lines: int = 0
    bytes: int = 0
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    timed: bool = True  # False when cross-file order had to fall back to file order


@dataclass(frozen=True)
class StackSeen:
    """A launcher, framework or scheduler the logs show (firstfault.stack), and where."""

    id: str
    name: str
    source: str
    line: int | None = None  # None when the file's path showed it


@dataclass(frozen=True)
class Because:
    """One step of the reasoning: which rule decided what, and the lines it used."""

    rule: str  # a stable rule id (firstfault.correlate.rules)
    text: str  # one short sentence
    evidence: tuple[tuple[str, int], ...] = ()  # (source, line) pairs


@dataclass(frozen=True)
class Diagnosis:
    status: str  # failure | healthy | unknown
    primary: Finding | None
    initiating: Evidence | None
    collateral: tuple[Finding, ...]
    candidates: tuple[Finding, ...]
    inputs: InputSummary
    notes: tuple[str, ...] = ()  # caveats: uncertain order, how the rank was named
    error_lines: tuple[Evidence, ...] = ()  # for `unknown`: the most likely error lines
    fix_values: dict = field(default_factory=dict)  # placeholders filled from the log
    because: tuple[Because, ...] = ()  # the reasoning, in order
    action: str | None = None  # restart | exclude-host-and-restart | fix-and-rerun; None when healthy
    action_detail: dict = field(default_factory=dict)  # hosts and commands for exclude-host-and-restart
    stack: tuple[StackSeen, ...] = ()  # what the logs show of the software stack (firstfault.stack)
