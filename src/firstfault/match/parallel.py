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

Every input goes to the workers as soon as they start. Times that omit the year take a serial
read's reference year (the first full date, carried from file to file): the inputs up to the first
whose first bytes hold a full date start from the year a serial read starts from, the others from
that date's year (`_year_guess`), and each scan comes back with the year its file began with, the
first full year it read and how many times it read without a year. A file whose year-less times
were read from another year than the serial one is read again here, in input order
(`_as_serial`): logs whose times all carry their year are never read twice. What every worker
would load for itself on its first file (the secret masker) is loaded here before they fork.

Progress: workers add the bytes they scan to a shared counter (and take a group's bytes back out
when its scans are sent back); while waiting for the next result in input order, this process hands the
counter to the observer's `bytes_in_flight` every PROGRESS_SECONDS, so one large file among many
shows progress instead of a line frozen until it ends.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..ingest.sources import InputFile
from .scanner import FileScan, Scanner
from .schedule import groups_by_share
from .split import PartScan, file_size, first_full_year, merge_parts, plan_parts, scan_part

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
PARALLEL_MIN_FILES = 4
WORKERS_VARIABLE = "FIRSTFAULT_WORKERS"
PROGRESS_SECONDS = 0.1

GUESS_BYTES, GUESS_INPUTS = 64 * 1024, 16  # read for the year the workers' clocks start from

_worker_scanner: Scanner | None = None
_in_flight = None  # the shared count of bytes scanned in files not finished yet


def _start_worker(scanner: Scanner, in_flight=None) -> None:
    global _worker_scanner, _in_flight
    _worker_scanner = scanner
    _in_flight = in_flight


Unit = tuple  # (input, part or None: the whole file, penultimate part?, the year a whole file starts from)


def _scan_group_in_worker(units: list[Unit]) -> list[WholeScan | PartScan]:
    """The scans of a group of units, one after the other. The bytes read count in the shared
    progress counter until the group's results go back to the main process."""
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


@dataclass
class WholeScan:
    """A whole file's scan in a worker, and the years its clock read it with (see _as_serial)."""

    scan: FileScan
    started_with: int | None  # the clock's reference year when the file began
    first_full_year: int | None
    year_less: int


def _scan_in_worker(unit: Unit) -> WholeScan | PartScan:
    item, part, penultimate, year = unit
    if part is not None:
        return scan_part(_worker_scanner, item, part, penultimate)
    clock = _worker_scanner.clock
    clock.reference_year, clock.first_full_year, clock.year_less = year, None, 0
    scan = _worker_scanner.scan(item)
    return WholeScan(scan, year, clock.first_full_year, clock.year_less)


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
    year = scanner.clock.reference_year  # what a serial read carries from input to input
    _load_what_every_worker_loads()
    with context.Pool(workers, initializer=_start_worker, initargs=(scanner, in_flight)) as pool:
        # the first inputs start from the year a serial read starts from, the others from a guess
        guess, guessed_from = (first_parts[-1].reference_year, 1) if first_parts else _year_guess(inputs, year)
        units, owners = [], []  # the units, and the input index of each
        for index in range(total):
            start_year = guess if index >= guessed_from else year
            parts = first_parts if index == 0 else plan_parts(inputs[index], file_size(inputs[index]), workers, start_year)
            for part in parts or [None]:
                penultimate = part is not None and len(parts) >= 2 and part.index == len(parts) - 2
                units.append((inputs[index], part, penultimate, start_year))
                owners.append((index, parts))
        order = _last_parts_first(units)
        groups = groups_by_share([_unit_size(units[index]) for index in order], workers)
        tasks = [[units[order[position]] for position in group] for group in groups]
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
                result, pending = (parts, pending), []
            result, year = _as_serial(scanner, inputs[index], result, year)
            if observer is not None:
                observer.file_started(inputs[index], index, total)
                observer.file_finished(result)
            scans.append(result)
    scanner.clock.reference_year = year
    scanner.on_block = None
    return scans


def _load_what_every_worker_loads() -> None:
    """The secret masker, loaded here before the workers fork so that none loads its own (~20 ms
    each, most of a worker's first file): this process loads it anyway, to mask the diagnosis."""
    from ..mask import mask_secrets

    mask_secrets("password: x token=y")  # the catalogue, and the detectors any `key: value` line wakes


def _year_guess(inputs: list[InputFile], year: int | None) -> tuple[int | None, int]:
    """The year the workers' clocks start from, and the first input that starts from it: the
    year a serial read starts with, from the first input; else the first full date in the first
    inputs' first bytes, from the input after the one that holds it (a job's logs mostly share a
    year; a manifest or a kernel log without one may come first, read as a serial read reads it)."""
    if year is not None:
        return year, 0
    for index, item in enumerate(inputs[:GUESS_INPUTS]):
        head = item.head(GUESS_BYTES)
        found = first_full_year(head) if head else None
        if found is not None:
            return found, index + 1
    return None, 0


def _as_serial(scanner: Scanner, item: InputFile, result, year: int | None) -> tuple[FileScan, int | None]:
    """The scan a serial read gives of `item` (a worker's WholeScan, or a cut file's (parts, part
    scans)) when `year` is the reference year a serial read reaches it with; and the year it
    carries on. A scan read from another year is read again here if it read a time without one."""
    if isinstance(result, WholeScan):
        read_with, scans, merged = result.started_with, [result], result.scan
    else:
        parts, scans = result
        read_with, merged = parts[0].reference_year, None
    if read_with != year and any(scan.year_less for scan in scans):
        merged = _read_again(scanner, item, year)
    elif merged is None:
        merged = merge_parts(scanner, item, parts, scans)
    if year is None:
        year = next((scan.first_full_year for scan in scans if scan.first_full_year is not None), None)
    return merged, year


def _read_again(scanner: Scanner, item: InputFile, year: int | None) -> FileScan:
    on_block, scanner.on_block = scanner.on_block, None  # its bytes were counted once
    scanner.clock.reference_year = year
    try:
        return scanner.scan(item)
    finally:
        scanner.on_block = on_block


def _unit_size(unit: Unit) -> int:
    item, part, _penultimate, _year = unit
    if part is None:
        return file_size(item)
    return (part.stop if part.stop is not None else max(file_size(item), part.start)) - part.start


def _last_parts_first(units: list) -> list[int]:
    """The order to hand units to the workers: each cut file's last part before its other parts.
    A log's end holds most of its errors (every rank's lines of the cascade) and what each rank
    printed last (walked back over thousands of lines in a console of many ranks): started last,
    that part kept one worker busy while the other waited (1 GiB console: a quarter of a second)."""
    order: list[int] = []
    for index, unit in enumerate(units):
        part = unit[1]
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
