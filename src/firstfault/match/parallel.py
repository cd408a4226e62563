"""Scan inputs across processes: one worker per CPU, results in input order.

    scans = scan_files(scanner, inputs, observer)

Same contract as scanning one input after the other with `scanner.scan` (and the same observer
calls, `file_started` before and `file_finished` after each input, in input order). Small jobs,
stdin and in-memory inputs alone are scanned in this process: starting workers costs more than it
saves below PARALLEL_MIN_BYTES. The work is whole files, and parts of big files (`split`: a
1 GiB console is read by every core, and merged into the scan a whole read gives), handed out in
groups of consecutive files and parts that shrink toward the end (`schedule`: the workers finish
together). Each worker rebuilds the scanner from its signatures (the compiled database comes
from the cache in about a millisecond) and returns picklable scans.

The first input is scanned here when it is not cut, while the workers start, so that every
worker starts from the same reference year for timestamps that omit it (as a serial scan would
carry it from file to file: the year travels with each group); when it is cut, from the year its
first lines give.

Progress: workers add the bytes they scan to a shared counter (and take a group's bytes back out
when its scans are sent back); while waiting for the next result in input order, this process hands the
counter to the observer's `bytes_in_flight` every PROGRESS_SECONDS, so one large file among many
shows progress instead of a line frozen until it ends.
"""
from __future__ import annotations

import os

from ..ingest.sources import InputFile
from .scanner import FileScan, Scanner
from .schedule import groups_by_share
from .split import Part, PartScan, file_size, merge_parts, plan_parts, scan_part

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
PARALLEL_MIN_FILES = 4
WORKERS_VARIABLE = "FIRSTFAULT_WORKERS"
PROGRESS_SECONDS = 0.1

_worker_scanner: Scanner | None = None
_in_flight = None  # the shared count of bytes scanned in files not finished yet
_seeded = False  # whether this worker's clock has its reference year (from its first group)


def _start_worker(scanner: Scanner, in_flight=None) -> None:
    global _worker_scanner, _in_flight, _seeded
    _worker_scanner = scanner
    _in_flight = in_flight
    _seeded = False


def _scan_group_in_worker(task: tuple[int | None, list[tuple[InputFile, Part | None, bool]]]) -> list[FileScan | PartScan]:
    """The scans of a group of units, one after the other; the group comes with the reference
    year the worker's clock starts from (known once the first input was scanned, after the
    workers started). The bytes read count in the shared progress counter until the group's
    results go back to the main process."""
    global _seeded
    seed_year, units = task
    if not _seeded:
        _worker_scanner.clock.reference_year = seed_year
        _seeded = True
    if _in_flight is None:
        return [_scan_in_worker(unit) for unit in units]
    added = 0

    def counted(count: int) -> None:
        nonlocal added
        added += count
        with _in_flight.get_lock():
            _in_flight.value += count

    _worker_scanner.on_block = counted
    try:
        return [_scan_in_worker(unit) for unit in units]
    finally:
        with _in_flight.get_lock():
            _in_flight.value -= added


def _scan_in_worker(unit: tuple[InputFile, Part | None, bool]) -> FileScan | PartScan:
    item, part, penultimate = unit
    if part is None:
        return _worker_scanner.scan(item)
    year = _worker_scanner.clock.reference_year
    try:
        return scan_part(_worker_scanner, item, part, penultimate)
    finally:
        _worker_scanner.clock.reference_year = year  # whole files after it carry the worker's


def worker_count(inputs: list[InputFile]) -> int:
    """How many processes to use for these inputs (1: scan here)."""
    wanted = os.environ.get(WORKERS_VARIABLE)
    cpus = int(wanted) if wanted and wanted.isascii() and wanted.isdigit() else (os.cpu_count() or 1)
    if cpus < 2 or not inputs:
        return 1
    if any(item.is_stdin for item in inputs) or all(item.path is None for item in inputs):
        # stdin is read once, here; uploads alone are scanned in the server's process. The
        # pieces of a pasted text among files on disk travel to the workers with their input
        return 1
    total = sum(file_size(item) for item in inputs)
    if total < PARALLEL_MIN_BYTES or (len(inputs) < PARALLEL_MIN_FILES and max(map(file_size, inputs)) < PARALLEL_MIN_BYTES):
        return 1
    return cpus


def scan_files(scanner: Scanner, inputs: list[InputFile], observer=None, workers: int | None = None,
               meanwhile=None) -> list[FileScan]:
    """Every input's FileScan, in input order. `meanwhile`: work for this process while the
    workers scan (called once, when they have theirs; not when everything is scanned here)."""
    workers = worker_count(inputs) if workers is None else workers
    total = len(inputs)
    scans: list[FileScan] = []

    scanner.on_block = getattr(observer, "bytes_scanned", None)

    def one_here(index: int) -> None:
        item = inputs[index]
        if observer is not None:
            observer.file_started(item, index, total)
        scan = scanner.scan(item)
        if observer is not None:
            observer.file_finished(scan)
        scans.append(scan)

    first_parts = plan_parts(inputs[0], file_size(inputs[0]), workers, scanner.clock.reference_year) if total else []
    if workers <= 1 or (total < 2 and not first_parts):
        for index in range(total):
            one_here(index)
        scanner.on_block = None
        return scans
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    in_flight = context.Value("q", 0) if hasattr(observer, "bytes_in_flight") else None
    with context.Pool(workers, initializer=_start_worker, initargs=(scanner, in_flight)) as pool:
        start = 0
        if not first_parts:
            one_here(0)  # while the workers start
            start = 1
        seed_year = scanner.clock.reference_year if start else first_parts[-1].reference_year
        units, owners = [], []  # (input, part, penultimate), and the input index of each
        for index in range(start, total):
            parts = first_parts if index == 0 else plan_parts(inputs[index], file_size(inputs[index]), workers, seed_year)
            for part in parts or [None]:
                units.append((inputs[index], part, part is not None and len(parts) >= 2 and part.index == len(parts) - 2))
                owners.append((index, parts))
        order = _last_parts_first(units)
        groups = groups_by_share([_unit_size(units[index]) for index in order], workers)
        tasks = [(seed_year, [units[order[position]] for position in group]) for group in groups]
        results = _InUnitOrder(_Flattened(pool.imap(_scan_group_in_worker, tasks, chunksize=1)), order)
        if meanwhile is not None:
            meanwhile()
        pending: list[PartScan] = []
        for index, parts in owners:
            result = _next_result(results, observer, in_flight)
            if parts:
                pending.append(result)
                if len(pending) < len(parts):
                    continue
                result = merge_parts(scanner, inputs[index], parts, pending)
                pending = []
            if observer is not None:
                observer.file_started(inputs[index], index, total)
                observer.file_finished(result)
            scans.append(result)
    scanner.on_block = None
    return scans


def _unit_size(unit: tuple[InputFile, Part | None, bool]) -> int:
    item, part, _penultimate = unit
    if part is None:
        return file_size(item)
    return (part.stop if part.stop is not None else max(file_size(item), part.start)) - part.start


def _last_parts_first(units: list) -> list[int]:
    """The order to hand units to the workers: each cut file's last part before its other parts.
    A log's end holds most of its errors (every rank's lines of the cascade) and what each rank
    printed last (walked back over thousands of lines in a console of many ranks): started last,
    that part kept one worker busy while the other waited (1 GiB console: a quarter of a second)."""
    order: list[int] = []
    for index, (_item, part, _penultimate) in enumerate(units):
        if part is not None and part.index == 0:
            count = next(i for i in range(index, len(units)) if units[i][1].last) - index + 1
            order += [index + count - 1, *range(index, index + count - 1)]
        elif part is None:
            order.append(index)
    return order


class _Flattened:
    """The results of groups of units (lists, as Pool.imap gives them) one unit at a time, with
    the same `next(timeout)`."""

    def __init__(self, results) -> None:
        self._results = results
        self._ready: list = []

    def next(self, timeout: float | None = None):
        while not self._ready:
            self._ready = list(reversed(self._results.next(timeout)))
        return self._ready.pop()

    __next__ = next


class _InUnitOrder:
    """Results of units handed out in `order`, given back in unit order (as Pool.imap's `next`)."""

    def __init__(self, results, order: list[int]) -> None:
        self._results, self._order = results, order
        self._arrived: dict = {}
        self._received = self._given = 0

    def next(self, timeout: float | None = None):
        while self._given not in self._arrived:
            result = self._results.next(timeout)
            self._arrived[self._order[self._received]] = result
            self._received += 1
        self._given += 1
        return self._arrived.pop(self._given - 1)

    __next__ = next


def _next_result(results, observer, in_flight) -> FileScan | PartScan:
    """The next scan in input order; meanwhile the observer hears how far the workers got."""
    if in_flight is None:
        return next(results)
    import multiprocessing

    while True:
        try:
            return results.next(timeout=PROGRESS_SECONDS)
        except multiprocessing.TimeoutError:
            observer.bytes_in_flight(in_flight.value)
