"""Hang rules: when only collective timeouts were printed, who never arrived, and why.

They read which collective each rank was in (traceback frames, NCCL OpType), how far each got
(NCCL SeqNum, last enqueued work), which ranks timed out, which only lost their peers, and which
printed nothing. The first rule that applies decides.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace

from ...model import Match
from ..events import time_key
from ..facts import Facts
from ..hangs import BACKWARD_OPS, first_by_rank, first_disconnects, is_disconnect, op_for, sequence_progress
from ..ids import ABORT_CORE_DUMPED, MISMATCH, P2P_FAILURE, STRAGGLER, UNEVEN
from ..rank_table import ranks_seen
from . import Decision, rule

HANG_WEIGHT = 0.5  # how sure a verdict drawn from where ranks waited is, when no error line states it


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
    failures = _error_lines(facts)
    stream = max(streams, key=lambda item: len(item.lines))
    busy = [line for line in stream.lines if (stream.source, line.line) not in failures and _says_something(line.text)]
    timed = [line for line in busy if line.time is not None]
    return activity_match(stream, failure_id, (timed or busy)[-1] if busy else None)


def _error_lines(facts: Facts) -> set:
    """(source, line) of every line a failure signature read: no line of work a rank was busy with."""
    return {(match.line.origin.source, match.line.origin.line) for match in facts.matches if match.role != "context"}


def _says_something(text: str) -> bool:
    """A log message, not a traceback's code line, caret line or C++ frame."""
    from ...match.progress_lines import is_traceback_body

    return any(char.isalpha() for char in text) and not is_traceback_body(text)


def hang_decision(facts: Facts, decision: Decision, rule_id: str, failure_id: str, rank: int | None,
                  reason: str, evidence: Match | None, cited=()) -> Decision:
    if evidence is None and rank is not None:
        evidence = own_line(facts, rank, failure_id)
    anchor = evidence or min(facts.collateral, key=time_key)
    if anchor.line.origin.rank != rank:
        anchor = with_rank(anchor, rank)  # None: the rule found no single rank that started it
    # no rank, and the line is the first waiter's: on one of several hosts, its host is not where it started
    waiter = rank is None and anchor.signature.role == "collateral" and len(facts.hosts) > 1
    if waiter:
        anchor = replace(anchor, line=replace(anchor.line, origin=replace(anchor.line.origin, host=None, host_from=None)))
    if anchor.signature.weight < HANG_WEIGHT:  # a frame or a last line: the verdict's weight is the rule's
        anchor = replace(anchor, signature=replace(anchor.signature, weight=HANG_WEIGHT, role="symptom"))
    return decision.with_because(rule_id, reason, [*cited, anchor] if evidence else list(cited) or [anchor],
                                 note=f"only collective timeouts were printed: {reason}" if facts.timeouts else reason,
                                 status="failure", primary=failure_id, initiating=anchor, rank_decided=True,
                                 host_decided=waiter)


_GROUP = re.compile(r"PG ID (\d+)")


def _groups_named(matches) -> set:
    return {found.group(1) for match in matches for found in _GROUP.finditer(match.line.text)}


def _waiting(facts: Facts) -> dict:
    """rank -> its first timeout; a timeout no line ties to a rank (the launcher's failure table
    quoting a worker's traceback under `@record`) names no one who waited."""
    return {rank: match for rank, match in first_by_rank(facts.timeouts).items() if rank is not None}


@rule("hang-sequence-behind")
def sequence_behind(facts: Facts, decision: Decision) -> Decision | None:
    """NCCL: the one rank whose collective sequence number is behind the others'."""
    progress = sequence_progress(facts.timeouts)
    if len(progress) < 2 or len(_groups_named(facts.timeouts)) > 1:
        return None  # sequence numbers count per process group: across groups they do not compare
    highest = max(progress.values())
    behind = [rank for rank, value in progress.items() if value < highest]
    if len(behind) > 1 and len(progress) - len(behind) > 1:
        # several ranks on each side: they ran different numbers of steps, not one straggler
        by_seq: dict[int, list] = defaultdict(list)
        for rank, value in progress.items():
            by_seq[value].append(rank)
        described = "; ".join(f"{seq}: ranks {sorted(ranks)}" for seq, ranks in sorted(by_seq.items()))
        return hang_decision(facts, decision, "hang-sequence-behind", UNEVEN, None,
                             f"ranks waited at different collective sequence numbers ({described}): "
                             "they had run different numbers of steps", _waiting(facts).get(behind[0]))
    if len(behind) != 1:
        return None
    rank = behind[0]
    return hang_decision(facts, decision, "hang-sequence-behind", STRAGGLER, rank,
                         f"rank {rank}'s collective sequence number ({progress[rank]}) is behind the others' ({highest})",
                         _waiting(facts).get(rank))


@rule("hang-different-collectives")
def different_collectives(facts: Facts, decision: Decision) -> Decision | None:
    """Ranks waiting in different collectives: uneven batches (barrier vs backward) or a desync."""
    from ...render.diagnosis_text import ranks_phrase

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
        early = sorted(groups["barrier"])
        late = sorted(next(members for op, members in groups.items() if op != "barrier"))
        ahead = _epoch_ahead(facts, early, late)
        if ahead is not None:
            # the ranks in the backward all-reduce had begun a later epoch: the barrier of the
            # others paired with their epoch-end barrier, so the barrier was one collective more
            single = early[0] if len(early) == 1 else None
            reason = (f"{ranks_phrase(early)} waited in a barrier at the end of epoch {ahead[0]} while {ranks_phrase(late)} "
                      f"had begun epoch {ahead[1]} and waited in its backward all-reduce: {ranks_phrase(early)} called a "
                      "barrier the others did not (theirs paired with the others' epoch-end barrier)")
            return hang_decision(facts, decision, "hang-different-collectives", MISMATCH, single, reason, first.get(single))
        # uneven data: the odd side is the smaller one, and the ranks whose data ran out first
        # (at the epoch-end barrier) on a tie
        odd = early if len(early) <= len(late) else late
        single = odd[0] if len(odd) == 1 else None
        reason = (f"{ranks_phrase(early)} reached the end-of-epoch barrier while {ranks_phrase(late)} were still in the "
                  "backward all-reduce" + ("" if odd is early else f": {ranks_phrase(late)} had more batches"))
        return hang_decision(facts, decision, "hang-different-collectives", UNEVEN, single, reason, first.get(single))
    counts = Counter({op: len(members) for op, members in groups.items()})
    minority_op, minority_size = counts.most_common()[-1]
    majority_op = counts.most_common(1)[0][0]
    single = groups[minority_op][0] if minority_size == 1 and counts[majority_op] > 1 else None
    described = "; ".join(f"{op}: ranks {sorted(members)}" for op, members in sorted(groups.items()))
    return hang_decision(facts, decision, "hang-different-collectives", MISMATCH, single,
                         f"ranks were in different collectives ({described})",
                         first.get(single) or next(iter(first.values())))


def _last_epoch(facts: Facts, rank: int) -> int | None:
    """The epoch named by the last line of the rank's own output that names one."""
    from ...match.progress_lines import epoch_of

    lines = sorted((line for stream in facts.activity if stream.rank == rank for line in stream.lines),
                   key=lambda line: (line.time is None, line.time or 0.0, line.line))
    return next((epoch for line in reversed(lines) if (epoch := epoch_of(line.text)) is not None), None)


def _epoch_ahead(facts: Facts, early: list[int], late: list[int]) -> tuple[int, int] | None:
    """(epoch of the barrier side, epoch of the others) when every rank's last epoch is known and
    the others are all past the barrier side's: they ended that epoch, so the barrier side did not
    run out of batches first."""
    barrier_side = {_last_epoch(facts, rank) for rank in early}
    others = {_last_epoch(facts, rank) for rank in late}
    if None in barrier_side or None in others or len(barrier_side) != 1:
        return None
    epoch = next(iter(barrier_side))
    return (epoch, min(others)) if min(others) > epoch else None


def _timed_out_and_disconnected(facts: Facts) -> tuple[set, set]:
    timed_out = set(_waiting(facts)) | _taken_down_by_the_watchdog(facts)
    disconnected = {m.line.origin.rank for m in facts.collateral if is_disconnect(m)} - timed_out - {None}
    return timed_out, disconnected


NCCL_WATCHDOG_TIMEOUT = "nccl-watchdog-timeout"  # `Watchdog caught collective operation timeout`


def _taken_down_by_the_watchdog(facts: Facts) -> set[int]:
    """The ranks that died of SIGABRT after an NCCL watchdog timeout in view: the watchdog takes
    down every process whose collective timed out ("To avoid data inconsistency, we are taking the
    entire process down"), so such a rank waited too, whatever cut its own timeout lines from view
    (a launcher's report of the abort is all that is left of it: `process 2 terminated with signal
    SIGABRT`, `exitcode: -6`). An abort before the first timeout is a crash of its own."""
    watchdog = [m for m in facts.timeouts if m.signature.name == NCCL_WATCHDOG_TIMEOUT]
    if not watchdog:
        return set()
    first = min(watchdog, key=time_key)
    return {rank for rank, row in facts.rows.items() if _aborted(row) and _later_than(row.ended_match, first)}


def _later_than(match: Match, first: Match) -> bool:
    """Whether the logs order `match` after `first`: by their own times, else by line in one file."""
    mine, theirs = match.line.origin, first.line.origin
    if mine.time is not None and theirs.time is not None and not mine.time_inherited:
        return mine.time >= theirs.time
    return mine.source == theirs.source and mine.line > theirs.line


EPOCH_END_WORDS = ("epoch", "ending", "end of", "completed", "finished", "maximum number of steps", "summary", "validat",
                   "evaluat", "averaged")


def _after_epoch_end(facts: Facts, after: float) -> Match | None:
    """A line the job printed after the ranks' last step that says the epoch (or the data) ended."""
    from .progress import activity_match

    for stream in facts.activity:
        for line in stream.lines:
            if line.time is not None and line.time > after and any(word in line.text.lower() for word in EPOCH_END_WORDS):
                return activity_match(stream, UNEVEN, line)
    return None


@rule("hang-step-behind")
def step_behind(facts: Facts, decision: Decision) -> Decision | None:
    """The job hung and one rank's last step is behind the step every other rank reached: it ran
    out of batches one step early when the others then ended their epoch (uneven batches), else
    it fell behind (a straggler)."""
    steps = {rank: row.progress for rank, row in facts.rows.items() if row.progress is not None}
    counted = {rank: counter for rank, (line, _source) in steps.items() if (counter := _counter(line.text)) is not None}
    if len(counted) < 2 or len(counted) != len(facts.rows):
        return None
    highest = max(counted.values())
    behind = [rank for rank, step in counted.items() if step < highest]
    if len(behind) != 1:
        return None
    rank = behind[0]
    line, _source = steps[rank]
    others_last = max((steps[other][0].time for other in counted if other != rank and steps[other][0].time is not None),
                      default=None)
    epoch_end = _after_epoch_end(facts, others_last) if others_last is not None else None
    failure_id = UNEVEN if epoch_end is not None else STRAGGLER
    reason = (f"rank {rank} stopped at step {counted[rank]} while every other rank reached step {highest}"
              + (f" and then ended its epoch ({epoch_end.line.text.strip()[:80]!r}): rank {rank} had fewer batches"
                 if epoch_end is not None else ""))
    return hang_decision(facts, decision, "hang-step-behind", failure_id, rank, reason, None,
                         [epoch_end] if epoch_end is not None else ())


def _counter(text: str) -> int | None:
    from ...match.progress_lines import counter_of

    return counter_of(text)


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


def _in_view(facts: Facts) -> set[int]:
    """The ranks of which the logs show a line."""
    return set(facts.inputs.ranks) | ranks_seen(facts)


def _missing(facts: Facts, timed_out: set, disconnected: set) -> list[int]:
    # rank 0 exists in every job: when the other ranks printed timeouts and it printed nothing
    # that carries its rank (rank 0 often logs unprefixed progress: tokenizing, evaluating), it is missing
    # (and the ranks only a join tells: a Ray worker's lines are its rank's through its pid)
    # (and so does every rank below one seen: where ranks 5-15 timed out and only 13 and 0-4 left no
    # line, no one of them is the missing one)
    seen = _in_view(facts)
    below = set(range(max(seen | timed_out | disconnected) + 1)) if len(timed_out | disconnected) >= 2 else set()
    expected = sorted(seen | below)
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


BACK_LATE_SECONDS = 1.0  # how much later than every other rank's last work a rank's own must be


@rule("hang-back-too-late")
def back_too_late(facts: Facts, decision: Decision) -> Decision | None:
    """One rank printed work of its own (`rank 3: sync done`) later than every other rank's last
    work, after they had timed out waiting: it was busy while they waited, and came back to find
    them gone (its own error then is a lost peer, like theirs). Ranks' error lines do not count as
    work; only lines stamped with their own time do. (Seen in real gloo runs whose straggler slept
    past the 3 s timeout: tests/fixtures/real/straggler-srun-ws5-r3, straggler-tee-ws6-r2-torch29-py313.)"""
    timed_out, _disconnected = _timed_out_and_disconnected(facts)
    if not timed_out:
        return None
    failures = _error_lines(facts)
    last_work: dict[int, tuple[float, object, object]] = {}
    for stream in facts.activity:
        if stream.rank is None or stream.unprefixed:
            continue
        work = [line for line in stream.lines if line.time is not None and (stream.source, line.line) not in failures
                and _says_something(line.text)]
        if work and (stream.rank not in last_work or work[-1].time > last_work[stream.rank][0]):
            last_work[stream.rank] = (work[-1].time, stream, work[-1])
    if len(last_work) < 2:
        return None
    ordered = sorted(last_work.items(), key=lambda item: item[1][0])
    (rank, (time, stream, line)), second = ordered[-1], ordered[-2][1][0]
    if rank in timed_out or time - second < BACK_LATE_SECONDS:
        return None
    waited = [m.line.origin.time for m in facts.timeouts if m.line.origin.time is not None and not m.line.origin.time_inherited]
    if waited and time <= min(waited):
        return None  # it printed before the others gave up: that says nothing of who they waited for
    from .progress import activity_match

    reason = (f"rank {rank}'s own line {line.text.strip()[:70]!r} came {time - second:.1f} s after every other rank's last "
              "work, when they had timed out waiting: it was busy while they waited")
    return hang_decision(facts, decision, "hang-back-too-late", STRAGGLER, rank, reason,
                         activity_match(stream, STRAGGLER, line))


@rule("hang-never-joined")
def never_joined(facts: Facts, decision: Decision) -> Decision | None:
    """The one rank that printed no timeout while all the others timed out waiting."""
    timed_out, disconnected = _timed_out_and_disconnected(facts)
    missing = _missing(facts, timed_out, disconnected)
    if len(missing) != 1 or not timed_out:
        return None
    rank = missing[0]
    if rank != 0 and rank not in _in_view(facts):
        return None  # no line of it in view at all: its lines were left out (an excerpt), not its work
    return hang_decision(facts, decision, "hang-never-joined", STRAGGLER, rank,
                         f"rank {rank} never joined the collective the others timed out in", None)


FIRST_SEQUENCE = 1  # NCCL numbers a process group's collectives from 1 (0 in some versions)


@rule("hang-first-collective")
def first_collective(facts: Facts, decision: Decision) -> Decision | None:
    """Every rank of a one-node job timed out in its very first collective (SeqNum 1, nothing
    completed): no rank was late, the GPUs never exchanged data. That is the intra-node transport
    (P2P over PCIe or NVLink) failing silently, the knowledge base's nccl-p2p-failure symptom."""
    sequences = [int(m.captures["seq"]) for m in facts.timeouts if str(m.captures.get("seq", "")).isdigit()]
    timed_out = {m.line.origin.rank for m in facts.timeouts if m.line.origin.rank is not None}
    if len(timed_out) < 2 or not sequences or max(sequences) > FIRST_SEQUENCE or len(facts.hosts) > 1:
        return None
    if set(facts.rows) - timed_out:
        return None  # a rank that did not time out may simply be late
    first = min(facts.timeouts, key=time_key)
    reason = (f"all {len(timed_out)} ranks timed out in their first collective (SeqNum {max(sequences)}) on one node: "
              "no rank was late, the GPUs never exchanged data")
    return hang_decision(facts, decision, "hang-first-collective", P2P_FAILURE, None, reason, first)


@rule("hang-p2p-redirected")
def p2p_redirected(facts: Facts, decision: Decision) -> Decision | None:
    """The job hung on one node whose PCIe bridges redirect peer-to-peer traffic (lspci's ACSCtl
    shows ReqRedir+ CmpltRedir+): GPU-to-GPU copies go through the root complex or the IOMMU and
    can stall for good, the knowledge base's nccl-p2p-failure. (One corpus case shows it so far:
    dev/vllm-tp2-acs-p2p-allreduce-deadlock.)"""
    from ...match.context import DEVICE_ACS_REDIRECT

    redirects = [m for m in facts.matches if m.signature.name == DEVICE_ACS_REDIRECT]
    if not redirects or len(facts.hosts) > 1:
        return None
    reason = (f"the job hung, and {len(redirects)} PCIe bridge(s) of the node redirect peer-to-peer traffic "
              "(ACSCtl ReqRedir+ CmpltRedir+): GPU peer copies go through the root complex and can stall")
    return hang_decision(facts, decision, "hang-p2p-redirected", P2P_FAILURE, None, reason, redirects[0])


LEFT_QUIETLY = ("unknown", "silent", "stopped", "running")  # how the others ended: nothing of their own
FINISHED_SLACK_SECONDS = 5.0  # a collective begun this long before the end was announced still counts as after it


@rule("hang-after-the-end")
def after_the_end(facts: Facts, decision: Decision) -> Decision | None:
    """One rank alone timed out (NCCL) or lost its peers (Gloo sees them exit) in a collective it
    entered after the job said its training was done (`Training complete`, `Trainer.fit
    stopped`): the other ranks had no collective left to call, so that one was a collective only
    this rank called (a barrier or all-reduce inside `if rank == 0:` after fit), not a wait for
    a slow peer. Runs in the hang stage (a timeout) and in the outcome stage (a lost peer is no
    hang). (One public-thread case uses it so far, dev/lightning-rank0-extra-barrier-postfit-hang;
    the lab's collective-after-fit runs are the others.)"""
    from ...match.context import JOB_SUCCEEDED
    from ..rank_table import WAITING

    waited = [rank for rank, row in facts.rows.items() if row.ended in WAITING]
    if len(waited) != 1 or len(facts.rows) < 2:
        return None
    rank = waited[0]
    if any(row.ended not in LEFT_QUIETLY for other, row in facts.rows.items() if other != rank):
        return None  # another rank crashed, was killed or raised: the wait may have been for it
    wait = facts.rows[rank].ended_match  # its timeout, or the line where it lost its peers
    if wait is None or wait.line.origin.time is None:
        return None
    began = _wait_began(wait)
    if began is None:
        return None
    ended = [m for m in facts.matches if m.signature.name == JOB_SUCCEEDED and m.line.origin.time is not None
             and m.line.origin.time <= began + FINISHED_SLACK_SECONDS]
    if not ended:
        return None
    finished = max(ended, key=time_key)
    how = "timed out" if facts.rows[rank].ended == "timed out" else "lost its peers"
    reason = (f"rank {rank} alone {how}, in a collective it entered after the job said its training was done "
              f"({finished.line.text.strip()[:80]!r}): the other ranks had none left to call, so it was a collective "
              f"only rank {rank} called")
    return hang_decision(facts, decision, "hang-after-the-end", MISMATCH, rank, reason, wait, [finished])


def _wait_began(wait: Match) -> float | None:
    """When a collective that failed waiting began: a timeout's own time less the time it says it
    ran; a lost peer's time (the peer's exit is seen at once)."""
    waited = wait.captures.get("ran_ms") or wait.captures.get("timeout_ms")
    if str(waited or "").isdigit() and not wait.line.origin.time_inherited:
        return wait.line.origin.time - int(waited) / 1000.0
    # (a time carried from the rank's line before it is when the rank was last seen: it lost
    # its peers then or later)
    return wait.line.origin.time if is_disconnect(wait) else None


@rule("hang-all-timed-out")
def all_timed_out(facts: Facts, decision: Decision) -> Decision | None:
    """The ranks timed out in the same collective and nothing names the one that was late: a
    straggler the logs do not name (the sentence says which ranks timed out, from the table)."""
    from ...render.diagnosis_text import ranks_phrase
    from ..rank_table import WAITING

    if not facts.timeouts:
        return None
    waited = sorted(rank for rank, row in facts.rows.items() if row.ended in WAITING)
    others = sorted(set(facts.rows) - set(waited))
    if others and waited:
        reason = (f"{ranks_phrase(waited)} timed out in the same collective; {ranks_phrase(others)} printed no "
                  "timeout, and nothing in the logs says which rank was late")
    else:
        reason = "every rank timed out in the same collective; the logs do not show who was late"
    return hang_decision(facts, decision, "hang-all-timed-out", STRAGGLER, None, reason, facts.timeouts[0])


def any_timeouts(facts: Facts) -> bool:
    return bool(facts.timeouts)


ROOT_ONLY_WORK = ("save", "checkpoint", "eval", "valid", "predict", "log_", "write")  # what one rank does alone
# where a rank with fewer batches goes: evaluation (gathering its metrics), the epoch-end barrier
EPOCH_END_WORK = ("eval", "valid", "predict", "barrier", "epoch", "gather")


@rule("hang-stacks-differ")
def stacks_differ(facts: Facts, decision: Decision) -> Decision | None:
    """Stacks of the hung processes (Ctrl-C tracebacks, faulthandler dumps) wait in different
    places: the odd one out started it; past the gradient all-reduce into evaluation or a
    barrier means uneven batches, anything else a collective the others never call."""
    stacks = facts.hang_stacks
    if len(stacks) < 2:
        return None
    groups: dict[str, list] = defaultdict(list)
    for stack in stacks:
        groups[stack.wait].append(stack)
    if len(groups) < 2:
        return None
    ordered = sorted(groups.values(), key=len)
    odd = ordered[0]
    if len(ordered[0]) == len(ordered[1]):
        doing_alone = [group for group in ordered if any(word in func for func in group[0].functions for word in ROOT_ONLY_WORK)]
        if len(doing_alone) != 1:
            return None
        odd = doing_alone[0]
    others = [stack for group in groups.values() if group is not odd for stack in group]
    majority_in_backward = all(stack.wait == "backward" for stack in others)
    where_odd = [f"{frame.captures.get('file', '')} {frame.captures.get('func', '')}".lower() for frame in odd[0].frames]
    past_the_epoch = not any("fsdp" in place for place in where_odd) and any(
        word in place for place in where_odd for word in EPOCH_END_WORK)
    failure_id = UNEVEN if majority_in_backward and past_the_epoch else MISMATCH
    rank = odd[0].rank if len(odd) == 1 else None
    where = ", ".join(sorted({stack.wait for stack in others}))
    reason = (f"{len(odd)} process(es){f' (rank {rank})' if rank is not None else ''} waited in {odd[0].wait} "
              f"while {len(others)} waited in {where}")
    return hang_decision(facts, decision, "hang-stacks-differ", failure_id, rank, reason, odd[0].innermost,
                         [stack.innermost for stack in others[:2]])


ABORT_CODES = ("-6", "134")  # SIGABRT as a launcher reports it: a negative signal number, or 128 + 6


def _aborted(row) -> bool:
    """Whether the line that says how the rank ended says it died of SIGABRT (an exit code or signal
    of the launcher's table, or the abort line itself)."""
    match = row.ended_match
    return row.ended in ("crashed", "failed") and match is not None and (
        str(match.captures.get("exitcode") or match.captures.get("code") or "") in ABORT_CODES
        or match.captures.get("signal") == "SIGABRT" or match.signature.key == ABORT_CORE_DUMPED)


@rule("hang-aborted-together")
def aborted_together(facts: Facts, decision: Decision) -> Decision | None:
    """Several ranks died of SIGABRT and no line states an error of their own (the watchdog's timeout
    lines cut from what was pasted): a launcher stops the others at the first death (SIGTERM), so
    ranks that aborted by themselves at once were not killed by a peer's death but ended by the NCCL
    watchdog, which aborts every rank whose collective timed out. The one rank still running when
    they fired (its launcher only stopped it) was not in that collective; with none, which rank was
    late the logs do not say. (With several still running, some ranks' aborts may follow a peer's
    failure, as NCCL's error handling also aborts: the rule does not apply.)"""
    if decision.roots or any(m.signature.key != ABORT_CORE_DUMPED for m in decision.symptoms):
        return None  # an error of its own, or a native crash said in words (a segfault, a C++ terminate)
    if facts.timeouts:
        return None  # the timeouts are in view: the hang rules read who was late from them
    rows = facts.rows
    aborted = sorted(rank for rank, row in rows.items() if _aborted(row))
    stopped = [rank for rank, row in rows.items() if row.ended == "stopped"]
    other = [rank for rank, row in rows.items() if row.ended not in ("stopped", "unknown", "silent") and rank not in aborted]
    if len(aborted) < 2 or other or len(stopped) > 1:
        return None  # (several still running: the aborts may be some ranks' end after a peer's failure)
    together = f"ranks {', '.join(map(str, aborted))} died of SIGABRT together, as the NCCL watchdog ends ranks whose collective timed out"
    if not stopped:  # the line it points at is an abort's: its rank and host are not the answer
        anchor = rows[aborted[0]].ended_match
        anchor = replace(anchor, line=replace(anchor.line, origin=replace(anchor.line.origin, rank=None, host=None)))
        return hang_decision(facts, decision, "hang-aborted-together", STRAGGLER, None,
                             f"{together}; which rank they waited for the logs do not say", anchor)
    rank = stopped[0]
    reason = f"{together}; rank {rank} was still running (its launcher stopped it): it was not in that collective"
    return hang_decision(facts, decision, "hang-aborted-together", STRAGGLER, rank, reason, rows[rank].ended_match)
