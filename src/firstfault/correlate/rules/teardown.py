"""Filter rules: what happened after the job had already started failing is not its cause."""
from __future__ import annotations

from ...model import Match
from ..events import time_key
from ..facts import Facts
from . import Decision, rule

CONSEQUENCE_SLACK_SECONDS = 1.0  # clocks of different hosts; times carried forward from earlier lines
LAUNCHER_SLACK_SECONDS = 0.2  # the launcher's report has its own exact time; only host clocks differ


def not_after(boundary: tuple | None, match: Match, slack: float = CONSEQUENCE_SLACK_SECONDS) -> bool:
    """Whether a line may have happened before the boundary (an untimed line may have)."""
    if boundary is None or match.line.origin.time is None:
        return True
    return time_key(match)[0] <= boundary[0] + slack


def _narrowed(decision: Decision, boundary: tuple, slack: float) -> tuple[tuple, tuple]:
    roots = tuple(incident for incident in decision.roots if not_after(boundary, incident.first, slack))
    symptoms = tuple(match for match in decision.symptoms if not_after(boundary, match, slack))
    return roots, symptoms


def _dropped(decision: Decision, roots: tuple, symptoms: tuple) -> int:
    return len(decision.roots) - len(roots) + len(decision.symptoms) - len(symptoms)


@rule("teardown-after-first-timeout")
def after_first_timeout(facts: Facts, decision: Decision) -> Decision | None:
    """Errors that begin after the first collective timeout are its consequences."""
    timeouts = [match for match in facts.timeouts if match.line.origin.time is not None]
    if not timeouts:
        return None
    first = min(timeouts, key=time_key)
    roots, symptoms = _narrowed(decision, time_key(first), CONSEQUENCE_SLACK_SECONDS)
    dropped = _dropped(decision, roots, symptoms)
    if not dropped:
        return None
    return decision.with_because(
        "teardown-after-first-timeout",
        f"{dropped} error(s) began after the first collective timeout (rank {first.line.origin.rank}): they are its consequences",
        [first], roots=roots, symptoms=symptoms)


@rule("teardown-after-launcher-report")
def after_launcher_report(facts: Facts, decision: Decision) -> Decision | None:
    """Once the launcher reported a worker failing, what other processes print is teardown."""
    reports = [match for match in facts.launcher_failures if match.line.origin.time is not None]
    if not reports:
        return None
    first = min(reports, key=time_key)
    roots, symptoms = _narrowed(decision, time_key(first), LAUNCHER_SLACK_SECONDS)
    if not roots:
        return None  # nothing came before the report: the report is all there is to go on
    dropped = _dropped(decision, roots, symptoms)
    if not dropped:
        return None
    return decision.with_because(
        "teardown-after-launcher-report",
        f"{dropped} error(s) came after the launcher reported a worker failing: they are teardown",
        [first], roots=roots, symptoms=symptoms)


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
    causes = list(decision.roots)
    explained = [incident for incident in decision.roots
                 if any(cause is not incident and facts.relations.explained_by(cause.failure_id, incident.failure_id)
                        and not _clearly_after(cause.first, incident.first) for cause in causes)]
    explained_symptoms = [match for match in decision.symptoms
                          if any(facts.relations.explained_by(cause.failure_id, match.entry_id)
                                 and not _clearly_after(cause.first, match) for cause in causes)]
    if not explained and not explained_symptoms:
        return None
    example = (explained[0].first if explained else explained_symptoms[0])
    cause = next(c for c in causes if facts.relations.explained_by(c.failure_id, example.entry_id))
    return decision.with_because(
        "explained-by-another",
        f"{len(explained) + len(explained_symptoms)} error(s) are consequences of another one "
        f"(e.g. {example.entry_id} is explained by {cause.failure_id})", [cause.first, example],
        roots=tuple(i for i in decision.roots if i not in explained),
        symptoms=tuple(m for m in decision.symptoms if m not in explained_symptoms))
