"""The live engine: chunks of new lines in, alerts out, through the same scanner and correlator.

One `IncrementalScan` per file generation accumulates hits; when new hits arrive the accumulated
scans are correlated again with `pipeline.diagnose_scans`, exactly as `diagnose` would correlate
the files as they stand. Progress lines feed the hang detector. No I/O here: the loop in
`watch/loop.py` polls the follower and hands alerts to the sinks.
"""
from __future__ import annotations

from collections import Counter

from ..errors import InputError
from ..ingest.sources import InputFile
from ..kb import load_knowledge_base
from ..model import Diagnosis
from ..pipeline import diagnose_scans, scanner_for
from .alerts import Alert, AlertBook
from ..ingest.error_records import parse_error_record, record_as_log
from .follower import Chunk
from .incremental import IncrementalScan
from .progress import DEFAULT_PROGRESS, ProgressTracker

CATCH_UP_CORRELATE_SECONDS = 2.0  # a file written faster than it is read is still correlated this often


class LiveEngine:
    def __init__(self, kb=None, *, hang_after: float = 300.0, progress_pattern: str | None = None,
                 mask_hosts: bool = False) -> None:
        self.kb = kb or load_knowledge_base()
        self.scanner = scanner_for(self.kb)
        self.scans: dict[tuple, IncrementalScan] = {}
        self.tracker = ProgressTracker(after_seconds=hang_after, pattern=progress_pattern or DEFAULT_PROGRESS)
        self.book = AlertBook()
        self.mask_hosts = mask_hosts
        self.diagnosis: Diagnosis | None = None
        self.alerts: list[Alert] = []
        self._changed = False
        self._last_input_at = 0.0
        self._correlated_at = float("-inf")
        self.lines_seen = 0

    def ingest(self, chunks: list[Chunk], now: float, *, backlog: bool = False) -> None:
        """`backlog`: lines that were already in the files when watching began; they are matched,
        and say how far each rank had got, but alone never make a hang (an old finished run must
        not look hung; see watch/progress.py)."""
        for chunk in chunks:
            self._last_input_at = now
            if chunk.record:
                self._ingest_record(chunk)
                continue
            scan = self._scan_for(chunk)
            if scan.feed(chunk.data):
                self._changed = True
            self.lines_seen += chunk.data.count(b"\n")
            self.tracker.observe(chunk.data, chunk.display, scan.scan.hints, now, _local_offset(scan), backlog=backlog)

    def _scan_for(self, chunk: Chunk) -> IncrementalScan:
        scan = self.scans.get(chunk.key)
        if scan is None:
            self._label_earlier_generations(chunk)
            item = InputFile(display=chunk.display, relative=chunk.relative)
            scan = self.scans[chunk.key] = IncrementalScan(self.scanner, item)
            self._changed = True  # a new file changes the inputs summary
        elif scan.scan.input.display != chunk.display:
            scan.rename(chunk.display)
        return scan

    def _label_earlier_generations(self, chunk: Chunk) -> None:
        """A file rotated away or truncated: what was read of it before keeps its own name in reports."""
        path, generation = chunk.key
        for earlier in range(generation):
            scan = self.scans.get((path, earlier))
            if scan is not None and scan.scan.input.display == chunk.display:
                scan.rename(f"{chunk.display} (before rotation {earlier + 1})")

    def _ingest_record(self, chunk: Chunk) -> None:
        record = parse_error_record(chunk.data)
        if record is None:
            return  # JSON that is not an error record (yet: it may still be being written)
        scan = IncrementalScan(self.scanner, InputFile(display=chunk.display, relative=chunk.relative))
        scan.feed(record_as_log(record).encode("utf-8"))
        path, generation = chunk.key
        for earlier in range(generation):
            self.scans.pop((path, earlier), None)
        self.scans[chunk.key] = scan  # a record is rewritten whole: the latest one stands
        self._changed = True

    def evaluate(self, now: float, *, settled: bool = False, quiet_seconds: float = 2.0,
                 catching_up: bool = False) -> list[Alert]:
        """Correlate again if anything new was matched; return the alerts this produced.

        `catching_up`: the follower is still reading a backlog; correlating once it has caught up
        keeps a large backlog from being correlated again after every read."""
        alerts: list[Alert] = []
        if self._changed and (not catching_up or now - self._correlated_at >= CATCH_UP_CORRELATE_SECONDS):
            self._changed = False
            self._correlated_at = now
            self.diagnosis = self.current_diagnosis()
        settled = settled or now - self._last_input_at >= quiet_seconds
        if self.diagnosis is not None:
            alert = self.book.from_diagnosis(self.diagnosis, now, settled=settled)
            if alert is not None:
                alerts.append(alert)
        if not self.book.failure_alerted:
            # once the job has failed, every rank falls silent: that is not a hang
            alert = self.book.from_hang(self.tracker.check(now))
            if alert is not None:
                alerts.append(alert)
        self.alerts += alerts
        return alerts

    def current_diagnosis(self) -> Diagnosis | None:
        scans = [scan.scan for scan in self.scans.values() if scan.scan.stats.lines]
        if not scans:
            return None
        try:
            return diagnose_scans(scans, mask_hosts=self.mask_hosts)
        except InputError:
            return None


def _local_offset(scan: IncrementalScan) -> int | None:
    """global - local rank for this file, from its `[defaultL]:[rankG]:` pairs."""
    offsets = Counter({global_rank - local: count for (local, global_rank), count in scan.scan.local_to_global.items()})
    return offsets.most_common(1)[0][0] if offsets else None
