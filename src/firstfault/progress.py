"""Progress on stderr for inputs that take more than a second; silent when stderr is not a TTY.

A pipeline observer: `file_started(item, index, total)` and `file_finished(scan)` for every
input, `bytes_scanned(count)` as a large file is read block by block here, and
`bytes_in_flight(count)` while worker processes read files not finished yet (match/parallel.py). The line shows files
and bytes done, of how many, the throughput and the time so far; it is redrawn at most ten times
a second and erased at the end, so results on stdout are never mixed with it. A ticker thread
redraws it twice a second even when no new bytes are reported (a 4 MB block takes seconds with the
pure-Python matcher; the correlation after the scan takes its own time), so a run longer than a
second always shows it is working.
"""
from __future__ import annotations

import os
import threading
import time

DELAY_SECONDS = 1.0
REDRAW_SECONDS = 0.1
TICK_SECONDS = 0.5


def _size_of(item) -> int | None:
    path = getattr(item, "path", None)
    if path is None:
        content = getattr(item, "content", None)
        return len(content) if content is not None else None
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    name = str(path)
    return None if name.endswith(".gz") else size  # compressed: the decoded size is unknown


def _rate(megabytes_per_second: float) -> str:
    """`0.4 MB/s` below 10 (the pure-Python engine reads well under 1 MB/s), `45 MB/s` above."""
    return f"{megabytes_per_second:.1f} MB/s" if megabytes_per_second < 10 else f"{megabytes_per_second:.0f} MB/s"


def _megabytes(count: float) -> str:
    return f"{count / 1e9:.2f} GB" if count >= 1e9 else f"{count / 1e6:.1f} MB"


class ProgressObserver:
    """Pipeline observer: files and bytes done, throughput. Never writes to stdout."""

    def __init__(self, stream, enabled: bool | None = None, clock=time.monotonic) -> None:
        self.stream = stream
        self.enabled = (hasattr(stream, "isatty") and stream.isatty()) if enabled is None else enabled
        self.clock = clock
        self.started = clock()
        self.total = 0
        self.files_done = 0
        self.bytes_done = 0  # bytes of finished files
        self.bytes_current = 0  # bytes scanned so far in the file being read
        self.sizes: dict[int, int | None] = {}
        self.current = ""
        self.shown = False
        self.last_drawn = 0.0
        self.width = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def file_started(self, item, index: int, total: int) -> None:
        if self.enabled and self._ticker is None and self.clock is time.monotonic:  # a test's clock drives itself
            self._ticker = threading.Thread(target=self._tick, name="firstfault-progress", daemon=True)
            self._ticker.start()
        self.total = total
        self.current = getattr(item, "display", "")
        self.bytes_current = 0
        if self.enabled and index not in self.sizes:
            self.sizes[index] = _size_of(item)
        self._show()

    def bytes_scanned(self, count: int) -> None:
        self.bytes_current += count
        self._show()

    def bytes_in_flight(self, count: int) -> None:
        """Bytes scanned so far, by worker processes, of the files not finished yet."""
        self.bytes_current = count
        self._show()

    def file_finished(self, scan) -> None:
        self.files_done += 1
        self.bytes_done += scan.stats.bytes
        self.bytes_current = 0
        self._show()

    def line(self) -> str:
        """The progress line as it would be drawn now."""
        elapsed = max(self.clock() - self.started, 1e-9)
        done = self.bytes_done + self.bytes_current
        rate = done / elapsed / 1e6
        known = [size for size in self.sizes.values() if size is not None]
        of = ""
        if self.total == 1 and known and len(known) == len(self.sizes):
            of = f" of {_megabytes(sum(known))}"
        text = f"  {self.files_done}/{self.total} files, {_megabytes(done)}{of}, {_rate(rate)}, {elapsed:.0f} s"
        if self.total == 1 and of:
            text += f" ({min(100, 100 * done / max(sum(known), 1)):.0f}%)"
        return text

    def _tick(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            self._show()

    def _show(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            now = self.clock()
            if self._stop.is_set() or now - self.started < DELAY_SECONDS or now - self.last_drawn < REDRAW_SECONDS:
                return
            self.last_drawn = now
            text = self.line()
            padding = " " * max(0, self.width - len(text))
            self.width = len(text)
            self.stream.write("\r" + text + padding)
            self.stream.flush()
            self.shown = True

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.shown:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
                self.shown = False
