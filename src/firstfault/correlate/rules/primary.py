"""Primary rules: which of the remaining errors is the first fault (the first that applies decides)."""
from __future__ import annotations

from ...model import Match
from ..events import time_key
from ..facts import Facts
from . import Decision, rule

SPECIFICITY_MARGIN = 0.35  # an error this much weaker than the strongest one is not the primary
SYMPTOM_MARGIN = 0.1  # symptoms this close to the strongest are equals: the earliest wins


def _where(match: Match) -> str:
    origin = match.line.origin
    who = f"rank {origin.rank}" if origin.rank is not None else "a process that names no rank"
    return f"{who} ({origin.source}:{origin.line})"


def _strongest(decision: Decision) -> float:
    return max(incident.weight for incident in decision.roots)


def _first_eligible_root(decision: Decision):
    strongest = _strongest(decision)
    return next(incident for incident in decision.roots if incident.weight >= strongest - SPECIFICITY_MARGIN)


@rule("specific-symptom-over-generic-root")
def specific_symptom(facts: Facts, decision: Decision) -> Decision | None:
    """A generic root (any exception) loses to an earlier, or much stronger, specific symptom."""
    if not decision.roots:
        return None
    strongest = _strongest(decision)
    specific = [match for match in decision.symptoms if match.signature.weight >= strongest + SPECIFICITY_MARGIN / 2]
    if not specific:
        return None
    earliest = min(specific, key=time_key)
    first = _first_eligible_root(decision)
    if not (time_key(earliest) < time_key(first.first) or earliest.signature.weight >= strongest + SPECIFICITY_MARGIN):
        return None
    return decision.with_because(
        "specific-symptom-over-generic-root",
        f"{earliest.entry_id} on {_where(earliest)} is more specific than the generic error {first.failure_id}",
        [earliest, first.first], status="failure", primary=earliest.entry_id, initiating=earliest)


@rule("earliest-strong-root")
def earliest_root(facts: Facts, decision: Decision) -> Decision | None:
    """The earliest root error among those nearly as specific as the strongest."""
    if not decision.roots:
        return None
    first = _first_eligible_root(decision)
    others = len({incident.rank for incident in decision.roots if incident is not first})
    text = f"{first.failure_id} on {_where(first.first)} is the earliest error that can start a failure"
    if others:
        text += f"; {len(decision.roots) - 1} later or weaker error(s) elsewhere"
    return decision.with_because("earliest-strong-root", text, [first.first],
                                 status="failure", primary=first.failure_id, initiating=first.strongest)


@rule("strongest-symptom")
def strongest_symptom(facts: Facts, decision: Decision) -> Decision | None:
    """With no root error, the earliest of the most specific symptoms."""
    if not decision.symptoms:
        return None
    best = max(match.signature.weight for match in decision.symptoms)
    chosen = min((m for m in decision.symptoms if m.signature.weight >= best - SYMPTOM_MARGIN), key=time_key)
    return decision.with_because(
        "strongest-symptom", f"no error that starts a failure by itself; {chosen.entry_id} on {_where(chosen)} is the most specific sign",
        [chosen], status="failure", primary=chosen.entry_id, initiating=chosen)
