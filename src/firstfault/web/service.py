"""Run the pipeline for a submission and keep the result (masked) in the history."""
from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool

from .. import pipeline
from ..errors import InputError
from ..model import Diagnosis
from . import samples
from .ingress import UNREADABLE_HINT, Submission
from .limits import InputRejected
from ..history import title_of
from .report import build_document


async def diagnose(app, submission: Submission, request=None) -> tuple[Diagnosis, dict]:
    """The diagnosis of the submission's logs (or of a sample) and the page document built from it.

    Everything that costs CPU or memory runs in a worker thread while the request holds one of
    the `max_concurrent` diagnosis slots: expanding archives and parsing the body (the
    submission's `prepare`), then the pipeline. The work stops (DiagnosisWatch) when the client
    goes away or it has run `diagnosis_seconds`."""
    if submission.sample:
        sample = samples.get(submission.sample)
        if sample is None:
            raise InputRejected(404, "not_found", f"no sample called {submission.sample[:60]!r}")
        submission = Submission(files=sample.read(), mask_hosts=submission.mask_hosts)
    limits = app.state.limits
    _within_quota(request)
    with _one_of_theirs(request):
        return await _diagnose(app, submission, request, limits)


@contextmanager
def _one_of_theirs(request):
    """A signed-in identity's requests diagnosing at once stay within concurrent_per_token (429)."""
    if request is None or not request.app.state.sign_in:
        yield
        return
    from .auth import identity_of

    name, state = identity_of(request).name, request.app.state
    running = getattr(state, "running_per_token", None)
    if running is None:
        running = state.running_per_token = {}
    limit = state.limits.concurrent_per_token
    if running.get(name, 0) >= limit:
        raise InputRejected(429, "too_many_at_once", f"{limit} diagnoses at once is this server's limit per token",
                            "wait for one to finish", retry_after=5)
    running[name] = running.get(name, 0) + 1
    try:
        yield
    finally:
        running[name] -= 1


async def _diagnose(app, submission: Submission, request, limits) -> tuple[Diagnosis, dict]:
    slots = _lane(app, "small" if submission.raw_bytes <= SMALL_REQUEST_BYTES else "large", limits.max_concurrent)
    watch = DiagnosisWatch(limits.diagnosis_seconds)
    try:
        async with slots:
            watch.start()
            work = asyncio.ensure_future(run_in_threadpool(_run, app, submission, watch))
            try:
                while True:
                    done, _ = await asyncio.wait({work}, timeout=DISCONNECT_POLL_SECONDS)
                    if done:
                        diagnosis, notes = work.result()
                        break
                    if request is not None and await request.is_disconnected():
                        watch.cancel("the client went away")
            except asyncio.CancelledError:
                # the server dropped the request: stop the work, and keep the slot until it stops
                watch.cancel("the request was cancelled")
                await asyncio.wait({work})
                raise
    except NotImplementedError:
        raise InputRejected(503, "engine_unavailable", "the diagnosis engine is not available in this build",
                            "install a released firstfault") from None
    except Stopped as exc:
        raise InputRejected(503, "diagnosis_stopped", f"the diagnosis was stopped: {exc}",
                            "split the logs, or keep only the ranks and the time window around the failure") from None
    except InputError as exc:
        # the pipeline says it for a command line ("check the paths"); a page says it for an upload
        reasons = exc.message.partition("(")[2].rstrip(")") or exc.message
        raise InputRejected(422, "no_readable_input", f"nothing you sent could be read as a log: {reasons}",
                            UNREADABLE_HINT) from None
    if request is not None:
        from .auth import audit

        audit(request, "diagnosed", f"{diagnosis.status} {diagnosis.primary.failure_id if diagnosis.primary else ''}")
    return diagnosis, build_document(diagnosis, notes)


def _within_quota(request) -> None:
    """A signed-in identity's diagnoses in the last 24 hours stay under the server's quota (429)."""
    if request is None or not request.app.state.sign_in:
        return
    from .auth import identity_of

    store, limit = request.app.state.auth, request.app.state.limits.diagnoses_per_day
    if store.diagnoses_today(identity_of(request)) >= limit:
        raise InputRejected(429, "quota", f"{limit} diagnoses in 24 hours is this server's limit per token",
                            "ask again later, or ask an admin for a higher --quota-per-day", retry_after=3600)


DISCONNECT_POLL_SECONDS = 0.25
# requests that sent at most this much wait in their own lane: a pasted log is not queued behind
# two 64 MiB uploads (the large lane's slots bound memory; a small request needs little)
SMALL_REQUEST_BYTES = 1024 * 1024


def _lane(app, name: str, size: int) -> asyncio.Semaphore:
    """The diagnosis slots of one lane (made on first use, in the server's event loop)."""
    lanes = getattr(app.state, "diagnosis_lanes", None)
    if lanes is None:
        lanes = app.state.diagnosis_lanes = {}
    if name not in lanes:
        lanes[name] = asyncio.Semaphore(size)
    return lanes[name]


def _run(app, submission: Submission, watch: "DiagnosisWatch") -> tuple[Diagnosis, list[str]]:
    """In a worker thread: the request's logs, then their diagnosis."""
    prepared = submission.prepared()
    watch.check()
    diagnosis = pipeline.diagnose_texts(prepared.files, mask_hosts=prepared.mask_hosts or submission.mask_hosts,
                                        kb=app.state.kb, max_input_bytes=app.state.limits.max_total_bytes,
                                        observer=watch)
    return diagnosis, prepared.notes


class Stopped(Exception):
    """A diagnosis stopped before its end: its client left, or it ran out of time."""


class DiagnosisWatch:
    """The pipeline's observer for one request: between blocks of input it checks whether the
    work is still wanted (the client is there, the time limit not reached) and stops it if not."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline: float | None = None
        self.reason = ""

    def start(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def cancel(self, reason: str) -> None:
        self.reason = reason

    def check(self) -> None:
        if self.reason:
            raise Stopped(self.reason)
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise Stopped(f"it ran longer than {self.seconds:g} seconds, the limit for one request")

    def file_started(self, item, index: int, total: int) -> None:
        self.check()

    def file_finished(self, scan) -> None:
        pass

    def bytes_scanned(self, count: int) -> None:
        self.check()


@dataclass(frozen=True)
class Saved:
    id: int
    seen: str  # when the team saw this failure before (`3rd time since ...`), "" the first time


def save(request, document: dict, origin: str = "web") -> Saved | None:
    """Store the masked document, as the asking team's, and call the team's alert webhooks it
    matches; None when the history is off."""
    from .auth import team_history
    from .team_alerts import notify

    history = team_history(request)
    if history is None:
        return None
    title = title_of(document, request.app.state.kb)
    earlier = history.recurrence(document)
    seen = earlier.sentence() if earlier is not None else ""
    entry = history.add(document, title, origin)
    notify(history.history, history.identity.team, document, entry, title, seen)
    return Saved(entry, seen)
