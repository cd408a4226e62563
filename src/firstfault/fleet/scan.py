"""`fleet scan`: diagnose every job under the roots on Dask and stream the rows into the table.

    result = scan_fleet(["/shared/jobs"], "fleet.parquet", workers=2, observer=progress)

One task per job (never per file), submitted through a bounded window so a fleet of a million
jobs does not sit in memory as futures; rows are written as tasks finish. Tasks go to the
scheduler a window at a time (`client.map`) and finished results come back in batches (one
gather for all the tasks done since the last). Jobs whose stamp (file sizes and modification
times) is already in the table are not diagnosed again unless `rescan=True`; when nothing
changed, no cluster is started at all.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import InputError
from ..model import Skipped
from .jobs import JobRef, find_jobs
from .table import TableWriter, check_table_path, compact, job_key, known_stamps

IN_FLIGHT_PER_WORKER = 8  # tasks queued per worker: enough to keep it busy, few enough to bound memory


@dataclass
class ScanResult:
    found: int = 0
    unchanged: int = 0
    diagnosed: int = 0
    failed: int = 0  # jobs whose logs show a failure (status failure or unknown)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (job path, reason) not diagnosable
    skipped: list[Skipped] = field(default_factory=list)  # entries under the roots that are not jobs
    seconds: float = 0.0
    workers: int = 0


class NullObserver:
    def started(self, total: int, workers: int) -> None: ...
    def job_finished(self, row: dict) -> None: ...
    def close(self) -> None: ...


def scan_fleet(roots: list[str], out: str, *, rescan: bool = False, client=None, scheduler: str | None = None,
               scheduler_file: str | None = None, workers: int | None = None, memory_limit: str = "4GiB",
               observer=None) -> ScanResult:
    """Scan the jobs under `roots` into the table `out`."""
    started = time.perf_counter()
    observer = observer or NullObserver()
    check_table_path(out)
    jobs, skipped = find_jobs(roots)
    result = ScanResult(found=len(jobs), skipped=skipped)
    if not jobs:
        reasons = "; ".join(f"{item.source}: {item.reason}" for item in skipped[:3]) or "the roots are empty"
        raise InputError(f"no jobs found ({reasons})", "a job is a folder or an archive (.tar.gz, .zip) directly under a root")
    compact(out)  # an interrupted scan left several parts: one file again before comparing
    known = {} if rescan else known_stamps(out)
    todo = [job for job in jobs if known.get(job_key(job.path)) != job.stamp.digest]
    result.unchanged = len(jobs) - len(todo)
    if todo:
        if client is not None:
            _run(client, todo, out, result, observer)
        else:
            from .cluster import open_client

            with open_client(scheduler, scheduler_file, workers, memory_limit) as own_client:
                _run(own_client, todo, out, result, observer)
    result.seconds = time.perf_counter() - started
    return result


def _run(client, todo: list[JobRef], out: str, result: ScanResult, observer) -> None:
    from itertools import islice

    from distributed import as_completed

    from .cluster import worker_count
    from .task import diagnose_job

    result.workers = worker_count(client)
    observer.started(len(todo), result.workers)
    writer = TableWriter(out)
    window = max(16, IN_FLIGHT_PER_WORKER * result.workers)
    pending = iter(todo)
    scanned_at = time.time()
    by_key: dict = {}

    def submit(count: int) -> list:
        """Up to `count` more jobs, in one message to the scheduler."""
        jobs = list(islice(pending, count))
        if not jobs:
            return []
        futures = client.map(diagnose_job, jobs, [scanned_at] * len(jobs), pure=False)
        by_key.update({future.key: job for future, job in zip(futures, jobs)})
        return futures

    # the client's own loop: as_completed would otherwise track on the default (latest) client's loop
    finished = as_completed(submit(window), loop=client.loop)
    try:
        for batch in finished.batches():  # every future done since the last batch: one gather for all
            done = [future for future in batch if future.status == "finished"]
            values = dict(zip((future.key for future in done), client.gather(done)))
            for future in batch:
                job = by_key.pop(future.key)
                row = values[future.key] if future.key in values else _lost(job, future.exception(), scanned_at)
                future.release()
                writer.add(row)
                _count(result, row)
                observer.job_finished(row)
            finished.update(submit(len(batch)))
    finally:
        observer.close()
        writer.close()  # what finished is kept, even when interrupted


def _lost(job: JobRef, error, scanned_at: float) -> dict:
    """The row of a job whose task died (its worker was killed, e.g. over its memory limit)."""
    from .task import base_row

    kind = type(error).__name__ if isinstance(error, BaseException) else "error"
    reason = ("the worker diagnosing it died (over its memory limit? raise --memory-limit)" if kind == "KilledWorker"
              else f"the task failed: {kind}")
    return {**base_row(job, scanned_at), "status": "error", "error": reason}


def _count(result: ScanResult, row: dict) -> None:
    result.diagnosed += 1
    if row.get("status") in ("failure", "unknown"):
        result.failed += 1
    elif row.get("status") == "error":
        result.errors.append((row["job_path"], row.get("error") or "error"))
