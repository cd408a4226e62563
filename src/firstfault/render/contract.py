"""The JSON contract (docs/contract.md): `firstfault.diagnosis/1`."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from ..ingest.timestamps import ZonedTime
from ..model import Diagnosis, Evidence, Finding

SCHEMA = "firstfault.diagnosis/1"


def iso_time(seconds: float | None, zoned: bool | None = None) -> str | None:
    """ISO 8601. `Z` only when the zone is known (a `ZonedTime` from the log, or `zoned=True` for
    this machine's clock); a time the log wrote without a zone is printed without one, as written."""
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    if zoned if zoned is not None else isinstance(seconds, ZonedTime):
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds")


def evidence_to_dict(evidence: Evidence) -> dict:
    return {
        "source": evidence.source,
        "line": evidence.line,
        "rank": evidence.rank,
        "host": evidence.host,
        "time": iso_time(evidence.time),
        "text": evidence.text,
        "failure_id": evidence.failure_id or None,
        "signature": evidence.signature or None,
        "role": evidence.role or None,
    }


def _collateral(finding: Finding) -> dict:
    first = finding.evidence[0] if finding.evidence else None
    return {
        "failure_id": finding.class_id,
        "entry_id": finding.failure_id,
        "ranks": list(finding.ranks),
        "hosts": list(finding.hosts),
        "count": finding.count,
        "summary": finding.message,
        "first": evidence_to_dict(first) if first else None,
    }


def cross_file_order(inputs) -> str | None:
    """How lines of different files were ordered: `time`, `uncertain` (some files carry no times,
    so file order decided there), or None when only one file was read (there is no cross-file order)."""
    if len(inputs.files) <= 1:
        return None
    return "time" if inputs.timed else "uncertain"


def to_contract(diagnosis: Diagnosis) -> dict:
    """The diagnosis as the JSON-ready dict the contract defines (plus documented extras)."""
    primary = None
    if diagnosis.primary is not None:
        primary = {
            "failure_id": diagnosis.primary.class_id,
            "entry_id": diagnosis.primary.failure_id,
            "confidence": round(diagnosis.primary.confidence, 3),
            "summary": diagnosis.primary.message,
            "initiating": _place(diagnosis.initiating),
            "evidence": [evidence_to_dict(item) for item in diagnosis.primary.evidence],
            "fix_values": dict(diagnosis.fix_values),
        }
    inputs = diagnosis.inputs
    return {
        "schema": SCHEMA,
        "status": diagnosis.status,
        "primary": primary,
        "collateral": [_collateral(item) for item in diagnosis.collateral],
        "went_past": [_collateral(item) for item in diagnosis.went_past],
        "candidates": [
            {"failure_id": item.class_id, "entry_id": item.failure_id, "confidence": round(item.confidence, 3)}
            for item in diagnosis.candidates
        ],
        "inputs": {
            "files": list(inputs.files),
            "lines": inputs.lines,
            "bytes": inputs.bytes,
            "ranks": list(inputs.ranks),
            "hosts": list(inputs.hosts),
            "skipped": [{"source": item.source, "reason": item.reason} for item in inputs.skipped],
            "read_notes": [{"source": item.source, "note": item.reason} for item in inputs.read_notes],
            "cross_file_order": cross_file_order(inputs),
            "first_time": iso_time(inputs.first_time),
            "last_time": iso_time(inputs.last_time),
        },
        "because": [{"rule": item.rule, "text": item.text,
                     "evidence": [{"source": source, "line": line} for source, line in item.evidence]}
                    for item in diagnosis.because],
        "action": diagnosis.action,
        "action_detail": {key: list(value) for key, value in diagnosis.action_detail.items()},
        "stack": [{"id": item.id, "name": item.name, "source": item.source, "line": item.line}
                  for item in diagnosis.stack],
        "notes": list(diagnosis.notes),
        "error_lines": [evidence_to_dict(item) for item in diagnosis.error_lines],
        # for `unknown` (no primary): where the first failing process shows, when the logs name it
        "initiating": _place(diagnosis.initiating) if diagnosis.primary is None and diagnosis.initiating else None,
        "world_size": diagnosis.world_size,
        "ranks": [_rank_row(row) for row in diagnosis.ranks],
    }


def _line(where) -> dict | None:
    return {"source": where[0], "line": where[1]} if where else None


def _rank_row(row) -> dict:
    return {
        "rank": row.rank,
        "host": row.host,
        "ended": row.ended,
        "ended_at": iso_time(row.ended_at),
        "ended_line": _line(row.ended_line),
        "last_progress": row.last_progress,
        "last_step": row.last_step,
        "last_progress_at": iso_time(row.last_progress_at),
        "collective": row.collective,
        "first_error": row.first_error,
        "first_error_line": _line(row.first_error_line),
    }


def _place(initiating) -> dict:
    return {
        "rank": initiating.rank if initiating else None,
        "host": initiating.host if initiating else None,
        "source": initiating.source if initiating else None,
        "line": initiating.line if initiating else None,
        "time": iso_time(initiating.time) if initiating else None,
        "rank_from": initiating.rank_from if initiating and initiating.rank is not None else None,
        "host_from": initiating.host_from if initiating and initiating.host is not None else None,
    }


def render(diagnosis: Diagnosis, extra: dict | None = None) -> str:
    """The contract as JSON; `extra`: documented fields a command adds (`history`)."""
    return json.dumps({**to_contract(diagnosis), **(extra or {})}, indent=2, ensure_ascii=False) + "\n"
