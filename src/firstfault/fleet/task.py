"""One task of a fleet scan: diagnose one job with the engine, return its table row. Runs on Dask workers.

    row = diagnose_job(job_ref)

The job is diagnosed by `firstfault.pipeline` (folders with `diagnose_paths`, archives expanded
in memory within the web app's limits and diagnosed with `diagnose_texts`), in this process only:
the worker is the unit of parallelism, so the engine's own per-file process pool is switched
off. A job that cannot be diagnosed becomes a row with status `error` and the reason, never an
exception that would stop the scan.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .. import __version__
from ..errors import FirstfaultError
from .fingerprint import contract_fingerprint
from .jobs import JobRef

_kb = None


def _knowledge_base():
    global _kb  # loaded once per worker process
    if _kb is None:
        from ..kb import load_knowledge_base

        _kb = load_knowledge_base()
    return _kb


def diagnose_job(job: JobRef, scanned_at: float | None = None) -> dict:
    """The table row of one job (see table.SCHEMA)."""
    from ..match.parallel import WORKERS_VARIABLE
    from ..render.contract import to_contract

    os.environ[WORKERS_VARIABLE] = "1"
    row = base_row(job, scanned_at)
    try:
        diagnosis = _diagnose(job)
    except FirstfaultError as exc:
        return {**row, "status": "error", "error": exc.message}
    except Exception as exc:  # one job's bug in the engine must not stop a fleet scan: record it
        return {**row, "status": "error", "error": f"internal error {type(exc).__name__}: please report it with the firstfault version"}
    return {**row, **contract_fields(to_contract(diagnosis))}


def base_row(job: JobRef, scanned_at: float | None = None) -> dict:
    """What is known of a job before its diagnosis; its path and name pass the masker, as every
    text of a diagnosis does (a user name in /home/<user>, a token in a folder name)."""
    from ..mask import mask_secrets
    from .table import job_key

    return {
        "job_path": mask_secrets(job.path), "job_key": job_key(job.path), "job_id": mask_secrets(job.job_id),
        "scanned_at": scanned_at or time.time(),
        "input_files": job.stamp.files, "input_bytes": job.stamp.bytes, "modified_at": job.stamp.modified,
        "stamp": job.stamp.digest, "engine_version": __version__,
    }


def _diagnose(job: JobRef):
    from ..pipeline import diagnose_paths, diagnose_texts

    kb = _knowledge_base()
    if not job.is_archive:
        return diagnose_paths([job.path], kb=kb)
    from ..web.archives import Budget, expand
    from ..web.limits import InputRejected, Limits

    budget = Budget(Limits())
    try:
        expand(Path(job.path).name, Path(job.path).read_bytes(), budget)
    except InputRejected as exc:
        raise FirstfaultError(exc.message, exc.hint) from None
    except OSError as exc:
        raise FirstfaultError(f"cannot read the archive: {exc.strerror}") from None
    return diagnose_texts(budget.files, kb=kb)


def contract_fields(contract: dict) -> dict:
    """The columns taken from the diagnosis contract."""
    primary = contract.get("primary")
    inputs = contract.get("inputs") or {}
    hosts = list(inputs.get("hosts") or [])
    fields = {
        "status": contract.get("status"), "action": contract.get("action"),
        "hosts": hosts, "ranks": len(inputs.get("ranks") or []),
        "skipped_inputs": len(inputs.get("skipped") or []), "error": None,
        # when the job ran, by its logs' own times, failed or healthy alike (None: they carry none)
        "log_time": _seconds(inputs.get("last_time")),
    }
    digest, text = contract_fingerprint(contract)
    if primary:
        initiating = primary.get("initiating") or {}
        return {**fields, "failure_id": primary.get("failure_id"), "entry_id": primary.get("entry_id"),
                "confidence": primary.get("confidence"), "summary": primary.get("summary"),
                "initiating_rank": initiating.get("rank"), "initiating_host": initiating.get("host"),
                "first_fault_time": _seconds(initiating.get("time")),
                "evidence_source": initiating.get("source"), "evidence_line": initiating.get("line"),
                "fingerprint": digest, "fingerprint_text": text}
    first_error = (contract.get("error_lines") or [None])[0]
    if contract.get("status") == "unknown" and first_error:
        return {**fields, "summary": first_error.get("text"), "first_fault_time": _seconds(first_error.get("time")),
                "evidence_source": first_error.get("source"), "evidence_line": first_error.get("line"),
                "fingerprint": digest, "fingerprint_text": text}
    return fields


def _seconds(iso: str | None) -> float | None:
    if not iso:
        return None
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
