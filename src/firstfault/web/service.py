"""Run the pipeline for a submission and keep the result (masked) in the history."""
from __future__ import annotations

import asyncio

from starlette.concurrency import run_in_threadpool

from .. import pipeline
from ..errors import InputError
from ..model import Diagnosis
from . import samples
from .ingress import UNREADABLE_HINT, Submission
from .limits import InputRejected
from .report import build_document, title_of


async def diagnose(app, submission: Submission) -> tuple[Diagnosis, dict]:
    """The diagnosis of the submission's logs (or of a sample) and the page document built from it."""
    files = submission.files
    if submission.sample:
        sample = samples.get(submission.sample)
        if sample is None:
            raise InputRejected(404, "not_found", f"no sample called {submission.sample[:60]!r}")
        files = sample.read()
    slots = getattr(app.state, "diagnose_slots", None)
    if slots is None:
        slots = app.state.diagnose_slots = asyncio.Semaphore(app.state.limits.max_concurrent)
    try:
        async with slots:
            diagnosis = await run_in_threadpool(
                pipeline.diagnose_texts, files, mask_hosts=submission.mask_hosts, kb=app.state.kb,
                max_input_bytes=app.state.limits.max_total_bytes,
            )
    except NotImplementedError:
        raise InputRejected(503, "engine_unavailable", "the diagnosis engine is not available in this build",
                            "install a released firstfault") from None
    except InputError as exc:
        # the pipeline says it for a command line ("check the paths"); a page says it for an upload
        reasons = exc.message.partition("(")[2].rstrip(")") or exc.message
        raise InputRejected(422, "no_readable_input", f"nothing you sent could be read as a log: {reasons}",
                            UNREADABLE_HINT) from None
    return diagnosis, build_document(diagnosis, submission.notes)


def save(app, document: dict) -> int | None:
    """Store the masked document; None when the history is off."""
    history = app.state.history
    if history is None:
        return None
    return history.add(document, title_of(document, app.state.kb))
