"""From matches to events: one winning signature per line, time order, incidents per rank."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from ..model import Match

INCIDENT_GAP_LINES = 80  # root lines this close on one rank's stream belong to one incident
INCIDENT_GAP_SECONDS = 30.0


def time_key(match: Match) -> tuple:
    """Order by time; lines without a time go after timed ones, in input order. A time known
    only to the second (torchrun's failure table, syslog) may lie anywhere in that second, so it
    sorts after precise times of the same second."""
    time = match.line.origin.time
    if time is None:
        return (math.inf, match.order)
    if time == int(time):
        time += 0.9995
    return (time, match.order)


# A warning is not where a failure starts: "UserWarning: ... CUDA out of memory" was survived.
_WARNING_LINE = re.compile(r"\b[A-Z][A-Za-z]*Warning: ")
WARNING_DEMOTION = 0.6


def demote_warning(match: Match) -> Match:
    """A root hit on a warning line counts only as a weaker symptom."""
    text = match.line.text
    if match.role != "root" or "NCCL WARN" in text or not _WARNING_LINE.search(text[:400]):
        return match
    signature = replace(match.signature, role="symptom", weight=match.signature.weight * WARNING_DEMOTION)
    return replace(match, signature=signature)


def line_winners(matches: list[Match]) -> list[Match]:
    """Per input line, the failure signature with the highest weight (context hits excluded)."""
    best: dict[tuple[str, int], Match] = {}
    for match in matches:
        if match.role == "context":
            continue
        match = demote_warning(match)
        key = (match.line.origin.source, match.line.origin.line)
        current = best.get(key)
        if current is None or match.signature.weight > current.signature.weight:
            best[key] = match
    return sorted(best.values(), key=lambda match: match.order)


@dataclass
class Incident:
    """Consecutive root lines on one rank's stream: one failure as that rank saw it."""

    matches: list[Match] = field(default_factory=list)

    @property
    def first(self) -> Match:
        return self.matches[0]

    @property
    def strongest(self) -> Match:
        return max(self.matches, key=lambda match: (match.signature.weight, -match.order))

    @property
    def weight(self) -> float:
        return self.strongest.signature.weight

    @property
    def failure_id(self) -> str:
        return self.strongest.entry_id

    @property
    def rank(self) -> int | None:
        return self.first.line.origin.rank


def _stream(match: Match) -> tuple:
    origin = match.line.origin
    return (origin.source, origin.rank, origin.host)


def _continues(incident: Incident, match: Match) -> bool:
    last = incident.matches[-1].line.origin
    origin = match.line.origin
    if origin.line - last.line > INCIDENT_GAP_LINES:
        return False
    if origin.time is not None and last.time is not None and origin.time - last.time > INCIDENT_GAP_SECONDS:
        return False
    return True


def incidents(winners: list[Match], roles: tuple[str, ...]) -> list[Incident]:
    """Group the winning lines of the given roles into incidents, earliest first."""
    open_incidents: dict[tuple, Incident] = {}
    result: list[Incident] = []
    for match in winners:
        if match.role not in roles:
            continue
        stream = _stream(match)
        incident = open_incidents.get(stream)
        if incident is not None and _continues(incident, match):
            incident.matches.append(match)
            continue
        incident = Incident([match])
        open_incidents[stream] = incident
        result.append(incident)
    return sorted(result, key=lambda incident: time_key(incident.first))
