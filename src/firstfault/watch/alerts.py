"""Alerts: what the watcher tells people, once, and then only what changed.

`AlertBook.from_diagnosis` turns each new Diagnosis into at most one alert: `failure` when a first
fault appears, `update` when the first fault changes (an earlier one arrived late) or its
collateral grows; `from_hang` raises `hang` once per episode and `resolved` when progress resumes.
Alerts carry plain values only, so every sink can render them without the engine. Every alert
is made in `_next`, which passes all its text through the masker: no sink sees an unmasked line.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from ..mask import mask_secrets
from ..model import Diagnosis, map_strings
from ..render.contract import iso_time
from ..render.diagnosis_text import no_single_rank
from .progress import HangVerdict

ROOT_ROLES = ("root", "symptom")  # a first fault of these roles is alerted at once; collateral-only waits
COLLATERAL_ONLY_SETTLE_SECONDS = 2.0


@dataclass(frozen=True)
class Alert:
    kind: str  # failure | update | hang | resolved
    failure_id: str
    summary: str
    rank: int | None = None
    host: str | None = None
    source: str | None = None
    line: int | None = None
    text: str = ""
    fault_time: float | None = None  # the log's own time of the initiating line
    confidence: float | None = None
    ranks: tuple[int, ...] = ()  # hang: the ranks that stopped first
    collateral: tuple[dict, ...] = ()  # {failure_id, ranks, count}
    no_single_rank: str = ""  # no rank named because a rule decided none started it ("every rank alike")
    emitted_at: float = field(default_factory=time.time)
    sequence: int = 0

    def to_dict(self) -> dict:
        data = asdict(self)
        data["schema"] = "firstfault.alert/1"
        data["ranks"] = list(self.ranks)
        data["collateral"] = [dict(item) for item in self.collateral]
        data["fault_time"] = iso_time(self.fault_time)
        data["emitted_at"] = iso_time(self.emitted_at, zoned=True)  # this machine's clock
        return data

    def headline(self) -> str:
        if self.kind == "hang":
            who = ", ".join(f"rank {rank}" for rank in self.ranks) or "every rank"
            return f"HANG: {who} stopped making progress first ({self.summary})"
        if self.kind == "resolved":
            return f"resolved: {self.summary}"
        where = f"rank {self.rank}" if self.rank is not None else (self.no_single_rank or "rank unknown")
        if self.host:
            where += f" on {self.host}"
        prefix = "FIRST FAULT" if self.kind == "failure" else "update"
        return f"{prefix}: {self.failure_id} on {where}: {self.summary or self.text}"


class AlertBook:
    """Remembers what was said, so each change is said once."""

    def __init__(self, masker=mask_secrets) -> None:
        self.masker = masker  # text -> masked text: secrets, and hosts with --mask-hosts
        self.sequence = 0
        self.primary_key: tuple | None = None
        self.collateral_key: tuple = ()
        self.hang_key: tuple | None = None
        self.collateral_only_since: float | None = None
        self.failure_alerted = False
        self.where: dict | None = None  # where the last failure alert said the fault started
        self.summary = ""

    def _next(self, **values) -> Alert:
        self.sequence += 1
        return map_strings(Alert(sequence=self.sequence, **values), self.masker, skip={"kind", "failure_id"})

    def from_diagnosis(self, diagnosis: Diagnosis, now: float, settled: bool = False) -> Alert | None:
        """`settled`: no new input for a while (or the job ended): collateral-only verdicts may be said."""
        if diagnosis.status == "unknown":
            return self._unknown(diagnosis, settled)
        if diagnosis.status != "failure" or diagnosis.primary is None:
            return None
        primary, initiating = diagnosis.primary, diagnosis.initiating
        role = primary.evidence[0].role if primary.evidence else ""
        if (role not in ROOT_ROLES or _before_any_worker(diagnosis)) and not settled:
            if self.collateral_only_since is None:
                self.collateral_only_since = now
            if now - self.collateral_only_since < COLLATERAL_ONLY_SETTLE_SECONDS:
                return None
        where, summary = _where(initiating), primary.message
        if self.where is not None and self.primary_key and self.primary_key[0] == primary.failure_id \
                and where["rank"] is None and self.where["rank"] is not None:
            # the same failure re-anchored on a line that names no rank (a launcher's summary of
            # it): the rank-bearing line said before stays the one reported
            where, summary = self.where, self.summary
        key = (primary.failure_id, where["rank"], where["source"], where["line"])
        collateral = tuple(
            {"failure_id": item.failure_id, "ranks": list(item.ranks), "count": item.count}
            for item in diagnosis.collateral)
        collateral_key = tuple((item["failure_id"], tuple(item["ranks"]), item["count"]) for item in collateral)
        if key == self.primary_key and {c[:2] for c in collateral_key} == {c[:2] for c in self.collateral_key}:
            self.collateral_key = collateral_key  # nothing new, or only counts grew: not worth a message
            return None
        kind = "failure" if not self.failure_alerted else "update"
        self.primary_key, self.collateral_key, self.failure_alerted = key, collateral_key, True
        self.where, self.summary = where, summary
        alike = no_single_rank(step.rule for step in diagnosis.because) if where["rank"] is None else ""
        return self._next(kind=kind, failure_id=primary.failure_id, summary=summary,
                          confidence=round(primary.confidence, 3), collateral=collateral, no_single_rank=alike, **where)

    def _unknown(self, diagnosis: Diagnosis, settled: bool) -> Alert | None:
        """Something failed that no entry explains: said once the input has settled."""
        if not settled or self.failure_alerted:
            return None
        first = diagnosis.error_lines[0] if diagnosis.error_lines else None
        self.primary_key, self.failure_alerted = ("unknown",), True
        return self._next(
            kind="failure", failure_id="unknown",
            summary="something failed (a traceback or a non-zero exit) that no knowledge-base entry explains",
            rank=first.rank if first else None, host=first.host if first else None,
            source=first.source if first else None, line=first.line if first else None,
            text=first.text if first else "", fault_time=first.time if first else None,
        )

    def from_hang(self, verdict: HangVerdict | None) -> Alert | None:
        if verdict is None:
            if self.hang_key is None:
                return None
            self.hang_key = None
            return self._next(kind="resolved", failure_id="hang", summary="progress resumed")
        key = verdict.labels
        if key == self.hang_key:
            return None
        self.hang_key = key
        first = verdict.stopped_first[0]
        others = [entry.label for entry in verdict.silent if entry not in verdict.stopped_first]
        summary = f"no progress for {verdict.silent_for:.1f} s"
        if first.last_text:
            summary += f"; last: {first.last_text.strip()[:160]!r}"
        if verdict.kind == "partial":
            summary += f"; progressed more recently: {', '.join(entry.label for entry in verdict.active)}"
        elif others:
            summary += f"; then silent too: {', '.join(others)}"
        return self._next(
            kind="hang", failure_id="hang", summary=summary, rank=first.rank, source=first.source,
            text=first.last_text, ranks=verdict.ranks,
        )


def _before_any_worker(diagnosis: Diagnosis) -> bool:
    """The first fault is a line that names no rank of its own, in a console where no worker a
    launcher started has printed yet: the launcher may get past it (torchrun's second agent logs
    that the store's port is taken, then joins as a client and starts its workers), so it is said
    once the input settles, as a collateral-only verdict is."""
    from ..ingest.attribution import parse_prefix

    first = diagnosis.initiating
    if first is None or (first.rank is not None and not (first.rank_from or "").startswith("the reasoning")):
        return False
    prefix = parse_prefix(first.text)
    if prefix.rank is not None or prefix.local_rank is not None or prefix.task is not None or prefix.pid is not None:
        return False  # a process's own line, whatever rank the rules gave it
    return all(source != first.source for source, _line in diagnosis.inputs.launched)


def _where(initiating) -> dict:
    if initiating is None:
        return {"rank": None, "host": None, "source": None, "line": None, "text": "", "fault_time": None}
    return {"rank": initiating.rank, "host": initiating.host, "source": initiating.source, "line": initiating.line,
            "text": initiating.text, "fault_time": initiating.time}
