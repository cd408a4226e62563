"""Filter rules: what happened after the job had already started failing is not its cause."""
from __future__ import annotations

from ...model import Match
from ..events import time_key
from ..facts import Facts
from ..ids import ABORT_SIGNATURES, CLOSING_SIGNAL, NATIVE_CRASH
from . import Decision, rule

CONSEQUENCE_SLACK_SECONDS = 1.0  # clocks of different hosts; times carried forward from earlier lines
WHAT_LINES = 3  # an exception's what() text follows `terminate called after throwing` within this many lines
LAUNCHER_SLACK_SECONDS = 0.2  # the launcher's report has its own exact time; only host clocks differ


def not_after(boundary: tuple | None, match: Match, slack: float = CONSEQUENCE_SLACK_SECONDS) -> bool:
    """Whether a line may have happened before the boundary (an untimed line may have)."""
    if boundary is None or match.line.origin.time is None:
        return True
    return time_key(match)[0] <= boundary[0] + slack


def _narrowed(decision: Decision, boundary: tuple | None, slack: float, own_timeouts: dict | None = None) -> tuple[tuple, tuple]:
    own_timeouts = own_timeouts or {}

    def keep(match: Match) -> bool:
        origin = match.line.origin
        own = own_timeouts.get((origin.source, origin.rank))
        return not_after(boundary, match, slack) and (own is None or origin.line <= own)

    roots = tuple(incident for incident in decision.roots if keep(incident.first))
    symptoms = tuple(match for match in decision.symptoms if keep(match))
    return roots, symptoms


def _dropping(decision: Decision, roots: tuple, symptoms: tuple, boundary: Match, rule_id: str, why: str) -> Decision | None:
    """The decision without the errors past a boundary, or None when none were."""
    dropped = len(decision.roots) - len(roots) + len(decision.symptoms) - len(symptoms)
    if not dropped:
        return None
    return decision.with_because(rule_id, f"{dropped} error(s) {why}", [boundary], roots=roots, symptoms=symptoms)


def _timeout_time(match: Match) -> tuple:
    """When a timeout fired, as far as the logs tell: its own time; or, when it carries none and
    inherits the time of the rank's previous line, that time plus the wait the line states
    (`Timeout(ms)=600000`): the rank blocked in the collective after printing that line."""
    key = time_key(match)
    waited = match.captures.get("timeout_ms") or match.captures.get("ran_ms")
    if match.line.origin.time_inherited and waited and str(waited).isdigit():
        return (key[0] + int(waited) / 1000.0, key[1])
    return key


@rule("teardown-after-first-timeout")
def after_first_timeout(facts: Facts, decision: Decision) -> Decision | None:
    """Errors that begin after the first collective timeout are its consequences."""
    if not facts.timeouts:
        return None
    timed = [match for match in facts.timeouts if match.line.origin.time is not None]
    first = min(timed, key=_timeout_time) if timed else facts.timeouts[0]
    # a process's own errors after its own timeout (the watchdog's abort) are its teardown, timed or not
    own: dict = {}
    for match in facts.timeouts:
        key = (match.line.origin.source, match.line.origin.rank)
        own[key] = min(own.get(key, match.line.origin.line), match.line.origin.line)
    roots, symptoms = _narrowed(decision, _timeout_time(first) if timed else None, CONSEQUENCE_SLACK_SECONDS, own)
    # an abort whose reason, printed on the next lines (`what(): ... Watchdog caught collective
    # operation timeout`), is a timeout: the watchdog ending that process
    reasons = {(m.line.origin.source, m.line.origin.line) for m in facts.collateral}
    symptoms = tuple(match for match in symptoms if not any(
        (match.line.origin.source, match.line.origin.line + step) in reasons for step in range(1, WHAT_LINES + 1))
        and not (match.signature.key in ABORT_SIGNATURES and not _clearly_before(match, first)))
    return _dropping(decision, roots, symptoms, first, "teardown-after-first-timeout",
                     f"began after the first collective timeout (rank {first.line.origin.rank}): they are its consequences")


def _after(match: Match, earlier: Match) -> bool:
    """Whether `match` was printed after `earlier`: later in the same text, or clearly later in time."""
    origin, other = match.line.origin, earlier.line.origin
    if origin.source == other.source:
        return origin.line > other.line
    return _clearly_before(earlier, match)


@rule("teardown-after-own-failure")
def after_own_failure(facts: Facts, decision: Decision) -> Decision | None:
    """A rank that had already failed waiting for a peer (a lost connection, a timeout) and then died
    by a signal (a C++ `terminate` at exit, an abort while tearing down) died of the failure it was
    part of: its signal death is not a first fault of its own."""
    waited: dict = {}  # rank -> its first collateral line
    for match in facts.collateral:
        rank = match.line.origin.rank
        if rank is not None and (rank not in waited or time_key(match) < time_key(waited[rank])):
            waited[rank] = match

    def teardown(match: Match) -> bool:
        first = waited.get(match.line.origin.rank)
        return match.entry_id == NATIVE_CRASH and first is not None and _after(match, first)

    roots = tuple(incident for incident in decision.roots if not teardown(incident.first))
    symptoms = tuple(match for match in decision.symptoms if not teardown(match))
    example = next((m for m in (*decision.symptoms, *(i.first for i in decision.roots)) if teardown(m)), None)
    if example is None:
        return None
    return _dropping(decision, roots, symptoms, waited[example.line.origin.rank], "teardown-after-own-failure",
                     f"are signal deaths of ranks that had already failed waiting for a peer (e.g. rank "
                     f"{example.line.origin.rank}): they died of that failure")


@rule("teardown-after-launcher-report")
def after_launcher_report(facts: Facts, decision: Decision) -> Decision | None:
    """Once the launcher reported a worker failing, what other processes print is teardown."""
    # (its `Sending process P closing signal SIGTERM` to the others says the same: it is stopping them)
    stopping = [match for match in facts.matches if match.signature.name == CLOSING_SIGNAL]
    # a report whose time was carried from an earlier line came at that time or later: it places nothing
    reports = [match for match in (*facts.launcher_failures, *stopping)
               if match.line.origin.time is not None and not match.line.origin.time_inherited]
    if not reports:
        return None
    first = min(reports, key=time_key)
    roots, symptoms = _narrowed(decision, time_key(first), LAUNCHER_SLACK_SECONDS)
    waited_before = any(not_after(time_key(first), match, LAUNCHER_SLACK_SECONDS) for match in facts.timeouts)
    if not roots and not waited_before:
        return None  # nothing came before the report: the report is all there is to go on
    # (ranks that timed out before it: the job hung first, and the hang decides)
    return _dropping(decision, roots, symptoms, first, "teardown-after-launcher-report",
                     "came after the launcher reported a worker failing: they are teardown")


# preempted-sigterm's signatures: a process reporting the SIGTERM it got (Lightning's signal
# connector, abseil's handler), and those that say the launcher or the scheduler was told to stop
SIGTERM_RECEIVED = "sigterm-received"
JOB_STOPPED_FROM_OUTSIDE = ("agent-death-signal", "signal-exception", "slurm-cancelled-due-to", "submitit-preempted")


@rule("sigterm-from-the-launcher")
def sigterm_from_the_launcher(facts: Facts, decision: Decision) -> Decision | None:
    """A rank that reports the SIGTERM it got, in a job whose launcher said it was stopping its
    workers with SIGTERM (`Sending process P closing signal SIGTERM`) and was not itself told to
    stop (no death signal of its own, no scheduler's cancel), got that SIGTERM from the launcher:
    the report is the launcher's teardown after another worker failed, not a preemption. (The
    report's line often carries no time of its own, so the launcher-report rule cannot place it.)"""
    stopping = [match for match in facts.matches if match.signature.name == CLOSING_SIGNAL]
    if not stopping or any(match.signature.name in JOB_STOPPED_FROM_OUTSIDE for match in facts.matches):
        return None

    def from_launcher(match: Match) -> bool:
        return match.signature.name == SIGTERM_RECEIVED and match.line.origin.rank is not None

    roots = tuple(incident for incident in decision.roots if not from_launcher(incident.first))
    symptoms = tuple(match for match in decision.symptoms if not from_launcher(match))
    return _dropping(decision, roots, symptoms, min(stopping, key=time_key), "sigterm-from-the-launcher",
                     "are ranks reporting the SIGTERM their launcher sent them while it stopped its workers")


EXPLAINED_SLACK_SECONDS = 5.0  # host clocks differ; a cause logged a little after its effect still explains it


def _clearly_after(cause, effect) -> bool:
    cause_time, effect_time = cause.line.origin.time, effect.line.origin.time
    if cause_time is None or effect_time is None or cause.line.origin.time_inherited:
        return False
    return cause_time > effect_time + EXPLAINED_SLACK_SECONDS


@rule("explained-by-another")
def explained_by_another(facts: Facts, decision: Decision) -> Decision | None:
    """An error that another error of the run explains (an Xid 79 explains the CUDA errors of the
    process on that GPU) is its consequence, unless it clearly came first."""
    # causes: every root incident and symptom (an IB port error explains the completion errors after it)
    causes = [(incident.failure_id, incident.first) for incident in decision.roots]
    causes += [(match.entry_id, match) for match in decision.symptoms]

    def explained_by(effect_id: str, effect) -> tuple | None:
        return next(((cause_id, first) for cause_id, first in causes if first is not effect
                     and facts.relations.explained_by(cause_id, effect_id) and not _clearly_after(first, effect)), None)

    explained = [incident for incident in decision.roots if explained_by(incident.failure_id, incident.first)]
    explained_symptoms = [match for match in decision.symptoms if explained_by(match.entry_id, match)]
    if not explained and not explained_symptoms:
        return None
    example = (explained[0].first if explained else explained_symptoms[0])
    cause_id, cause_first = explained_by(example.entry_id, example)
    return decision.with_because(
        "explained-by-another",
        f"{len(explained) + len(explained_symptoms)} error(s) are consequences of another one "
        f"(e.g. {example.entry_id} is explained by {cause_id})", [cause_first, example],
        roots=tuple(i for i in decision.roots if i not in explained),
        symptoms=tuple(m for m in decision.symptoms if m not in explained_symptoms))


MISSING_AFTER_LINES = 12  # a stall warning lists the ranks it waits for on the lines after it


@rule("waiting-for-a-failed-rank")
def waiting_for_failed_rank(facts: Facts, decision: Decision) -> Decision | None:
    """A rank that reported waiting for others (Horovod's stall warning, with the ranks it waited
    for listed after it) only waited: when those ranks raised errors of their own, the wait is a
    consequence of their failure."""
    from ...match.context import MISSING_RANKS

    failed = {incident.rank for incident in decision.roots if incident.rank is not None}
    lists = [m for m in facts.matches if m.signature.name == MISSING_RANKS]
    if not failed or not lists:
        return None

    def waited_for(match: Match) -> set:
        origin = match.line.origin
        return {int(rank) for listed in lists if listed.line.origin.source == origin.source
                and listed.line.origin.rank == origin.rank and 0 <= listed.line.origin.line - origin.line <= MISSING_AFTER_LINES
                for rank in listed.captures["ranks"].replace(" ", "").split(",")}

    waiting_roots = [i for i in decision.roots if (waited_for(i.first) & failed) - {i.rank}]
    waiting_symptoms = [m for m in decision.symptoms if (waited_for(m) & failed) - {m.line.origin.rank}]
    if not waiting_roots and not waiting_symptoms:
        return None
    example = waiting_roots[0].first if waiting_roots else waiting_symptoms[0]
    named = sorted(waited_for(example) & failed)
    text = (f"rank {example.line.origin.rank} only waited for rank(s) {', '.join(map(str, named))}, which failed with "
            f"errors of their own: its {example.entry_id} report is a consequence")
    return decision.with_because("waiting-for-a-failed-rank", text, [example],
                                 roots=tuple(i for i in decision.roots if i not in waiting_roots),
                                 symptoms=tuple(m for m in decision.symptoms if m not in waiting_symptoms))


def _clearly_before(match: Match, boundary: Match) -> bool:
    origin, other = match.line.origin, boundary.line.origin
    return (origin.time is not None and other.time is not None and not origin.time_inherited
            and origin.time < other.time - CONSEQUENCE_SLACK_SECONDS)


LOOPBACK_WEIGHT = 0.75  # as specific as a named interface error: it explains every connect failure after it


@rule("loopback-across-hosts")
def loopback_across_hosts(facts: Facts, decision: Decision) -> Decision | None:
    """NCCL on the loopback interface is right on one host; in a job over several hosts the
    peers cannot reach the address it advertises."""
    from dataclasses import replace as _replace

    from ...match.context import NCCL_LOOPBACK
    from ..ids import VIRTUAL_INTERFACE

    hosts = set(facts.inputs.hosts) | set(facts.identity.named)
    loopbacks = [m for m in facts.matches if m.signature.name == NCCL_LOOPBACK]
    if len(hosts) < 2 or not loopbacks:
        return None
    first = min(loopbacks, key=time_key)
    signature = _replace(first.signature, entry_id=VIRTUAL_INTERFACE, role="symptom", weight=LOOPBACK_WEIGHT,
                         message="NCCL on {host} uses the loopback interface ({address}) in a job over several hosts")
    symptom = _replace(first, signature=signature)
    return decision.with_because(
        "loopback-across-hosts",
        f"NCCL uses the loopback interface ({first.captures.get('address')}) while the job runs on {len(hosts)} hosts: "
        "peers on other hosts cannot reach it", [first], symptoms=decision.symptoms + (symptom,))
