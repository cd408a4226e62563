"""One job open in the editor: its diagnosis, the scans it was made from, and what changed since.

The first diagnosis is `pipeline.diagnose_paths`, the call `firstfault diagnose` makes; the
observer also keeps each file's FileScan. When files only grow (a job still running), only their
new lines are scanned, through `watch`'s IncrementalScan, and the scans are correlated again with
`pipeline.diagnose_scans`, as `firstfault watch` does. Anything else (a file new, gone, truncated,
rewritten, compressed or unreadable before; dumps or error records among the inputs) is
diagnosed again in full. A partial last line (a job writing a progress bar) is scanned as the
full reader scans it, and scanned again once it ends. No LSP here; callers serialise calls.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ..errors import InputError
from ..ingest.reader import GZIP_MAGIC
from ..ingest.sources import expand_inputs
from ..match.scanner import FileScan
from ..model import Diagnosis, Skipped
from ..pipeline import diagnose_paths, diagnose_scans, scanner_for
from ..watch.incremental import IncrementalScan
from .folders import JobScope

PIECE_BYTES = 4 * 1024 * 1024  # appended data is read this much at a time: memory stays bounded
TAIL_WINDOW = 64 * 1024  # a partial last line longer than this: the file is read again in full


@dataclass(frozen=True)
class Stamp:
    """What `stat` says of a file, to notice that it changed."""

    inode: tuple[int, int]
    size: int
    mtime_ns: int


@dataclass
class _Tail:
    """Where one file's scan stands: bytes before `complete` are whole lines; the bytes from
    `complete` to `read_to` are a last line without its end, scanned as it was."""

    complete: int
    read_to: int


class ScanCollector:
    """A pipeline observer that keeps every FileScan and passes each call on."""

    def __init__(self, observer=None) -> None:
        self.observer = observer
        self.scans: list[FileScan] = []

    def file_started(self, item, index: int, total: int) -> None:
        if self.observer is not None:
            self.observer.file_started(item, index, total)

    def bytes_scanned(self, count: int) -> None:
        if self.observer is not None and hasattr(self.observer, "bytes_scanned"):
            self.observer.bytes_scanned(count)

    def file_finished(self, scan: FileScan) -> None:
        self.scans.append(scan)
        if self.observer is not None:
            self.observer.file_finished(scan)


class Job:
    """The diagnosis of one job, kept current as its files change on disk."""

    def __init__(self, scope: JobScope, kb) -> None:
        self.scope = scope
        self.kb = kb
        self.diagnosis: Diagnosis | None = None
        self.problem = ""  # why there is no diagnosis: the one-line reason and its hint
        self.scans: list[FileScan] = []
        self.diagnosed_at = 0.0
        self.incremental_updates = 0  # how many refreshes scanned only new lines
        self.stamps: dict[str, Stamp] = {}  # of the files as the diagnosis read them
        self._skipped: list[Skipped] = []
        self._growing: dict[str, tuple[IncrementalScan, _Tail]] = {}

    @property
    def folder(self):
        return self.scope.folder

    def diagnose(self, observer=None) -> Diagnosis | None:
        """Diagnose every file of the job from disk; None (and `problem` says why) when nothing
        in it can be read."""
        stamps, inputs, skipped = self._snapshot()
        collector = ScanCollector(observer)
        try:
            diagnosis = diagnose_paths(list(self.scope.paths), observer=collector, kb=self.kb)
        except InputError as exc:
            self._forget(stamps)
            self.problem = f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")
            return None
        self.diagnosis, self.problem, self.scans = diagnosis, "", collector.scans
        self.stamps, self._skipped = stamps, skipped
        self._growing = self._resumable(collector.scans, inputs)
        self.diagnosed_at = time.monotonic()
        return diagnosis

    def current_stamps(self) -> dict[str, Stamp]:
        """The job's files as they are now (compare with `stamps`)."""
        return self._snapshot()[0]

    def refresh(self, observer=None) -> bool:
        """Bring the diagnosis up to date with the files; False when nothing changed."""
        stamps, _inputs, _skipped = self._snapshot()
        if stamps == self.stamps:
            return False
        grown = [display for display, stamp in stamps.items() if stamp != self.stamps.get(display)]
        appended_only = set(stamps) == set(self.stamps) and all(self._grew(display, stamps[display]) for display in grown)
        if self.diagnosis is not None and appended_only and all(self._feed(display) for display in grown):
            self.stamps = stamps
            self.diagnosis = diagnose_scans(self.scans, self._skipped, kb=self.kb)
            self.diagnosed_at = time.monotonic()
            self.incremental_updates += 1
            return True
        self.diagnose(observer)
        return True

    def _snapshot(self) -> tuple[dict[str, Stamp], list, list[Skipped]]:
        inputs, skipped = expand_inputs(list(self.scope.paths))
        stamps = {}
        for item in inputs:
            try:
                stat = os.stat(item.path)
            except OSError:
                continue  # gone since it was listed: the next look says so
            stamps[item.display] = Stamp((stat.st_dev, stat.st_ino), stat.st_size, stat.st_mtime_ns)
        return stamps, inputs, skipped

    def _forget(self, stamps: dict[str, Stamp]) -> None:
        self.diagnosis, self.scans, self._growing, self._skipped = None, [], {}, []
        self.stamps = stamps

    def _grew(self, display: str, stamp: Stamp) -> bool:
        before = self.stamps.get(display)
        return (display in self._growing and before is not None and stamp.inode == before.inode
                and stamp.size > before.size and stamp.size >= self._growing[display][1].read_to)

    def _resumable(self, scans: list[FileScan], inputs: list) -> dict[str, tuple[IncrementalScan, _Tail]]:
        """Files whose new lines can be scanned alone; none when dumps or error records were among
        the inputs (the pipeline took or rewrote them: only a full diagnosis treats them right)."""
        scanned = {scan.input.display for scan in scans}
        if any(item.display not in scanned for item in inputs) or any(scan.input.path is None for scan in scans):
            return {}
        scanner = scanner_for(self.kb)
        scanner.clock.reference_year = _reference_year(scans)
        growing = {}
        for scan in scans:
            tail = None if scan.error else _tail_of(scan)
            if tail is not None:
                follower = IncrementalScan(scanner, scan.input)
                follower.scan, follower.next_line = scan, scan.stats.lines + 1
                growing[scan.input.display] = (follower, tail)
        return growing

    def _feed(self, display: str) -> bool:
        """Scan what was appended to one file; False when only a full read can do it right."""
        follower, tail = self._growing[display]
        if tail.read_to > tail.complete:
            _drop_partial_line(follower, tail)
        try:
            with open(follower.scan.input.path, "rb") as handle:
                handle.seek(tail.complete)
                while True:
                    piece = handle.read(PIECE_BYTES)
                    if not piece:
                        return True
                    cut = piece.rfind(b"\n") + 1
                    if cut == 0:
                        if len(piece) == PIECE_BYTES:
                            return False  # one line longer than a piece: the reader cuts it its way
                        follower.feed(piece)  # the last line, still without its end
                        tail.read_to = tail.complete + len(piece)
                        return True
                    follower.feed(piece[:cut])
                    tail.complete += cut
                    tail.read_to = tail.complete
                    handle.seek(tail.complete)
        except OSError:
            return False


def _tail_of(scan: FileScan) -> _Tail | None:
    """Where the full scan of a plain file ended, or None when it cannot be resumed (gzip, or a
    last line too long to find its start)."""
    read = scan.stats.bytes
    try:
        with open(scan.input.path, "rb") as handle:
            if handle.read(2) == GZIP_MAGIC:
                return None
            start = max(0, read - TAIL_WINDOW)
            handle.seek(start)
            data = handle.read(read - start)
    except OSError:
        return None
    if len(data) != read - start:
        return None  # shrank since it was read
    newline = data.rfind(b"\n")
    if newline < 0 and start > 0:
        return None
    return _Tail(complete=start + newline + 1, read_to=read)


def _drop_partial_line(follower: IncrementalScan, tail: _Tail) -> None:
    """Take back the scan of a last line read before it ended: it is read again whole."""
    scan = follower.scan
    last = scan.stats.lines
    scan.hits = [hit for hit in scan.hits if hit.line != last]
    scan.stats.lines -= 1
    scan.stats.bytes -= tail.read_to - tail.complete
    follower.next_line = last
    tail.read_to = tail.complete


def _reference_year(scans: list[FileScan]) -> int | None:
    """The year for timestamps without one (glog, syslog) in new lines: that of the earliest time
    the full scan read, as its own clock took it from the first full date."""
    times = [scan.first_time for scan in scans if scan.first_time is not None]
    return time.gmtime(min(times)).tm_year if times else None
