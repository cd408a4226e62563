"""One big file scanned in parts across processes, merged into the scan a whole read gives.

    parts = plan_parts(item, size, workers, reference_year)   # [] when the file is not cut
    scans = [scan_part(scanner, item, part) for part in parts]  # in worker processes
    scan = merge_parts(scanner, item, parts, scans)

A part is the reads of the file between two offsets that are multiples of the reader's block
size (`ingest.reader.read_blocks(start=, stop=)`), so every part holds exactly the blocks a
whole read holds, and every block is matched as in a whole read. What a block's scan takes from
the blocks before it is carried across a cut by the merge, or checked:

- line numbers: each part counts from 1; the merge adds the lines of the parts before;
- census (ranks, srun tasks, NCCL hosts, worker pids): each part notes what each block named;
  the merge replays it in file order, as one scan adds it up;
- which lines are one rank's stream (`several` ranks in the file so far): each part notes, per
  block, what it took; the merge checks it against the replayed census;
- the time of a line that has none is the nearest earlier time of its stream: a part notes the
  hits whose time comes from before it, and the merge gives them that time;
- the year of times written without one (the first full date's): a part after the first starts
  from the year of the file's first full date and counts the times it read without a year; the
  merge checks that year (and scans on here when the parts before parsed no full date);
- signatures kept once per file (`first_only`): the merge drops a part's hit of one already kept;
- what each rank printed last: found from the file's last two blocks by the last part's worker,
  kept when the merged scan has the same rank streams, else found again by the merge.

When a check fails (a file whose second rank appears late, a year that changes inside the
file), the merge scans the file from that part on in this process, carrying the merged state:
the result is the same, only slower. Gzip, UTF-16 and files that do not start as text are never
cut (their bytes on disk are not their lines).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from ..ingest import reader
from ..ingest.sources import InputFile
from ..ingest.attribution import hints_from_path
from .schedule import shares
from .scanner import FileScan, PartRecord, RawHit, Scanner, add_census, add_later_ids, stream_count, streams_view

SPLIT_MIN_BYTES = 64 * 1024 * 1024  # smaller files are scanned whole
MIN_PART_BLOCKS = 2  # the smallest part: the last part's worker finds the tails from its last two blocks
_FULL_YEAR = re.compile(rb"(?<!\d)((?:19|20)\d\d)(?:-[01]\d-[0-3]\d[T _][0-2]\d:|[01]\d[0-3]\d-[0-2]\d:)")


@dataclass(frozen=True)
class Part:
    """The reads from `start` to `stop` (None: the end) of one file; `index` counts from 0;
    `reference_year` is the year its clock starts from."""

    index: int
    start: int
    stop: int | None
    reference_year: int | None
    last: bool


@dataclass
class PartScan:
    """A part's scan (hits with their signature as an index), and what the merge needs."""

    scan: FileScan
    hits: list  # (signature index, captures, line, text, prefix, time, time_inherited)
    first_full_year: int | None
    year_less: int
    tail_blocks: list  # _TailBlock: the blocks the file's end may need
    tail_view: tuple | None = None  # the last part: the rank streams its tails were found with


def plan_parts(item: InputFile, size: int, workers: int, reference_year: int | None) -> list[Part]:
    """The parts to cut a file into ([] to scan it whole): files of SPLIT_MIN_BYTES or more,
    plain text on disk, cut at block multiples where a line ends near the cut."""
    if item.path is None or workers < 2 or size < SPLIT_MIN_BYTES:
        return []
    block = reader.BLOCK_BYTES
    try:
        with open(item.path, "rb") as handle:
            head = handle.read(block)
            if not reader.starts_as_plain_text(head):
                return []
            cuts = [offset for offset in cut_offsets(size, workers, block) if reader.range_start(handle, offset) is not None]
    except OSError:
        return []
    if not cuts:
        return []
    later_year = reference_year if reference_year is not None else first_full_year(head)
    bounds = [0, *cuts, None]
    return [Part(index, bounds[index], bounds[index + 1], reference_year if index == 0 else later_year,
                 bounds[index + 1] is None) for index in range(len(bounds) - 1)]


def cut_offsets(size: int, workers: int, block: int) -> list[int]:
    """Where a file of `size` bytes is cut (multiples of `block`, before each is moved to a line's
    end): parts that shrink along the file (schedule.shares), none under MIN_PART_BLOCKS blocks.
    The workers take the file's last part first (it holds what each rank printed last, the costly
    walk), then the parts in file order: the small parts before the last are handed out last, so
    the workers finish together."""
    blocks = -(-size // block)
    cuts, offset = [], 0
    for piece in shares(blocks, workers, MIN_PART_BLOCKS):
        offset += piece
        if offset < blocks:
            cuts.append(offset * block)
    return cuts


def first_full_year(head: bytes) -> int | None:
    found = _FULL_YEAR.search(head)
    return int(found.group(1)) if found else None


def scan_part(scanner: Scanner, item: InputFile, part: Part, penultimate: bool) -> PartScan:
    """Scan one part (in a worker process); hits travel back with their signature as an index."""
    scan = FileScan(input=item, hints=hints_from_path(item.relative))
    if part.index > 0:
        scan.record = PartRecord()
    scanner.clock.reference_year = part.reference_year
    scanner.clock.first_full_year, scanner.clock.year_less = None, 0
    previous, last = scanner.scan_blocks(item, scan, part.start, part.stop)
    index_of = {id(compiled.signature): index for index, compiled in enumerate(scanner.matcher.compiled)}
    hits = [(index_of[id(hit.signature)], hit.captures, hit.line, hit.text, hit.prefix, hit.time, hit.time_inherited)
            for hit in scan.hits]
    scan.hits = []
    wanted = [previous, last] if part.last else [last] if penultimate else []
    tail_blocks = [_TailBlock.of(block) for block in wanted if block is not None]
    view = None
    if part.last and previous is not None:
        scanner.keep_last_tails(scan, previous, last)  # as the merge would, if the streams are the same
        view = _view(scan)
    return PartScan(scan, hits, scanner.clock.first_full_year, scanner.clock.year_less, tail_blocks, view)


def _view(scan: FileScan) -> tuple:
    """What the tails of a file depend on besides its last blocks: its rank streams."""
    streams = stream_count(scan)
    return streams, streams > 1


def merge_parts(scanner: Scanner, item: InputFile, parts: list[Part], scans: list[PartScan]) -> FileScan:
    """The scan of the whole file from its parts' scans (see the module's docstring). The
    scanner's clock ends as a whole read leaves it."""
    first = scans[0]
    merged = first.scan
    merged.hits = _hits(scanner, first.hits, 0)
    if merged.error:
        return merged
    year = parts[0].reference_year if parts[0].reference_year is not None else first.first_full_year
    tails = list(first.tail_blocks)  # _TailBlock or reader.Block, their lines counted from 1 + the shift
    for part, scanned in zip(parts[1:], scans[1:]):
        offset = merged.stats.lines
        if scanned.scan.error or not _holds(merged, part, scanned, year) or (year is None and scanned.first_full_year):
            scanner.clock.reference_year = year
            previous, last = scanner.scan_blocks(item, merged, part.start, None, first_line=offset + 1)
            tails = [block for block in (*tails, previous, last) if block is not None]
            scanner.keep_last_tails(merged, *_last_two(item, tails, merged))
            return merged
        _absorb(scanner, merged, scanned, offset)
        year = year if year is not None else scanned.first_full_year
        tails += [replace(tail, shift=offset) for tail in scanned.tail_blocks]
    scanner.clock.reference_year = year
    last = scans[-1]
    if last.tail_view is not None and last.tail_view == _view(merged):
        _shifted_tails(merged, last.scan, merged.stats.lines - last.scan.stats.lines)
    else:
        scanner.keep_last_tails(merged, *_last_two(item, tails, merged))
    return merged


@dataclass(frozen=True)
class _TailBlock:
    """A block a part's worker read at the file's end, sent back to the merge by where it lies on
    disk (read again only if the merge needs it: most merges keep the worker's tails) or, when
    it was not read from a plain stretch of the file, with its bytes. `shift`: lines before the part."""

    first_line: int
    span: tuple[int, int] | None
    data: bytes | None
    shift: int = 0

    @classmethod
    def of(cls, block: reader.Block) -> "_TailBlock":
        return cls(block.first_line, block.span, None if block.span is not None else block.data)

    def block(self, item: InputFile) -> reader.Block:
        first_line = self.first_line + self.shift
        if self.span is None:
            return reader.Block(first_line, self.data)
        return reader.read_span(item, self.span, first_line)


def _last_two(item: InputFile, tails: list, merged: FileScan) -> list:
    """The last two of the tail blocks as reader.Blocks (None before a lone one), for
    keep_last_tails; none when the file cannot give them again (the report says so)."""
    try:
        return [tail.block(item) if isinstance(tail, _TailBlock) else tail for tail in ([None] + tails)[-2:]]
    except reader.Unreadable as exc:
        merged.stats.truncated = merged.stats.truncated or f"its last lines, {exc}: what each rank printed last is not shown"
        return [None, None]


def _shifted_tails(merged: FileScan, part: FileScan, offset: int) -> None:
    """The tails the last part's worker found, at their place in the file."""
    for name in ("tails", "progress_tails"):
        setattr(merged, name, {stream: [(line + offset, time, text) for line, time, text in lines]
                               for stream, lines in getattr(part, name).items()})


def _hits(scanner: Scanner, packed: list, offset: int) -> list[RawHit]:
    compiled = scanner.matcher.compiled
    return [RawHit(compiled[index].signature, captures, line + offset, text, prefix, time, inherited)
            for index, captures, line, text, prefix, time, inherited in packed]


def _holds(merged: FileScan, part: Part, scanned: PartScan, year: int | None) -> bool:
    """Whether the part's scan is what a whole read gives after `merged`: the same year for
    times without one, and the same view of how many ranks write to the file at each block."""
    if scanned.year_less and part.reference_year != year:
        return False
    replay = FileScan(input=merged.input, hints=merged.hints, global_ranks=set(merged.global_ranks),
                      local_ranks=set(merged.local_ranks), srun_tasks=set(merged.srun_tasks),
                      process_pids=set(merged.process_pids))
    record: PartRecord = scanned.scan.record
    for census, several in zip(record.census, record.several):
        add_census(replay, *census)
        if streams_view(replay) != several:
            return False
    return True


def _absorb(scanner: Scanner, merged: FileScan, scanned: PartScan, offset: int) -> None:
    """Add a checked part's scan to the merged one."""
    part = scanned.scan
    hits = _hits(scanner, scanned.hits, offset)
    for index, stream in part.record.times_before:  # the nearest earlier time, from before the part
        time = merged.last_time if stream is None else merged.stream_times.get(stream)
        line = hits[index].line
        for position in range(index, len(hits)):
            if hits[position].line != line:
                break
            hits[position] = replace(hits[position], time=time, time_inherited=time is not None)
    once = {id(compiled.signature): index for index, compiled in enumerate(scanner.matcher.compiled)
            if compiled.signature.first_only}
    merged.hits += [hit for hit in hits if once.get(id(hit.signature)) not in merged.found_once]
    merged.found_once |= part.found_once
    for census in part.record.census:
        add_census(merged, *census)
    add_later_ids(merged, part, offset)
    merged.first_time = merged.first_time if merged.first_time is not None else part.first_time
    if merged.first_launched is None and part.first_launched is not None:
        merged.first_launched = part.first_launched + offset if part.first_launched else 0
    merged.last_time = part.last_time if part.last_time is not None else merged.last_time
    merged.stream_times.update(part.stream_times)
    stats, more = merged.stats, part.stats
    stats.lines += more.lines
    stats.bytes += more.bytes
    stats.long_lines += more.long_lines
    stats.invalid_utf8 = stats.invalid_utf8 or more.invalid_utf8
    stats.truncated = stats.truncated or more.truncated
    stats.notes += more.notes


def file_size(item: InputFile) -> int:
    if item.content is not None:
        return len(item.content)  # a piece of a pasted text, an upload
    try:
        return os.stat(item.path).st_size if item.path is not None else 0
    except OSError:
        return 0
