"""Scan many inputs across processes: one worker per CPU, results in input order.

    scans = scan_files(scanner, inputs, observer)

Same contract as scanning one input after the other with `scanner.scan` (and the same observer
calls, `file_started` before and `file_finished` after each input, in input order). Small jobs,
stdin and in-memory inputs are scanned in this process: starting workers costs more than it
saves below PARALLEL_MIN_BYTES. Each worker rebuilds the scanner from its signatures (the
compiled database comes from the cache in about a millisecond) and returns picklable FileScans.

The first input is scanned here first, so that every worker starts from the same reference year
for timestamps that omit it (as a serial scan would carry it from file to file).

Progress: workers add the bytes they scan to a shared counter (and take a file's bytes back out
when it is done); while waiting for the next result in input order, this process hands the
counter to the observer's `bytes_in_flight` every PROGRESS_SECONDS, so one large file among many
shows progress instead of a line frozen until it ends.
"""
from __future__ import annotations

import os

from ..ingest.sources import InputFile
from .scanner import FileScan, Scanner

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
PARALLEL_MIN_FILES = 4
WORKERS_VARIABLE = "FIRSTFAULT_WORKERS"
PROGRESS_SECONDS = 0.1

_worker_scanner: Scanner | None = None
_in_flight = None  # the shared count of bytes scanned in files not finished yet


def _start_worker(scanner: Scanner, reference_year: int | None, in_flight=None) -> None:
    global _worker_scanner, _in_flight
    _worker_scanner = scanner
    _worker_scanner.clock.reference_year = reference_year
    _in_flight = in_flight


def _scan_in_worker(item: InputFile) -> FileScan:
    if _in_flight is None:
        return _worker_scanner.scan(item)
    added = 0

    def counted(count: int) -> None:
        nonlocal added
        added += count
        with _in_flight.get_lock():
            _in_flight.value += count

    _worker_scanner.on_block = counted
    try:
        return _worker_scanner.scan(item)
    finally:
        with _in_flight.get_lock():
            _in_flight.value -= added


def worker_count(inputs: list[InputFile]) -> int:
    """How many processes to use for these inputs (1: scan here)."""
    wanted = os.environ.get(WORKERS_VARIABLE)
    cpus = int(wanted) if wanted and wanted.isdigit() else (os.cpu_count() or 1)
    if cpus < 2 or len(inputs) < PARALLEL_MIN_FILES:
        return 1
    if any(item.path is None for item in inputs):
        return 1  # stdin or in-memory content
    total = 0
    for item in inputs:
        try:
            total += item.path.stat().st_size
        except OSError:
            pass
    return min(cpus, len(inputs)) if total >= PARALLEL_MIN_BYTES else 1


def scan_files(scanner: Scanner, inputs: list[InputFile], observer=None, workers: int | None = None) -> list[FileScan]:
    """Every input's FileScan, in input order."""
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

    if workers <= 1 or total < 2:
        for index in range(total):
            one_here(index)
        scanner.on_block = None
        return scans
    one_here(0)
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    rest = inputs[1:]
    chunk = max(1, min(16, len(rest) // (workers * 8)))
    in_flight = context.Value("q", 0) if hasattr(observer, "bytes_in_flight") else None
    with context.Pool(workers, initializer=_start_worker,
                      initargs=(scanner, scanner.clock.reference_year, in_flight)) as pool:
        results = pool.imap(_scan_in_worker, rest, chunksize=chunk)
        for offset in range(1, total):
            scan = _next_result(results, observer, in_flight)
            if observer is not None:
                observer.file_started(inputs[offset], offset, total)
                observer.file_finished(scan)
            scans.append(scan)
    scanner.on_block = None
    return scans


def _next_result(results, observer, in_flight) -> FileScan:
    """The next scan in input order; meanwhile the observer hears how far the workers got."""
    if in_flight is None:
        return next(results)
    import multiprocessing

    while True:
        try:
            return results.next(timeout=PROGRESS_SECONDS)
        except multiprocessing.TimeoutError:
            observer.bytes_in_flight(in_flight.value)
