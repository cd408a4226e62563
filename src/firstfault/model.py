"""Frozen values passed between the pipeline stages. No I/O here."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
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
    # a wider pattern the fast engine looks for in its place, for speed: every line `pattern`
    # matches must match it too (its examples are checked against it); `pattern` still decides
    prefilter: str = ""
    # frame patterns the exception's traceback must show, each matched by one of its frames
    # (correlate/raised_in.py): a line of the signature raised elsewhere does not count
    raised_in: tuple[str, ...] = ()

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
    local_rank: int | None = None  # the local rank its prefix names, when it names one
    rank_from: str | None = None  # how the logs tie `rank` to this line (correlate.ranks.RANK_FROM)
    host_from: str | None = None  # how the logs tie `host` to this line (correlate.ranks.HOST_FROM)


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
    rank_from: str | None = None  # how the logs tie `rank` to the line (see Origin)
    host_from: str | None = None  # how the logs tie `host` to the line (see Origin)


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
    read_notes: tuple[Skipped, ...] = ()  # inputs read whole, with a caveat (bytes that were not UTF-8, replaced)
    timed: bool = True  # False when cross-file order had to fall back to file order
    first_time: float | None = None  # the earliest and latest times the logs' lines carry (None: no times)
    last_time: float | None = None
    spans: tuple[tuple[str, float, float], ...] = ()  # (file, its first time, its last time) of each timed file
    # (file, the line of its first worker line a launcher prefixed) of each console torchrun's prefixes show in
    # (when the scan could place it)
    launched: tuple[tuple[str, int], ...] = ()


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
class RankRow:
    """What one rank did last, as the logs show it (correlate/rank_table.py): the table an expert
    builds by hand. Every field is None where the logs do not say."""

    rank: int
    host: str | None = None
    ended: str = "unknown"  # how it ended: one of rank_table.ENDINGS
    ended_at: float | None = None
    ended_line: tuple[str, int] | None = None  # (source, line) that shows how it ended
    last_progress: str | None = None  # its last progress line (step, loss), as printed
    last_step: int | None = None
    last_progress_at: float | None = None
    collective: str | None = None  # the collective it was in when it stopped ("ALLREDUCE SeqNum=4121")
    first_error: str | None = None  # the entry id of its own first error, if it had one
    first_error_line: tuple[str, int] | None = None


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
    ranks: tuple[RankRow, ...] = ()  # what each rank did last (the rank table)
    world_size: int | None = None  # the job's size, where the logs declare it
    went_past: tuple[Finding, ...] = ()  # errors the run went on past: neither the cause nor its consequences


# Fields that name things of firstfault's own (knowledge-base ids, roles): never log text.
OWN_FIELDS = frozenset({"status", "failure_id", "failure_class", "signature", "role", "kind", "entry_id", "action", "rule", "id"})


def map_strings(value, change, skip=OWN_FIELDS):
    """`value` with `change(text)` applied to every string inside it: the fields of frozen
    dataclasses (but those named in `skip`), tuples, lists and dict values. The one walk behind
    masking a whole diagnosis or alert and making its log text safe to print. What `change`
    leaves equal is kept as it was (a rank table of thousands of rows is rebuilt only where a
    string changed)."""
    if isinstance(value, str):
        new = change(value)
        return value if new == value else new
    if isinstance(value, (tuple, list)):
        items = [map_strings(item, change, skip) for item in value]
        return value if all(new is old for new, old in zip(items, value)) else type(value)(items)
    if isinstance(value, dict):
        return {key: map_strings(item, change, skip) for key, item in value.items()}
    names = _init_fields(type(value))
    if not names:
        return value
    changes = {}
    for name in names:
        if name not in skip:
            old = getattr(value, name)
            new = map_strings(old, change, skip)
            if new is not old:
                changes[name] = new
    return replace(value, **changes) if changes else value


_INIT_FIELDS: dict[type, tuple[str, ...]] = {}


def _init_fields(kind: type) -> tuple[str, ...]:
    """The names of a dataclass type's init fields (none for other types), found once per type."""
    names = _INIT_FIELDS.get(kind)
    if names is None:
        names = _INIT_FIELDS[kind] = tuple(item.name for item in fields(kind) if item.init) if is_dataclass(kind) else ()
    return names
