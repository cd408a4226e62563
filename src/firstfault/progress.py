"""Progress on stderr for inputs that take more than a second; silent when stderr is not a TTY."""
from __future__ import annotations

import time

DELAY_SECONDS = 1.0


class ProgressObserver:
    """Pipeline observer: files and bytes done, throughput. Never writes to stdout."""

    def __init__(self, stream, enabled: bool | None = None) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self.files_done = 0
        self.bytes_done = 0
        self.shown = False

    def file_started(self, item, index: int, total: int) -> None:
        self.total = total

    def file_finished(self, scan) -> None:
        self.files_done += 1
        self.bytes_done += scan.stats.bytes
        self._show()

    def _show(self) -> None:
        elapsed = time.monotonic() - self.started
        if not self.enabled or elapsed < DELAY_SECONDS:
            return
        rate = self.bytes_done / elapsed / 1e6 if elapsed else 0.0
        self.stream.write(f"\r  {self.files_done}/{self.total} files, {self.bytes_done / 1e6:.1f} MB, {rate:.0f} MB/s ")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
