"""torchrun's failure table: which record it gives as its root cause, and when that says nothing.

torch.distributed.elastic stamps each failed worker with a time in whole seconds: its error
file's time when it wrote one (`@record`), else the time the agent noticed the exit. The table's
`Root Cause (first observed failure)` and the agent's `failed (exitcode: 1) local_rank: 0 ...`
line are the failure with the smallest stamp (`ChildFailedError.get_first_failure`,
`SubprocessContext._poll`: `min(..., key=timestamp)`), and among equal stamps simply the first
rank listed. So when the table lists several workers that failed of their own (not the agent's
SIGTERM) in the same second as its root cause, it does not tell which of them failed first: it
names the lowest rank. Agents before torch 2.2 polled every 5 s, so there every rank that failed
within the same poll ties.

The tables are read once per diagnosis (`Facts.failure_tables`); the questions below read them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model import Match
from .facts import SIGTERM_CODES, Facts
from .identity import TABLE_EXIT_ROW, table_rank_rows
from .ids import PEER_CRASH

ROOT_CAUSE_HEADER = "root-cause-header"
TABLE_START = "child-failed-error"  # `...errors.ChildFailedError:`, the line above the table
ROOT_CAUSE_ROWS = 8  # lines from a failure table's `Root Cause` header to its record's exit-code row, at most
QUOTED_TRACEBACK_LINES = 200  # a record's `traceback :` quote ends this many lines below its exit-code row, at most


@dataclass(frozen=True)
class FailureTable:
    """One table: the exit-code row of its root cause (None when the lines cut it off), and the
    (rank, exit-code row) of each of its records up to it (its `Failures:` above the header, and
    the root cause)."""

    root: Match | None
    records: tuple[tuple[int, Match], ...]

    @property
    def root_rank(self) -> int | None:
        return next((rank for rank, row in self.records if row is self.root), None)

    def failed_in(self, second: int, killed_only: bool = False) -> set[int]:
        """The ranks of the records that did not exit by SIGTERM (`killed_only`: that a signal
        killed) and carry that second."""
        return {rank for rank, row in self.records if _failed_of_its_own(row.captures.get("exitcode"), killed_only)
                and row.line.origin.time is not None and int(row.line.origin.time) == second}


def read_tables(matches: tuple[Match, ...]) -> tuple[FailureTable, ...]:
    """Every failure table the logs show (one per `Root Cause` header), in (source, line) order."""
    headers = sorted((m.line.origin for m in matches if m.signature.name == ROOT_CAUSE_HEADER),
                     key=lambda origin: (origin.source, origin.line))
    exit_rows = [m for m in matches if m.signature.name == TABLE_EXIT_ROW]
    ranks = table_rank_rows(list(matches), TABLE_EXIT_ROW)
    tables = []
    for header in headers:
        below = [m for m in exit_rows if m.line.origin.source == header.source
                 and 0 < m.line.origin.line - header.line <= ROOT_CAUSE_ROWS]
        if not below:
            tables.append(FailureTable(None, ()))
            continue
        root = min(below, key=lambda m: m.line.origin.line)
        start = max((m.line.origin.line for m in matches
                     if m.signature.name in (ROOT_CAUSE_HEADER, TABLE_START) and m.line.origin.source == header.source
                     and m.line.origin.line < header.line), default=0)
        records = tuple((ranks[where], m) for m in exit_rows
                        if m.line.origin.source == header.source and start < m.line.origin.line <= root.line.origin.line
                        and (where := (m.line.origin.source, m.line.origin.line)) in ranks)
        tables.append(FailureTable(root, records))
    return tuple(tables)


def root_cause_row(facts: Facts) -> Match | None:
    """The exit-code row of the last table's root cause, tied or not (not the launcher's own SIGTERM)."""
    root = facts.failure_tables[-1].root if facts.failure_tables else None
    return root if root is not None and root.captures.get("exitcode") not in SIGTERM_CODES else None


def table_root_cause(facts: Facts) -> Match | None:
    """The exit-code row of the record under the last `Root Cause (first observed failure):` header
    of torchrun's failure table, when that process did not exit by the launcher's own SIGTERM and
    no table (another node's agent prints its own) lists another failure of the first second (then
    it is only the lowest rank)."""
    root = root_cause_row(facts)
    if root is None:
        return None
    return None if facts.failure_tables[-1].root_rank in first_failure_ties(facts) else root


def first_failure_ties(facts: Facts, killed_only: bool = False) -> frozenset[int]:
    """The ranks the failure tables list as failing of their own in the second of the first root
    cause, when there are several: the launchers' first failure is one of them, no telling which.
    Every table counts: each agent of a multi-node job prints its own, and a failure on another
    node in the same second ties as well (host clocks differ by more than the stamps tell apart).
    `killed_only`: among the processes a signal killed (torchrun's -N), for a failure known to
    kill its process (the others' ordinary exits are then their loss of it)."""
    roots = [table.root.line.origin.time for table in facts.failure_tables
             if table.root is not None and table.root.captures.get("exitcode") not in SIGTERM_CODES
             and table.root.line.origin.time is not None]
    if not roots:
        return frozenset()
    first = int(min(roots))
    tied = {rank for table in facts.failure_tables for rank in table.failed_in(first, killed_only)}
    return frozenset(_unless_one_did_not_only_lose_a_peer(facts, tied)) if len(tied) > 1 else frozenset()


def _records_by_source(facts: Facts) -> dict[str, tuple[list, list[int]]]:
    """source -> (its records' (rank, exit-code row) in line order, its `Root Cause` header lines)."""
    by_source: dict[str, tuple[list, list[int]]] = {}
    for table in facts.failure_tables:
        for rank, row in table.records:
            by_source.setdefault(row.line.origin.source, ([], []))[0].append((rank, row))
    for match in facts.matches:
        if match.signature.name == ROOT_CAUSE_HEADER and match.line.origin.source in by_source:
            by_source[match.line.origin.source][1].append(match.line.origin.line)
    for rows, _headers in by_source.values():
        rows.sort(key=lambda item: item[1].line.origin.line)
    return by_source


def quoting_record(facts: Facts, match: Match, records: dict | None = None) -> tuple[int, Match] | None:
    """(rank, exit-code row) of the failure-table record whose `traceback :` quotes `match`: an
    indented line below that record's exit-code row and above the next record's. With `@record`
    on the entry point, each record quotes its worker's own traceback (its error file), so the line
    is that rank's even where the rank's own lines are gone (the end of a log a thread quotes).
    `records`: `_records_by_source(facts)`, when several lines are asked about."""
    origin = match.line.origin
    if not match.line.text[:1].isspace():
        return None  # (the table's fields and its quotes are indented; a line after the table is not)
    rows, headers = (records if records is not None else _records_by_source(facts)).get(origin.source, ([], []))
    above = [(rank, row) for rank, row in rows if 0 < origin.line - row.line.origin.line <= QUOTED_TRACEBACK_LINES]
    if not above:
        return None
    rank, row = above[-1]
    if any(row.line.origin.line < header < origin.line for header in headers):
        return None  # (the root cause's record begins between them: the line is not this record's)
    return rank, row


def tie_note(facts: Facts) -> str:
    """What a report says when a failure table's first failure is a tie ('' when it is not)."""
    tied = first_failure_ties(facts)
    if len(tied) < 2:
        return ""
    ranks = ", ".join(map(str, sorted(tied)))
    return (f"which rank failed first cannot be told from torchrun's failure table: it lists ranks {ranks} failing "
            "in the same second, and among failures of one second its 'first observed failure' is only the lowest "
            "rank (each rank's own log, or error files from @record on the entry point, tell the order)")


def _unless_one_did_not_only_lose_a_peer(facts: Facts, ranks: set[int]) -> set[int]:
    """Tied ranks whose own lines (or their failure-table records' quotes) say they lost a peer did
    not start it: when that leaves one, it is the first, and only the others stay tied."""
    lost = [m for m in facts.collateral if m.entry_id == PEER_CRASH]
    lost_a_peer = {m.line.origin.rank for m in lost}
    # (or its record in a failure table quotes the loss: its error file, where its own lines are cut)
    unranked = [m for m in lost if m.line.origin.rank is None and m.line.text[:1].isspace()]
    if unranked:
        records = _records_by_source(facts)
        lost_a_peer |= {quoted[0] for m in unranked if (quoted := quoting_record(facts, m, records))}
    left = ranks - lost_a_peer
    return ranks - left if len(left) == 1 else ranks


def _failed_of_its_own(code: str | None, killed_only: bool) -> bool:
    return code not in SIGTERM_CODES and (not killed_only or str(code).startswith("-"))
