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
from .identity import gpu_key, pid_key
from .ids import PEER_CRASH

# How a rank ended, strongest evidence first: a rank with its own error "failed", and one that timed
# out waiting "timed out", even if its launcher later killed it or the watchdog aborted it.
ENDINGS = ("failed", "timed out", "lost a peer", "killed", "crashed", "gone", "interrupted", "stopped", "silent", "unknown")
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
    ranks |= {stream.rank for stream in facts.activity if stream.rank is not None and not stream.unprefixed}
    world = facts.identity.world
    if world is not None and world.size <= MAX_TABLE_RANKS and (not ranks or max(ranks) < world.size):
        ranks |= set(range(world.size))
    return sorted(ranks)


def build_rows(facts) -> dict[int, _Row]:
    rows = {rank: _Row(rank) for rank in job_ranks(facts)}
    if not rows:
        return rows
    for match in facts.winners:
        rank = match.line.origin.rank
        row = rows.get(rank)
        if row is None:
            continue
        if match.role != "collateral" and (row.first_error is None or time_key(match) < time_key(row.first_error)):
            row.first_error = match
        ending = _ending_of(match)
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
        if ending and _ends_more(row, ending, match):
            row.ended, row.ended_match = ending, match
    for rank, match in _gone_from_snapshot(facts, rows).items():
        if _ends_more(rows[rank], "gone", match):
            rows[rank].ended, rows[rank].ended_match = "gone", match
    for stream in facts.activity:
        row = rows.get(stream.rank)
        if row is None or stream.unprefixed:
            continue
        progress = stream.last_progress or (stream.progress[-1] if stream.progress else None)
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


def _later(line, than) -> bool:
    if line.time is not None and than.time is not None:
        return line.time > than.time
    return line.line > than.line


def _ends_more(row: _Row, ending: str, match: Match) -> bool:
    if row.ended_match is None or _stronger(ending, row.ended):
        return True
    return ending == row.ended and time_key(match) < time_key(row.ended_match)


def _ending_of(match: Match) -> str | None:
    """How a failure line says its rank ended."""
    if match.role == "collateral":
        if match.entry_id == PEER_CRASH or match.signature.core_class == PEER_CRASH:
            return "lost a peer" if is_disconnect(match) else "timed out"
        return None
    return "failed"


def _launcher_ending(match: Match) -> str | None:
    if match.signature.name not in LAUNCHER_FAILED:
        return None
    code = str(match.captures.get("code") or "")
    signal = str(match.captures.get("signal") or "")
    if code in STOPPED_CODES or signal == "SIGTERM":
        return "stopped"
    if code in KILLED_CODES or signal in ("SIGKILL", "Killed"):
        return "killed"
    if signal or code.startswith("-"):
        return "crashed"
    return None


def _collective(match: Match, frames) -> str | None:
    op = op_for(match, frames)
    seq = match.captures.get("seq")
    if op and seq:
        return f"{op.upper()} SeqNum={seq}"
    return op.upper() if op else (f"SeqNum={seq}" if seq else None)


def _gone_from_snapshot(facts, rows: dict) -> dict[int, Match]:
    """A GPU snapshot (nvidia-smi's process table) that shows the processes of all ranks but
    one: that rank's process was gone when it was taken."""
    processes = [m for m in facts.matches if m.signature.name == DEVICE_PROCESS]
    if not processes:
        return {}
    alive = {}
    for match in processes:
        host = match.line.origin.host
        named = (facts.identity.rank_of(pid_key(int(match.captures["pid"]), host))
                 or facts.identity.rank_of(gpu_key(int(match.captures["device"]), host)))
        if named is not None:
            alive[named.value] = match
    missing = [rank for rank in rows if rank not in alive]
    if len(missing) != 1 or len(alive) < 1 or len(alive) + 1 != len(rows):
        return {}
    return {missing[0]: processes[0]}


def rank_rows(facts, rows: dict[int, _Row]) -> tuple[RankRow, ...]:
    """The table as the reports show it."""
    table = []
    for rank in sorted(rows):
        row = rows[rank]
        host = facts.identity.host_of(rank, len(rows))
        ended = row.ended_match
        progress = row.progress[0] if row.progress else None
        table.append(RankRow(
            rank=rank, host=host.value if host else None, ended=row.ended,
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
