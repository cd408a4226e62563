"""Hang rules: when only collective timeouts were printed, who never arrived, and why.

They read which collective each rank was in (traceback frames, NCCL OpType), how far each got
(NCCL SeqNum, last enqueued work), which ranks timed out, which only lost their peers, and which
printed nothing. The first rule that applies decides.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

from ...model import Match
from ..events import time_key
from ..facts import Facts
from ..hangs import BACKWARD_OPS, first_by_rank, first_disconnects, is_disconnect, op_for, sequence_progress
from ..ids import MISMATCH, STRAGGLER, UNEVEN
from . import Decision, rule


def with_rank(match: Match, rank: int) -> Match:
    origin = replace(match.line.origin, rank=rank)
    return replace(match, line=replace(match.line, origin=origin))


def own_line(facts: Facts, rank: int, failure_id: str) -> Match | None:
    """What the named rank itself last printed before the others timed out (what it was busy
    with), as the line a hang verdict points at."""
    from .progress import activity_match

    streams = [stream for stream in facts.activity if stream.rank == rank and not stream.unprefixed and stream.lines]
    if not streams:
        return None
    failures = {(match.line.origin.source, match.line.origin.line) for match in facts.matches if match.role != "context"}
    stream = max(streams, key=lambda item: len(item.lines))
    busy = [line for line in stream.lines if (stream.source, line.line) not in failures]
    return activity_match(stream, failure_id, busy[-1] if busy else None)


def hang_decision(facts: Facts, decision: Decision, rule_id: str, failure_id: str, rank: int | None,
                  reason: str, evidence: Match | None, cited=()) -> Decision:
    if evidence is None and rank is not None:
        evidence = own_line(facts, rank, failure_id)
    anchor = evidence or min(facts.collateral, key=time_key)
    if rank is not None and anchor.line.origin.rank != rank:
        anchor = with_rank(anchor, rank)
    return decision.with_because(rule_id, reason, [*cited, anchor] if evidence else list(cited) or [anchor],
                                 note=f"only collective timeouts were printed: {reason}",
                                 status="failure", primary=failure_id, initiating=anchor)


def _waiting(facts: Facts) -> dict:
    return first_by_rank(facts.timeouts)


@rule("hang-sequence-behind")
def sequence_behind(facts: Facts, decision: Decision) -> Decision | None:
    """NCCL: the one rank whose collective sequence number is behind the others'."""
    progress = sequence_progress(facts.timeouts)
    if len(progress) < 2:
        return None
    highest = max(progress.values())
    behind = [rank for rank, value in progress.items() if value < highest]
    if len(behind) != 1:
        return None
    rank = behind[0]
    return hang_decision(facts, decision, "hang-sequence-behind", STRAGGLER, rank,
                         f"rank {rank}'s collective sequence number ({progress[rank]}) is behind the others' ({highest})",
                         _waiting(facts).get(rank))


@rule("hang-different-collectives")
def different_collectives(facts: Facts, decision: Decision) -> Decision | None:
    """Ranks waiting in different collectives: uneven batches (barrier vs backward) or a desync."""
    waiting = _waiting(facts)
    known = {rank: op for rank, match in waiting.items() if (op := op_for(match, facts.frames))}
    disconnects = first_disconnects(facts.collateral)
    every_op = {**{rank: op for rank, match in disconnects.items() if (op := op_for(match, facts.frames))}, **known}
    if len(set(every_op.values())) <= 1:
        return None
    first = {**disconnects, **waiting}
    groups: dict[str, list] = defaultdict(list)
    for rank, op in every_op.items():
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
        return hang_decision(facts, decision, "hang-different-collectives", UNEVEN, single, reason, first.get(single))
    counts = Counter({op: len(members) for op, members in groups.items()})
    minority_op, minority_size = counts.most_common()[-1]
    majority_op = counts.most_common(1)[0][0]
    single = groups[minority_op][0] if minority_size == 1 and counts[majority_op] > 1 else None
    described = "; ".join(f"{op}: ranks {sorted(members)}" for op, members in sorted(groups.items()))
    return hang_decision(facts, decision, "hang-different-collectives", MISMATCH, single,
                         f"ranks were in different collectives ({described})",
                         first.get(single) or next(iter(first.values())))


def _timed_out_and_disconnected(facts: Facts) -> tuple[set, set]:
    timed_out = {rank for rank in _waiting(facts) if rank is not None}
    disconnected = {m.line.origin.rank for m in facts.collateral if is_disconnect(m)} - timed_out - {None}
    return timed_out, disconnected


@rule("hang-alone-in-barrier")
def alone_in_barrier(facts: Facts, decision: Decision) -> Decision | None:
    """One rank timed out in a barrier while the others only lost it: it ran out of batches first."""
    timed_out, disconnected = _timed_out_and_disconnected(facts)
    if len(timed_out) != 1 or not disconnected:
        return None
    rank = next(iter(timed_out))
    match = _waiting(facts)[rank]
    if op_for(match, facts.frames) != "barrier":
        return None
    return hang_decision(facts, decision, "hang-alone-in-barrier", UNEVEN, rank,
                         f"rank {rank} waited alone in barrier while the others were still training", match)


def _missing(facts: Facts, timed_out: set, disconnected: set) -> list[int]:
    # rank 0 exists in every job: when the other ranks printed timeouts and it printed nothing
    # that carries its rank (rank 0 often logs unprefixed progress: tokenizing, evaluating), it is missing
    expected = sorted(set(facts.inputs.ranks) | ({0} if len(timed_out | disconnected) >= 2 else set()))
    return [rank for rank in expected if rank not in timed_out and rank not in disconnected]


@rule("hang-late-arrival")
def late_arrival(facts: Facts, decision: Decision) -> Decision | None:
    """The one rank that reached the collective only after its peers had timed out and left."""
    timed_out, disconnected = _timed_out_and_disconnected(facts)
    if len(disconnected) != 1 or _missing(facts, timed_out, disconnected):
        return None
    rank = next(iter(disconnected))
    return hang_decision(facts, decision, "hang-late-arrival", STRAGGLER, rank,
                         f"rank {rank} reached the collective only after the others had timed out and left", None)


@rule("hang-never-joined")
def never_joined(facts: Facts, decision: Decision) -> Decision | None:
    """The one rank that printed no timeout while all the others timed out waiting."""
    timed_out, disconnected = _timed_out_and_disconnected(facts)
    missing = _missing(facts, timed_out, disconnected)
    if len(missing) != 1 or not timed_out:
        return None
    rank = missing[0]
    return hang_decision(facts, decision, "hang-never-joined", STRAGGLER, rank,
                         f"rank {rank} never joined the collective the others timed out in", None)


@rule("hang-all-timed-out")
def all_timed_out(facts: Facts, decision: Decision) -> Decision | None:
    """Every rank timed out in the same collective: a straggler the logs do not name."""
    if not facts.timeouts:
        return None
    return hang_decision(facts, decision, "hang-all-timed-out", STRAGGLER, None,
                         "every rank timed out in the same collective; the logs do not show who was late",
                         facts.timeouts[0])


def any_timeouts(facts: Facts) -> bool:
    return bool(facts.timeouts)
