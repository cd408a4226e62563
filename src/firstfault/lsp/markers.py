"""A diagnosis -> the lines an editor marks: the first fault, the rest of its evidence, collateral.

    markers_for(diagnosis, kb, matches) -> [Marker, ...]

The first fault is an error on its exact line, linked to everything that followed from it; the
other evidence of the same failure is a warning; collateral is information, linked back to the
first fault. A diagnosis names one line per collateral group; `matches` (the resolved hits of the
scans the diagnosis was made from) add each collateral rank's own first line of that failure, so
whichever rank's file is open shows why it failed. A healthy run marks nothing. Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath

from ..correlate.verdict import evidence_of
from ..model import Diagnosis, Evidence, Finding, Match
from ..render.diagnosis_text import entry_or_none, start_of, who

ERROR, WARNING, INFORMATION = "error", "warning", "information"
FIRST_FAULT, SAME_FAILURE, COLLATERAL, ERROR_LINE, FAILURE_SEEN = (
    "first-fault", "same-failure", "collateral", "error-line", "failure-seen")
MAX_MARKERS = 2000  # a 4,096-rank cascade still marks every rank's file up to this many lines
MAX_RELATED = 64  # links from the first fault to what followed (editors list them all)
MESSAGE_TEXT = 300  # characters of a log line quoted in a message


@dataclass(frozen=True)
class Related:
    """A link from one marker to another line."""

    source: str
    line: int
    message: str


@dataclass(frozen=True)
class Marker:
    """One line to mark: `source` as the diagnosis names the file, `line` 1-based."""

    source: str
    line: int
    severity: str
    kind: str
    entry_id: str  # the knowledge-base entry that explains the line
    message: str
    text: str  # the (masked) log line
    related: tuple[Related, ...] = ()
    rank: int | None = None
    host: str | None = None

    def as_evidence(self) -> Evidence:
        return Evidence(self.source, self.line, self.rank, self.host, None, self.text)


def title_of(kb, entry_id: str) -> str:
    entry = entry_or_none(kb, entry_id) if kb is not None else None
    return entry.title if entry else entry_id


def place(evidence: Evidence) -> str:
    """`rank2.log:16`: where a line is, short enough for a message."""
    return f"{PurePath(evidence.source).name}:{evidence.line}"


def markers_for(diagnosis: Diagnosis, kb, matches: Iterable[Match] = ()) -> list[Marker]:
    """Every line to mark for this diagnosis, the first fault first."""
    if diagnosis.status == "healthy":
        return []
    if diagnosis.primary is None or diagnosis.initiating is None:
        return _unexplained(diagnosis, kb)[:MAX_MARKERS]
    primary, first = diagnosis.primary, diagnosis.initiating
    title = title_of(kb, primary.failure_id)
    back = Related(first.source, first.line, f"first fault: {title} ({start_of(diagnosis)})")
    seen = {(first.source, first.line)}
    same = []
    for item in primary.evidence:
        if (item.source, item.line) in seen:
            continue
        seen.add((item.source, item.line))
        same.append(Marker(item.source, item.line, WARNING, SAME_FAILURE, primary.failure_id,
                           f"{title} ({who(item)}): evidence of the first fault, which started on {start_of(diagnosis)} at {place(first)}",
                           item.text, (back,), item.rank, item.host))
    collateral = []
    for finding, item in _collateral_lines(diagnosis.collateral, list(matches)):
        if (item.source, item.line) in seen:
            continue
        seen.add((item.source, item.line))
        collateral.append(Marker(item.source, item.line, INFORMATION, COLLATERAL, finding.failure_id,
                                 f"Collateral, not the cause: {title_of(kb, finding.failure_id)} ({who(item)}). "
                                 f"It follows the first fault, {title} on {start_of(diagnosis)} at {place(first)}",
                                 item.text, (back,), item.rank, item.host))
    followed = [Related(marker.source, marker.line, _link_text(marker, kb)) for marker in same + collateral]
    cause = f": {primary.message}" if primary.message else f": {_quote(first.text)}"
    head = Marker(first.source, first.line, ERROR, FIRST_FAULT, primary.failure_id,
                  f"{title} — first fault, {start_of(diagnosis)}{cause}", first.text, tuple(followed[:MAX_RELATED]),
                  first.rank, first.host)
    return [head, *same, *collateral][:MAX_MARKERS]


def _unexplained(diagnosis: Diagnosis, kb) -> list[Marker]:
    """`unknown`: something failed that no entry explains; mark the likely error lines and the
    failures seen, none of them called the cause."""
    markers = [Marker(item.source, item.line, WARNING, ERROR_LINE, "",
                      f"Likely error line ({who(item)}): the job failed, but no knowledge-base entry explains it",
                      item.text, (), item.rank, item.host)
               for item in diagnosis.error_lines]
    for finding, item in _collateral_lines(diagnosis.collateral, []):
        markers.append(Marker(item.source, item.line, INFORMATION, FAILURE_SEEN, finding.failure_id,
                              f"Failure seen: {title_of(kb, finding.failure_id)} ({who(item)})", item.text, (),
                              item.rank, item.host))
    return markers


def _collateral_lines(findings: Iterable[Finding], matches: list[Match]) -> list[tuple[Finding, Evidence]]:
    """Each collateral finding's evidence, then the first line of that failure on each of its
    ranks (by file order) that the evidence does not already show."""
    by_entry: dict[str, list[Match]] = {}
    for match in matches:
        by_entry.setdefault(match.entry_id, []).append(match)
    lines = []
    for finding in findings:
        lines += [(finding, item) for item in finding.evidence]
        wanted = set(finding.ranks) - {item.rank for item in finding.evidence}
        for match in by_entry.get(finding.failure_id, ()) if wanted else ():
            if match.line.origin.rank in wanted:
                wanted.discard(match.line.origin.rank)
                lines.append((finding, evidence_of(match)))
    return lines


def _link_text(marker: Marker, kb) -> str:
    what = "same failure" if marker.kind == SAME_FAILURE else f"collateral: {title_of(kb, marker.entry_id)}"
    return f"{what} ({who(marker.as_evidence())})"


def _quote(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_TEXT else text[:MESSAGE_TEXT] + " …"
