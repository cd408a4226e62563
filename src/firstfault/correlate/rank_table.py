"""What each rank did last: one row per rank of the job, derived once from the identity map and
the matches. The hang and rank rules decide from it, and the reports show it.

A row says how the rank ended (ENDINGS, strongest first: its own error, a kill or fatal signal,
a wait that timed out, a lost peer, its process gone from a GPU snapshot, an interrupt, a stop
its launcher sent, or only silence), when, from which line; its last progress line and step; the
collective it was in; its own first error.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..match.context import DEVICE_PROCESS, HANG_STACK_MARKER, JOB_INTERRUPTED, LAUNCHER_FAILED
from ..match.progress_lines import counter_of
from ..model import Match, RankRow
from .events import time_key
from .hangs import is_disconnect, op_for
from .identity import TABLE_RANK_ROW, gpu_key, pid_key
from .ids import CLOSING_SIGNAL, PEER_CRASH

# How a rank ended, strongest evidence first: a rank with its own error "failed", and one that timed
# out waiting "timed out", even if its launcher later killed it or the watchdog aborted it.
ENDINGS = ("failed", "timed out", "lost a peer", "killed", "crashed", "gone", "interrupted", "stopped", "running",
           "silent", "unknown")
WAITING = ("timed out", "lost a peer")  # it ended waiting for another rank
STOPPED_CODES = ("-15", "15", "143")
KILLED_CODES = ("-9", "9", "137")
MAX_TABLE_RANKS = 4096  # a declared size above this is not a job's size


@dataclass
class _Row:
    rank: int
    ended: str = "unknown"
    ended_match: Match | None = None
    first_error: Match | None = None
    collective: str | None = None
    progress: tuple | None = None  # (StreamLine, source)
    last_seen: tuple | None = None  # (StreamLine, source)
    flags: set = field(default_factory=set)


def _stronger(ending: str, than: str) -> bool:
    return ENDINGS.index(ending) < ENDINGS.index(than)


def job_ranks(facts) -> list[int]:
    """Every rank the job has, as far as the logs show: ranks seen, ranks the identity map knows,
    and 0..N-1 where the job's size N is declared."""
    ranks = set(facts.inputs.ranks) | set(facts.identity.ranks)
    ranks |= {stream.rank for stream in facts.activity if stream.rank is not None}
    if ranks:
        ranks.add(0)  # every job has a rank 0, whether or not it printed
    world = facts.identity.world
    if world is not None and world.size <= MAX_TABLE_RANKS and (not ranks or max(ranks) < world.size):
        ranks |= set(range(world.size))
    return sorted(ranks)


def ranks_seen(facts) -> set[int]:
    """The ranks whose lines the logs hold: those of the activity streams (a Ray worker's through
    its pid); the ranks the input shows when no stream has a rank (a console whose only prefixed
    lines are the ranks' errors)."""
    streams = {stream.rank for stream in facts.activity if stream.rank is not None}
    return streams or set(facts.inputs.ranks)


def size_declared(facts) -> bool:
    """Whether the logs declare the job's size and it is the ranks the table has (every rank is in
    view, so one not accounted for is the only one left)."""
    return facts.identity.world is not None and facts.identity.world.size == len(facts.rows)


def build_rows(facts) -> dict[int, _Row]:
    rows = {rank: _Row(rank) for rank in job_ranks(facts)}
    if not rows:
        return rows
    waits = _first_waits(facts.winners)
    for match in facts.winners:
        rank = match.line.origin.rank
        row = rows.get(rank)
        if row is None:
            continue
        own = match.role != "collateral" and not _after_own_wait(match, waits.get(rank))
        if own and (row.first_error is None or time_key(match) < time_key(row.first_error)):
            row.first_error = match
        ending = _ending_of(match) if own or match.role == "collateral" else None
        if ending and _ends_more(row, ending, match):
            row.ended, row.ended_match = ending, match
            if ending in WAITING:
                row.collective = _collective(match, facts.frames) or row.collective
    for match in facts.matches:
        rank = match.line.origin.rank
        row = rows.get(rank)
        if row is None:
            continue
        ending = _launcher_ending(match) or ("interrupted" if match.signature.name in (JOB_INTERRUPTED, HANG_STACK_MARKER)
                                             and "KeyboardInterrupt" in match.line.text else None)
        if ending and not _exit_of_its_wait(row, ending) and _ends_more(row, ending, match):
            row.ended, row.ended_match = ending, match
    for match, rank in _reported_by_pid(facts):
        row = rows.get(rank)
        ending = _exit_ending(str(match.captures.get("exitcode") or ""), str(match.captures.get("signal") or ""))
        if row is None or not ending:
            continue
        if ending and not _exit_of_its_wait(row, ending) and _ends_more(row, ending, match):
            row.ended, row.ended_match = ending, match
    alive = _in_snapshot(facts)
    gone = _gone_from_snapshot(facts, rows, alive)
    for rank, match in [*((rank, match) for rank, match in alive.items() if rank not in gone), *gone.items()]:
        ending = "gone" if rank in gone else "running"
        if rank in rows and _ends_more(rows[rank], ending, match):
            rows[rank].ended, rows[rank].ended_match = ending, match
    for stream in facts.activity:
        row = rows.get(stream.rank)
        if row is None:
            continue  # (a console's unlabelled lines have no rank: the launcher's, the scheduler's)
        progress = stream.progress[-1] if stream.progress else None  # (the scanner kept its last progress lines)
        if progress is not None and (row.progress is None or _later(progress, row.progress[0])):
            row.progress = (progress, stream.source)
        if stream.last is not None and (row.last_seen is None or _later(stream.last, row.last_seen[0])):
            row.last_seen = (stream.last, stream.source)
    for row in rows.values():
        if row.first_error is not None and row.ended not in ("failed",) and row.ended_match is None:
            row.ended, row.ended_match = "failed", row.first_error
        if row.ended == "unknown" and row.last_seen is not None:
            row.ended = "silent"
    return rows


def _exit_of_its_wait(row: _Row, ending: str) -> bool:
    """An exit code reported for a rank that ended waiting is the exit of the exception its wait
    raised: it still ended waiting."""
    return ending == "failed" and row.ended in WAITING


def _first_waits(winners) -> dict[int, Match]:
    """rank -> its first line of waiting for another rank (a timeout, a lost peer)."""
    waits: dict[int, Match] = {}
    for match in winners:
        rank = match.line.origin.rank
        if rank is not None and _ending_of(match) in WAITING and (rank not in waits or match.order < waits[rank].order):
            waits[rank] = match
    return waits


def _after_own_wait(match: Match, wait: Match | None) -> bool:
    """An error a rank printed after its own wait ended (the watchdog's abort) is that wait's
    teardown, not an error of its own."""
    if wait is None:
        return False
    if match.line.origin.source == wait.line.origin.source:
        return match.line.origin.line > wait.line.origin.line
    return time_key(match) > time_key(wait)


def _later(line, than) -> bool:
    if line.time is not None and than.time is not None:
        return line.time > than.time
    return line.line > than.line


def _ends_more(row: _Row, ending: str, match: Match) -> bool:
    if row.ended_match is None or _stronger(ending, row.ended):
        return True
    return ending == row.ended and time_key(match) < time_key(row.ended_match)


def _ending_of(match: Match) -> str | None:
    """How a failure line says its rank ended (a failure table's rank row only says which rank an
    entry is about: its exit code row says how)."""
    if match.signature.name == TABLE_RANK_ROW:
        return None
    if match.role == "collateral":
        if match.entry_id == PEER_CRASH or match.signature.core_class == PEER_CRASH:
            return "lost a peer" if is_disconnect(match) else "timed out"
        return None
    return "failed"


# lines that name a process by its pid and say how it ended: torchrun's failure-table exit code
# row, its `Sending process P closing signal SIGTERM` to the others
_PID_REPORTS = ("root-cause-exitcode-row", CLOSING_SIGNAL)


def _reported_by_pid(facts) -> list[tuple[Match, int]]:
    """(line, rank) for every line that says how a process the identity map knows ended."""
    reported = []
    for match in facts.matches:
        if match.signature.name in _PID_REPORTS and str(match.captures.get("pid", "")).isdigit():
            named = facts.identity.rank_of(pid_key(int(match.captures["pid"]), match.line.origin.host))
            if named is not None:
                reported.append((match, named.value))
    return reported


def _launcher_ending(match: Match) -> str | None:
    if match.signature.name not in LAUNCHER_FAILED:
        return None
    return _exit_ending(str(match.captures.get("code") or ""), str(match.captures.get("signal") or ""))


def _exit_ending(code: str, signal: str) -> str | None:
    """How an exit code or signal says a process ended (a positive code: it raised and exited)."""
    if code in STOPPED_CODES or signal == "SIGTERM":
        return "stopped"
    if code in KILLED_CODES or signal in ("SIGKILL", "Killed"):
        return "killed"
    if signal or code.startswith("-"):
        return "crashed"
    return "failed" if code.isdigit() and code != "0" else None


def _collective(match: Match, frames) -> str | None:
    op = op_for(match, frames)
    seq = match.captures.get("seq")
    if op and seq:
        return f"{op.upper()} SeqNum={seq}"
    return op.upper() if op else (f"SeqNum={seq}" if seq else None)


def _in_snapshot(facts) -> dict[int, Match]:
    """The ranks whose process a GPU snapshot (nvidia-smi's process table) shows, with its row."""
    alive = {}
    for match in facts.matches:
        if match.signature.name != DEVICE_PROCESS:
            continue
        host = match.line.origin.host
        named = (facts.identity.rank_of(pid_key(int(match.captures["pid"]), host))
                 or facts.identity.rank_of(gpu_key(int(match.captures["device"]), host)))
        if named is not None:
            alive.setdefault(named.value, match)
    return alive


def _gone_from_snapshot(facts, rows: dict, alive: dict) -> dict[int, Match]:
    """A GPU snapshot that shows the processes of all ranks but one: that rank's process was gone
    when it was taken."""
    missing = [rank for rank in rows if rank not in alive]
    if len(missing) != 1 or not alive or len(alive) + 1 != len(rows):
        return {}
    return {missing[0]: next(iter(alive.values()))}


def rank_rows(facts, rows: dict[int, _Row], decided: tuple | None = None) -> tuple[RankRow, ...]:
    """The table as the reports show it. `decided`: (rank, line, host) of the first fault when a
    rule tied a line that names no rank to that rank: the table shows it failed there."""
    table = []
    for rank in sorted(rows):
        row = rows[rank]
        if decided is not None and decided[0] == rank and row.first_error is None:
            row = _Row(rank, "failed", decided[1], decided[1], row.collective, row.progress, row.last_seen)
        placed = facts.identity.host_of(rank, len(rows))
        host = (placed.value if placed else (decided[2] if decided is not None and decided[0] == rank else None)
                or facts.identity.sole_host(facts.inputs.hosts, rank))
        ended = row.ended_match
        progress = row.progress[0] if row.progress else None
        table.append(RankRow(
            rank=rank, host=host, ended=row.ended,
            ended_at=ended.line.origin.time if ended is not None else None,
            ended_line=(ended.line.origin.source, ended.line.origin.line) if ended is not None else None,
            last_progress=progress.text.strip()[:200] if progress else None,
            last_step=counter_of(progress.text) if progress else None,
            last_progress_at=progress.time if progress else None,
            collective=row.collective,
            first_error=row.first_error.entry_id if row.first_error is not None else None,
            first_error_line=((row.first_error.line.origin.source, row.first_error.line.origin.line)
                              if row.first_error is not None else None)))
    return tuple(table)


def ranks_ending(rows: dict[int, _Row], endings) -> set[int]:
    return {rank for rank, row in rows.items() if row.ended in endings}
