"""Progress of a fleet scan on stderr: jobs done of how many, failures so far, jobs per second.

A scan observer (`started`, `job_finished`, `close`). The bar is redrawn at most ten times a
second, only on a terminal, and erased at the end, so results on stdout are never mixed with it.
"""
from __future__ import annotations

import time

REDRAW_SECONDS = 0.1
BAR = 20


class JobProgress:
    def __init__(self, stream, enabled: bool | None = None, clock=time.monotonic) -> None:
        self.stream = stream
        self.enabled = (hasattr(stream, "isatty") and stream.isatty()) if enabled is None else enabled
        self.clock = clock
        self.total = self.done = self.failed = self.errors = self.workers = 0
        self.started_at = clock()
        self.last_drawn = 0.0
        self.width = 0

    def started(self, total: int, workers: int) -> None:
        self.total, self.workers = total, workers
        self.started_at = self.clock()
        self._show(force=True)

    def job_finished(self, row: dict) -> None:
        self.done += 1
        status = row.get("status")
        self.failed += status in ("failure", "unknown")
        self.errors += status == "error"
        self._show(force=self.done == self.total)

    def line(self) -> str:
        elapsed = max(self.clock() - self.started_at, 1e-9)
        filled = round(BAR * self.done / self.total) if self.total else BAR
        text = (f"  [{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{self.total} jobs, {self.failed} failed"
                f"{f', {self.errors} not diagnosed' if self.errors else ''}, {self.done / elapsed:.1f} jobs/s on {self.workers} worker(s)")
        return text

    def _show(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if not force and now - self.last_drawn < REDRAW_SECONDS:
            return
        self.last_drawn = now
        text = self.line()
        self.stream.write("\r" + text + " " * max(0, self.width - len(text)))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
