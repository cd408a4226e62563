"""Join what flight-recorder and stack dumps say with the log diagnosis.

Dumps are the better witness for hangs: a rank that never entered a collective prints
nothing, but its peers' flight recorders (and its own stack) show where it is.
"""
from __future__ import annotations

from dataclasses import replace

from ..model import Diagnosis, Evidence, Finding
from .ids import MISMATCH, PEER_CRASH, STRAGGLER, UNEVEN

HANG_CLASSES = (STRAGGLER, PEER_CRASH, MISMATCH, UNEVEN)
DUMP_CONFIDENCE = 0.85


def join_dump_report(diagnosis: Diagnosis, report) -> Diagnosis:
    """The diagnosis, with the rank the dumps name where the logs could only see timeouts."""
    if report is None or not (report.flight_recorder or report.stacks):
        return diagnosis
    notes = list(diagnosis.notes) + [f"dumps: {line}" for line in report.explanation]
    named = tuple(report.named_ranks)
    if not named:
        return replace(diagnosis, notes=tuple(notes))
    by = " and ".join(report.named_by) or "dumps"
    failure_id = _class_from(report)
    primary = diagnosis.primary
    if primary is not None and primary.failure_id not in HANG_CLASSES:
        notes.append(f"{by} name rank(s) {list(named)} as not joining the collective; the log's first fault is kept as the cause")
        return replace(diagnosis, notes=tuple(notes))
    rank = named[0] if len(named) == 1 else None
    notes.append(f"the initiating rank was named by the {by}")
    source = (report.flight_recorder.sources if report.flight_recorder else report.stacks.sources) or ("",)
    evidence = Evidence(source[0], 1, rank, None, None, report.explanation[0] if report.explanation else "",
                        failure_id, "dumps", "root")
    confidence = max(DUMP_CONFIDENCE, primary.confidence if primary else 0.0)
    finding = Finding(failure_id, confidence, (evidence, *(primary.evidence if primary else ())), named, (), 1,
                      report.explanation[0] if report.explanation else "")
    candidates = (Finding(failure_id, confidence), *(c for c in diagnosis.candidates if c.failure_id != failure_id))
    return replace(diagnosis, status="failure", primary=finding, initiating=evidence,
                   candidates=candidates, notes=tuple(notes))


def _class_from(report) -> str:
    recorder = report.flight_recorder
    if recorder is not None and recorder.mismatch:
        return MISMATCH
    return STRAGGLER
