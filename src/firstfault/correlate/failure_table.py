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
"""
from __future__ import annotations

from ..model import Match
from .facts import SIGTERM_CODES, Facts
from .identity import TABLE_EXIT_ROW, table_rank_rows
from .ids import PEER_CRASH

ROOT_CAUSE_HEADER = "root-cause-header"
TABLE_START = "child-failed-error"  # `...errors.ChildFailedError:`, the line above the table
ROOT_CAUSE_ROWS = 8  # lines from a failure table's `Root Cause` header to its record's exit-code row, at most


def table_root_cause(facts: Facts) -> Match | None:
    """The exit-code row of the record under the last `Root Cause (first observed failure):` header
    of torchrun's failure table, when that process did not exit by the launcher's own SIGTERM and
    the table does not list another failure of the same second (then it is only the lowest rank)."""
    root = root_cause_row(facts)
    if root is None:
        return None
    tied = _same_second(facts, _headers(facts)[-1], root)
    return None if len(tied) > 1 and root_rank(root, facts) in _unless_one_did_not_only_lose_a_peer(facts, tied) else root


def root_cause_row(facts: Facts) -> Match | None:
    """The exit-code row of the last table's root cause, tied or not (not the launcher's own SIGTERM)."""
    headers = _headers(facts)
    root = _root_row(facts, headers[-1]) if headers else None
    return None if root is None or root.captures.get("exitcode") in SIGTERM_CODES else root


def first_failure_ties(facts: Facts, killed_only: bool = False) -> frozenset[int]:
    """The ranks a failure table lists as failing of their own in the same second as its root
    cause, when there are several: the launcher's first failure is one of them, no telling which.
    `killed_only`: among the processes a signal killed (torchrun's -N), for a failure known to
    kill its process (the others' ordinary exits are then their loss of it)."""
    tied: set[int] = set()
    for header in _headers(facts):
        root = _root_row(facts, header)
        if root is None or root.captures.get("exitcode") in SIGTERM_CODES:
            continue
        ranks = _same_second(facts, header, root, killed_only)
        if len(ranks) > 1:
            tied |= _unless_one_did_not_only_lose_a_peer(facts, ranks)
    return frozenset(tied)


def _unless_one_did_not_only_lose_a_peer(facts: Facts, ranks: set[int]) -> set[int]:
    """Tied ranks whose own lines say they lost a peer did not start it: when that leaves one,
    it is the first, and only the others stay tied."""
    lost_a_peer = {m.line.origin.rank for m in facts.collateral if m.entry_id == PEER_CRASH}
    left = ranks - lost_a_peer
    return ranks - left if len(left) == 1 else ranks


def _headers(facts: Facts) -> list:
    return sorted((m.line.origin for m in facts.matches if m.signature.name == ROOT_CAUSE_HEADER),
                  key=lambda origin: (origin.source, origin.line))


def _root_row(facts: Facts, header) -> Match | None:
    rows = [m for m in facts.matches if m.signature.name == TABLE_EXIT_ROW
            and m.line.origin.source == header.source and 0 < m.line.origin.line - header.line <= ROOT_CAUSE_ROWS]
    return min(rows, key=lambda m: m.line.origin.line) if rows else None


def _same_second(facts: Facts, header, root: Match, killed_only: bool = False) -> set[int]:
    """The ranks of the table's records (its `Failures:` above the header, and the root cause)
    that did not exit by SIGTERM (`killed_only`: that a signal killed) and carry the root cause's second."""
    second = root.line.origin.time
    if second is None:
        return set()
    start = max((m.line.origin.line for m in facts.matches
                 if m.signature.name in (ROOT_CAUSE_HEADER, TABLE_START) and m.line.origin.source == header.source
                 and m.line.origin.line < header.line), default=0)
    ranks = table_rank_rows(facts.matches, TABLE_EXIT_ROW)
    rows = [m for m in facts.matches if m.signature.name == TABLE_EXIT_ROW and m.line.origin.source == header.source
            and start < m.line.origin.line <= root.line.origin.line]
    return {ranks[(m.line.origin.source, m.line.origin.line)] for m in rows
            if _failed_of_its_own(m.captures.get("exitcode"), killed_only) and m.line.origin.time is not None
            and int(m.line.origin.time) == int(second) and (m.line.origin.source, m.line.origin.line) in ranks}


def _failed_of_its_own(code: str | None, killed_only: bool) -> bool:
    return code not in SIGTERM_CODES and (not killed_only or str(code).startswith("-"))


def root_rank(row: Match, facts: Facts) -> int | None:
    return table_rank_rows(facts.matches, TABLE_EXIT_ROW).get((row.line.origin.source, row.line.origin.line))


def tie_note(facts: Facts) -> str:
    """What a report says when a failure table's first failure is a tie ('' when it is not)."""
    tied = first_failure_ties(facts)
    if len(tied) < 2:
        return ""
    ranks = ", ".join(map(str, sorted(tied)))
    return (f"which rank failed first cannot be told from torchrun's failure table: it lists ranks {ranks} failing "
            "in the same second, and among failures of one second its 'first observed failure' is only the lowest "
            "rank (each rank's own log, or error files from @record on the entry point, tell the order)")
