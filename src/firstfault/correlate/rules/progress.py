"""Rules over what each rank last did: errors the run outlived, external stops that only ended a
hang or came after an in-job fault, and the rank that fell silent first."""
from __future__ import annotations

import re
from dataclasses import replace
from statistics import median

from ...model import LogLine, Match, Origin, Signature
from ..activity import StreamActivity, advancing, healthy_progress_after, stream_for, template
from ..events import Incident, time_key
from ..facts import Facts
from ..ids import EXTERNAL_STOP, STRAGGLER
from . import Decision, rule

OUTLIVED_PROGRESS_LINES = 2  # healthy progress lines after an error that show the run went on
HANG_IDLE_SECONDS = 15 * 60  # silence before an external stop that means the job had hung
HANG_IDLE_FLOOR_SECONDS = 5.0  # with one rank visibly behind, a silence this long may already be one
IDLE_CADENCE_FACTOR = 10  # ... or this many times the job's usual gap between lines
BEHIND_CADENCE_FACTOR = 2  # with one rank visibly behind the others, a shorter silence is enough
SCHEDULER_WORDS = ("slurmstepd", "srun:", "sbatch", "scancel", "CANCELLED", "PREEMPT", "Terminated", "SIGTERM", "signal 15")
# lines a process prints while it waits for the others: they say it is stuck, not working
# (vLLM's engine every 60 s while its workers do not answer, shm_broadcast.py)
WAITING_WORDS = ("No available shared memory broadcast block found",)
STUCK_STATEMENTS = 2  # this many of them before a stop: the job said it hung, whatever the silence


def _failure_lines(facts: Facts) -> frozenset:
    return frozenset((m.line.origin.source, m.line.origin.line) for m in facts.winners)


def _stream(facts: Facts, match: Match) -> StreamActivity | None:
    origin = match.line.origin
    stream = stream_for(facts.activity, origin.source, origin.rank, unprefixed=origin.rank is None)
    if stream is None:
        return None
    if stream.rank is None and not stream.unprefixed and not facts.single_process:
        return None  # one file of several processes' unlabelled lines: whose progress is it?
    return stream if not stream.unprefixed else None


def outlived(facts: Facts, match: Match, failures: frozenset | None = None) -> list:
    """The healthy progress lines the same process printed after this line (empty if none),
    in the same file or in the file of a later attempt of the same worker (a restarted
    container's log beside its `.previous` one, torchrun's attempt_1 beside attempt_0)."""
    failures = failures if failures is not None else _failure_lines(facts)
    stream = _stream(facts, match)
    if stream is not None:
        after = healthy_progress_after(stream, match.line.origin.line, failures)
        if len(after) >= OUTLIVED_PROGRESS_LINES and advancing(after):
            return after
    for later in _later_attempts(facts, match.line.origin.source):
        after = healthy_progress_after(later, 0, failures)
        if len(after) >= OUTLIVED_PROGRESS_LINES and advancing(after):
            return after
    return []


_ATTEMPT = re.compile(r"attempt_(\d+)")


def _later_attempts(facts: Facts, source: str) -> list[StreamActivity]:
    """Streams of a later run of the same worker: `x.previous.log` -> `x.log`, attempt_0 -> attempt_1."""
    names = []
    if ".previous" in source:
        names.append(source.replace(".previous", ""))
    found = _ATTEMPT.search(source)
    if found:
        names += [source[:found.start(1)] + str(number) + source[found.end(1):] for number in range(int(found.group(1)) + 1, int(found.group(1)) + 4)]
    return [stream for stream in facts.activity if stream.source in names]


@rule("outlived-by-progress")
def outlived_by_progress(facts: Facts, decision: Decision) -> Decision | None:
    """Errors after which the same process kept making progress are not the cause of anything."""
    failures = _failure_lines(facts)
    # an external stop followed by a few more steps still stopped the job (they ran out its grace period)
    survived_roots = [incident for incident in decision.roots if not _is_stop(facts, incident.failure_id)
                      and outlived(facts, incident.matches[-1], failures)]
    survived_symptoms = [match for match in decision.symptoms if not _is_stop(facts, match.entry_id)
                         and outlived(facts, match, failures)]
    if not survived_roots and not survived_symptoms:
        return None
    first = (survived_roots[0].first if survived_roots else survived_symptoms[0])
    progress = outlived(facts, first, failures)
    text = (f"{len(survived_roots) + len(survived_symptoms)} error(s) were followed by training progress on the same "
            f"process (e.g. {first.entry_id} at {first.line.origin.source}:{first.line.origin.line}, then "
            f"{progress[-1].text.strip()[:80]!r}): the run outlived them")
    went_past = tuple(match for incident in survived_roots for match in incident.matches) + tuple(survived_symptoms)
    return decision.with_because(
        "outlived-by-progress", text, [first, (first.line.origin.source, progress[-1].line)],
        roots=tuple(i for i in decision.roots if i not in survived_roots),
        symptoms=tuple(m for m in decision.symptoms if m not in survived_symptoms),
        went_past=decision.went_past + went_past)


@rule("launcher-went-on")
def launcher_went_on(facts: Facts, decision: Decision) -> Decision | None:
    """Errors a launcher printed before it started its workers, in the console it shares with them
    (a line that names no rank, above the first line torchrun prefixed with a worker's name): torchrun
    starts its workers only once its rendezvous is complete, so it got past them. Seen with torch 2.1
    and 2.4: an agent on the rendezvous endpoint's host logs that the store's port is taken when
    another agent there already serves it, and joins as a client (c10d_rendezvous_backend.py)."""
    roots, survived = [], []
    for incident in decision.roots:
        before = [match for match in incident.matches if before_its_workers(facts, match)]
        survived += before
        rest = [match for match in incident.matches if match not in before]  # (its stream's later lines)
        if rest:
            roots.append(incident if not before else Incident(rest))
    survived += [match for match in decision.symptoms if before_its_workers(facts, match)]
    if not survived:
        return None
    first = min(survived, key=lambda match: match.order)
    source = first.line.origin.source
    started = _workers_started(facts, source)
    text = (f"{len(survived)} error line(s) of the launcher (e.g. {first.entry_id} at {source}:"
            f"{first.line.origin.line}, a line that names no rank) came before it started its workers "
            f"(their first line: {source}:{started}): it got past them")
    return decision.with_because(
        "launcher-went-on", text, [first, (source, started)],
        roots=tuple(sorted(roots, key=lambda incident: time_key(incident.first))),
        symptoms=tuple(match for match in decision.symptoms if match not in survived),
        went_past=decision.went_past + tuple(survived))


def _workers_started(facts: Facts, source: str) -> int | None:
    return next((line for launched, line in facts.inputs.launched if launched == source), None)


def before_its_workers(facts: Facts, match: Match) -> bool:
    """A line that names no rank, in a console of workers a launcher started, above their first
    line (not an external stop: a signal before the workers started stopped the launcher)."""
    if _is_stop(facts, match.entry_id):
        return False
    origin = match.line.origin
    started = _workers_started(facts, origin.source)
    return origin.rank is None and started is not None and origin.line < started


def _is_stop(facts: Facts, entry_id: str) -> bool:
    return facts.relations.core(entry_id) == EXTERNAL_STOP


def _stop_incidents(facts: Facts, decision: Decision) -> list[Incident]:
    return [incident for incident in decision.roots if _is_stop(facts, incident.failure_id)]


def _comes_before(fault: Match, stop: Match) -> bool:
    """Whether an in-job fault may have come before the stop: by time when both are timed, by
    line order in one file, and yes when nothing orders them (an untimed line of another file).
    An untimed line was written after the timed line it inherits its time from: when even that
    is later than the stop, the fault came after it."""
    fault_origin, stop_origin = fault.line.origin, stop.line.origin
    if fault_origin.time is not None and stop_origin.time is not None:
        if not fault_origin.time_inherited or fault_origin.time > stop_origin.time + 1.0:
            return fault_origin.time <= stop_origin.time + 1.0
    if fault_origin.source == stop_origin.source:
        return fault_origin.line < stop_origin.line
    return True


@rule("external-stop-after-fault")
def stop_after_fault(facts: Facts, decision: Decision) -> Decision | None:
    """A scheduler stop, SIGTERM or preemption that came after an in-job fault is its consequence."""
    stops = _stop_incidents(facts, decision)
    if not stops:
        return None
    stop = min((incident.first for incident in stops), key=time_key)
    faults = [incident for incident in decision.roots if incident not in stops and _comes_before(incident.first, stop)
              and not facts.relations.explained_by(EXTERNAL_STOP, incident.failure_id)]
    faults += [Incident([match]) for match in decision.symptoms if _comes_before(match, stop)
               and not facts.relations.explained_by(EXTERNAL_STOP, match.entry_id) and not _is_stop(facts, match.entry_id)]
    if not faults:
        return None
    fault = faults[0].first
    return decision.with_because(
        "external-stop-after-fault",
        f"the job was stopped from outside ({stop.line.text.strip()[:90]}) only after an in-job fault "
        f"({fault.entry_id} at {fault.line.origin.source}:{fault.line.origin.line}): the stop is a consequence",
        [fault, stop], roots=tuple(i for i in decision.roots if i not in stops),
        symptoms=tuple(m for m in decision.symptoms if not _is_stop(facts, m.entry_id)))


def _work_streams(facts: Facts) -> list[StreamActivity]:
    return [stream for stream in facts.activity if not stream.unprefixed and stream.last_time is not None]


def _last_work(stream: StreamActivity, before: float) -> float | None:
    times = [line.time for line in stream.lines if line.time is not None and line.time < before - 1.0
             and not any(word in line.text for word in (*SCHEDULER_WORDS, *WAITING_WORDS))]
    return max(times) if times else None


def _cadence(streams: list[StreamActivity]) -> float:
    """The job's usual gap between lines: between progress lines where the streams show some."""
    gaps = []
    stepping = [stream for stream in streams if len(stream.progress) >= 2]
    for stream in stepping or streams:
        times = [line.time for line in (stream.progress if stepping else stream.lines) if line.time is not None]
        gaps += [later - earlier for earlier, later in zip(times, times[1:]) if later > earlier]
    return median(gaps) if gaps else 0.0


def _duration(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


@rule("external-stop-ended-a-hang")
def stop_ended_hang(facts: Facts, decision: Decision) -> Decision | None:
    """An external stop (the scheduler's, or Ctrl-C) is the cause only when the ranks were making
    progress until it came: after a long silence it only ended a hang."""
    from .ending import interrupts

    stops = _stop_incidents(facts, decision)
    timed = [incident.first for incident in stops if incident.first.line.origin.time is not None]
    timed += [match for match in interrupts(facts) if match.line.origin.time is not None and decision.current(match)]
    own = [match for match in timed if not match.line.origin.time_inherited]
    timed = own or timed  # a time carried from an earlier line only says the stop came after it
    if not timed:
        return None
    stop = min(timed, key=time_key)
    stop_time = stop.line.origin.time
    streams = _work_streams(facts)
    last = [value for stream in streams if (value := _last_work(stream, stop_time)) is not None]
    # progress printed by a process that names no rank (a driver, rank 0's unprefixed logger) is
    # the job working too
    last += [line.time for stream in facts.activity if stream.unprefixed for line in stream.progress
             if line.time is not None and line.time < stop_time - 1.0]
    if not last:
        return None
    idle = stop_time - max(last)
    said_stuck = _waiting_statements(facts, max(last), stop_time)
    if len(said_stuck) < STUCK_STATEMENTS and idle < max(HANG_IDLE_SECONDS, IDLE_CADENCE_FACTOR * _cadence(streams)):
        # a shorter silence, still long against the job's own pace, is a hang when one rank
        # visibly stopped before the others
        ranked = [stream for stream in streams if stream.rank is not None]
        if idle < max(HANG_IDLE_FLOOR_SECONDS, BEHIND_CADENCE_FACTOR * _cadence(streams)) or _behind(ranked) is None:
            return None
    reason = f"nothing was printed for {_duration(idle)} before the job was stopped from outside"
    if said_stuck:
        reason = ("nothing but notices that its processes were not answering "
                  f"({said_stuck[0].strip()[:70]!r}) was printed for {_duration(idle)} before the job was stopped from outside")
    return decision.with_because(
        "external-stop-ended-a-hang", f"{reason}: the stop ended a hang, it did not cause it", [stop],
        roots=tuple(i for i in decision.roots if i not in stops), hang=reason)


def _waiting_statements(facts: Facts, after: float, before: float) -> list[str]:
    """The lines between the last work and the stop in which the job says it is waiting."""
    return [line.text for stream in facts.activity for line in stream.lines
            if line.time is not None and after < line.time < before and any(word in line.text for word in WAITING_WORDS)]


def _behind(streams: list[StreamActivity]) -> StreamActivity | None:
    """The one stream whose last message the others all printed too and then went past."""
    if len(streams) < 2:
        return None
    logging = [stream for stream in streams if stream.progress]
    if len(logging) == 1 and _doing_work_alone(logging[0]):
        # only one rank logs progress (the others go quiet after their start-up lines, by design, so
        # their last lines say nothing of where they are: the steps it logged needed them); it was
        # last seen starting work of its own (evaluation, a checkpoint)
        return logging[0]
    # a rank last seen starting work of its own that it never said was done, with nothing printed
    # after it, says where it is; another's silence may be by design (ranks that log only their epochs)
    alone = _alone_at_work(streams)
    if alone is not None:
        return alone
    templates = {id(stream): [template(line.text) for line in stream.lines] for stream in streams}
    behind = []
    for stream in streams:
        own = templates[id(stream)]
        others = [other for other in streams if other is not stream]
        passed = [other for other in others if _went_past(own, templates[id(other)], alone=len(others) == 1)]
        if len(passed) == len(others):
            behind.append(stream)
    if len(behind) == 1:
        return behind[0]
    timed = [stream for stream in streams if stream.last_time is not None]
    if len(timed) < 2:
        return None
    ordered = sorted(timed, key=lambda stream: stream.last_time)
    earliest, rest = ordered[0], ordered[1:]
    spread = rest[-1].last_time - rest[0].last_time
    if rest[0].last_time - earliest.last_time <= max(60.0, 2 * spread):
        return None
    if len(rest) > 1:
        return earliest
    # one other rank: it went on printing what this one prints too, not only what it prints alone
    own = set(templates[id(earliest)])
    went_on = any(line.time is not None and line.time > earliest.last_time and template(line.text) in own
                  for line in rest[0].lines)
    return earliest if went_on else None


def _went_past(own: list[str], other: list[str], alone: bool) -> bool:
    """Whether another stream printed this one's last message and went on. When it is the only
    other one (two ranks), going on counts only with a message this one prints too: rank 0 often
    prints alone by design (a driver worker's model loading), which says nothing of the quiet one."""
    last = own[-1]
    seen = [index for index, text in enumerate(other[:-1]) if text == last]
    return bool(seen) and (not alone or any(text in own for text in other[seen[-1] + 1:]))


RANK_ALONE_WORK = ("evaluat", "validat", "saving", "checkpoint", "download", "predict", "tokeniz", "preprocess",
                   "loading", "uploading", "writing", "syncing")


RANK_ALONE_DONE = ("saved", "done", "finished", "complete", "wrote", "written", "loaded", "uploaded", "downloaded",
                   " took ")  # "loading weights took 71.4 seconds"


WORK_ALONE_SLACK_SECONDS = 1.0  # the others' last lines may carry the same instant (host clocks)


def _alone_at_work(streams: list[StreamActivity]) -> StreamActivity | None:
    """The one stream last seen starting work of its own ("rank 3: evaluating epoch 0"), when no
    other stream printed anything after it started: they were waiting for it (in a collective,
    silently) while it never said the work was done."""
    working = [stream for stream in streams if _doing_work_alone(stream)]
    if len(working) != 1 or working[0].last_time is None:
        return None
    started = working[0].last_time
    # the others' last times, a rank's files together (its stdout and stderr kept apart: torchrun's
    # --log-dir, mpirun's --output-filename); a file whose lines carry no time orders nothing
    last: dict = {}
    for other in streams:
        if other.rank != working[0].rank and other.last_time is not None:
            last[other.rank] = max(last.get(other.rank, other.last_time), other.last_time)
    untimed = {other.rank for other in streams if other.rank != working[0].rank} - set(last)
    if last and not untimed and all(time <= started + WORK_ALONE_SLACK_SECONDS for time in last.values()):
        return working[0]
    return None


def _doing_work_alone(stream: StreamActivity) -> bool:
    """Its last line starts work of its own ("saving checkpoint to ..."), not the end of it ("checkpoint saved")."""
    text = stream.last.text.lower() if stream.last else ""
    return any(word in text for word in RANK_ALONE_WORK) and not any(word in text for word in RANK_ALONE_DONE)


def activity_match(stream: StreamActivity, failure_id: str, line=None) -> Match:
    """A line of the stream (its last, unless given) as a match, to anchor a verdict no error line states."""
    last = line or stream.last
    signature = Signature(failure_id, "last-activity", "symptom", 0.5, "", "rank {rank} was last seen doing this")
    origin = Origin(stream.source, last.line, stream.rank, stream.host, last.time)
    return Match(signature, LogLine(last.text, origin), {}, 0)


@rule("hang-silent-first")
def silent_first(facts: Facts, decision: Decision) -> Decision | None:
    """In a hang, the rank whose output stopped first (the others printed its last message and
    went on) is where it started: it was busy elsewhere or stuck."""
    streams = [stream for stream in facts.activity if not stream.unprefixed and stream.rank is not None and stream.lines]
    if len({stream.rank for stream in streams}) < 2:
        return None
    stuck = _behind(streams)
    if stuck is None:
        return None
    anchor = activity_match(stuck, STRAGGLER)
    when = f" at {anchor.line.origin.time and _clock(anchor.line.origin.time)}" if anchor.line.origin.time else ""
    last = stuck.last.text.strip()[:90]
    if _doing_work_alone(stuck):
        reason = (f"rank {stuck.rank} was last seen{when} starting work of its own ({last!r}) and never said it "
                  f"was done; the other ranks printed nothing after it, waiting for it")
    else:
        reason = (f"rank {stuck.rank} fell silent first{when} (its last line: {last!r}); "
                  f"the other ranks printed that step and went on, then waited for it")
    if decision.hang:
        reason += f"; {decision.hang}"
    return decision.with_because("hang-silent-first", reason, [anchor], note=reason,
                                 status="failure", primary=STRAGGLER, initiating=anchor)


def _clock(seconds: float) -> str:
    from ...render.contract import iso_time

    return iso_time(seconds) or ""


def hung(facts: Facts, decision: Decision) -> bool:
    return not decision.status and (bool(decision.hang) or bool(facts.timeouts) or len(facts.hang_stacks) >= 2)


@rule("hang-unattributed")
def hang_unattributed(facts: Facts, decision: Decision) -> Decision | None:
    """The job hung and was stopped from outside, and the logs do not show which rank stopped first."""
    if not decision.hang:
        return None
    stops = [m for m in facts.winners if _is_stop(facts, m.entry_id)]
    if not stops:
        return None
    anchor = min(stops, key=time_key)
    anchor = replace(anchor, signature=replace(anchor.signature, entry_id=STRAGGLER))
    reason = f"{decision.hang}; the logs do not show which rank stopped first"
    return decision.with_because("hang-unattributed", reason, [anchor], note=reason,
                                 status="failure", primary=STRAGGLER, initiating=anchor)
