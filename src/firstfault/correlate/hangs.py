"""When only timeouts are printed: who never arrived, and why.

Looks at which collective each rank was in when it timed out (traceback frames, NCCL OpType /
SeqNum captures), which ranks timed out, which were only disconnected, and which were silent.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..model import Match

TIMEOUT_ENTRY = "collective-timeout-peer-crash"
BACKWARD_OPS = {"_engine_run_backward", "run_backward", "backward"}
_DISCONNECT_WORDS = ("closed by peer", "reset by peer", "Connection closed", "Broken pipe", "Connection reset")


@dataclass(frozen=True)
class HangVerdict:
    failure_id: str
    rank: int | None
    reason: str
    evidence: Match | None


def _op_for(timeout: Match, frames: list[Match]) -> str | None:
    """The collective the rank was in: its traceback's innermost c10d frame, else the
    OpType the watchdog line names (a gloo send/recv is transport, not a collective)."""
    origin = timeout.line.origin
    before = [frame for frame in frames
              if frame.line.origin.source == origin.source and frame.line.origin.rank == origin.rank
              and 0 <= origin.line - frame.line.origin.line <= 60]
    if before:
        op = before[-1].captures.get("op")
        return "backward" if op in BACKWARD_OPS else op
    op = (timeout.captures.get("op") or "").lower()
    return op if op and op not in ("send", "recv") else None


def is_disconnect(match: Match) -> bool:
    return any(word in match.line.text for word in _DISCONNECT_WORDS)


def analyse(collateral: list[Match], frames: list[Match], ranks: list[int]) -> HangVerdict | None:
    """A verdict for a failure that shows only collective timeouts / disconnects, or None."""
    timeouts = [match for match in collateral if match.entry_id == TIMEOUT_ENTRY and not is_disconnect(match)]
    if not timeouts:
        return None
    first_by_rank: dict[int | None, Match] = {}
    for match in timeouts:
        first_by_rank.setdefault(match.line.origin.rank, match)
    ops = {rank: _op_for(match, frames) for rank, match in first_by_rank.items()}
    known_ops = {rank: op for rank, op in ops.items() if op}
    silent = _silent_by_sequence(timeouts)
    if silent is not None:
        return HangVerdict("collective-timeout-straggler", silent, "its collective sequence number is behind the others'", first_by_rank.get(silent))
    # ranks only disconnected were waiting in a collective too (the one their peers gave up in,
    # had they all called the same): their collective tells which side is the odd one
    disconnects = _first_disconnects(collateral)
    every_op = {**{rank: op for rank, match in disconnects.items() if (op := _op_for(match, frames))}, **known_ops}
    if len(set(every_op.values())) > 1:
        return _different_collectives(every_op, {**disconnects, **first_by_rank})
    timed_out = {rank for rank in first_by_rank if rank is not None}
    disconnected = {match.line.origin.rank for match in collateral if is_disconnect(match)} - timed_out - {None}
    if len(timed_out) == 1 and disconnected:
        rank = next(iter(timed_out))
        op = known_ops.get(rank)
        if op == "barrier":
            return HangVerdict("uneven-batches-hang", rank, f"rank {rank} waited alone in {op} while the others were still training", first_by_rank[rank])
    # rank 0 exists in every job: when the other ranks printed timeouts and it printed nothing
    # that carries its rank (rank 0 often logs unprefixed progress: tokenizing, evaluating), it is missing
    expected = sorted(set(ranks) | ({0} if len(timed_out | disconnected) >= 2 else set()))
    missing = [rank for rank in expected if rank not in timed_out and rank not in disconnected]
    if len(disconnected) == 1 and not missing:
        # the late rank was busy elsewhere: when it reached the collective its peers had already given up
        rank = next(iter(disconnected))
        return HangVerdict("collective-timeout-straggler", rank, f"rank {rank} reached the collective only after the others had timed out and left", None)
    if len(missing) == 1 and timed_out:
        rank = missing[0]
        return HangVerdict("collective-timeout-straggler", rank, f"rank {rank} never joined the collective the others timed out in", None)
    return HangVerdict("collective-timeout-straggler", None, "every rank timed out in the same collective; the logs do not show who was late", timeouts[0])


def _first_disconnects(collateral: list[Match]) -> dict[int, Match]:
    first: dict[int, Match] = {}
    for match in collateral:
        if match.line.origin.rank is not None and is_disconnect(match):
            first.setdefault(match.line.origin.rank, match)
    return first


def _different_collectives(known_ops: dict, first_by_rank: dict) -> HangVerdict:
    groups: dict[str, list] = defaultdict(list)
    for rank, op in known_ops.items():
        groups[op].append(rank)
    if "barrier" in groups and len(groups) == 2 and any(op in BACKWARD_OPS for op in groups):
        # uneven data: the odd side is the smaller one, and the ranks whose data ran out first
        # (at the epoch-end barrier) on a tie
        early = sorted(groups["barrier"])
        late = sorted(next(members for op, members in groups.items() if op != "barrier"))
        odd = early if len(early) <= len(late) else late
        single = odd[0] if len(odd) == 1 else None
        reason = (f"ranks {early} reached the end-of-epoch barrier while ranks {late} were still in the backward all-reduce"
                  + ("" if odd is early else f": ranks {late} had more batches"))
        return HangVerdict("uneven-batches-hang", single, reason, first_by_rank.get(single))
    counts = Counter({op: len(members) for op, members in groups.items()})
    minority_op, minority_size = counts.most_common()[-1]
    majority_op = counts.most_common(1)[0][0]
    single = groups[minority_op][0] if minority_size == 1 and counts[majority_op] > 1 else None
    described = "; ".join(f"{op}: ranks {sorted(members)}" for op, members in sorted(groups.items()))
    return HangVerdict("collective-mismatch", single, f"ranks were in different collectives ({described})", first_by_rank.get(single) or next(iter(first_by_rank.values())))


def _silent_by_sequence(timeouts: list[Match]) -> int | None:
    """NCCL: the rank whose last enqueued collective is behind the SeqNum the others wait in."""
    waiting: dict[int, int] = {}
    enqueued: dict[int, int] = {}
    for match in timeouts:
        rank = match.line.origin.rank
        if rank is None:
            continue
        if "seq" in match.captures:
            waiting[rank] = max(waiting.get(rank, 0), int(match.captures["seq"]))
        if "enqueued" in match.captures:
            enqueued[rank] = int(match.captures["enqueued"])
    progress = {**waiting, **enqueued}
    if len(progress) < 2:
        return None
    highest = max(progress.values())
    behind = [rank for rank, value in progress.items() if value < highest]
    return behind[0] if len(behind) == 1 else None
