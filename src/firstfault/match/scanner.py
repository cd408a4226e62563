"""One streaming pass over one input: blocks -> candidate lines -> masked -> matched hits.

Blocks stay bytes: the matcher's engine (Hyperscan, or the Python literal prefilter) finds the
candidate lines of a whole block at C speed; only those lines are decoded, masked, confirmed by
the signature's Python regex, and given a rank, host and time. The census of launcher prefixes
runs as block-level regex passes, with fast paths for blocks that repeat one prefix.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..ingest.attribution import LinePrefix, PathHints, hints_from_path, is_placeholder_host, leading_rank, parse_prefix
from ..ingest.reader import Block, ReadStats, Unreadable, read_blocks
from ..ingest.rendered import as_python_tracebacks, may_hold_rendered
from ..ingest.sources import InputFile
from ..ingest.timestamps import Clock
from ..mask import mask_secrets
from ..mask.continuation import mask_continuation, starts_like_a_continuation
from ..model import Signature
from .compiler import Matcher
from .progress_lines import is_progress, is_traceback_body

TIME_LOOKBACK_LINES = 60
TAIL_LINES = 8  # the last lines kept of each rank stream: what it was doing when it stopped
# lines walked back from a block's end to find them (more for many streams): a failed job's console
# ends in every rank's traceback, and what a rank did last is above its own; a traceback as rich
# prints it (ingest/rendered.py) is 3-4 times Python's, a deep stack's 100 lines and more
TAIL_WALK_LINES = 1000
PROGRESS_TAIL_LINES = 4  # and its last progress lines (steps, loss) within that walk

# Launcher prefixes, counted per block so ranks/hosts seen and local->global maps are known.
# Written to start with a newline (the block gets one in front) so the regex engine jumps from
# line start to line start instead of trying every position.
_PREFIXES = rb"(?:\s{0,3}\d{1,5}: )?(?:[\w.-]{1,64}: )?"
_CENSUS = re.compile(rb"\n" + _PREFIXES + rb"\[([A-Za-z_-]*?)(\d{1,6})\]:(?:\[rank(\d{1,6})\]:)?")
_SRUN_CENSUS = re.compile(rb"\n\s{0,3}(\d{1,5}): ")
# a worker's line as its launcher prefixes it (torchrun --tee: `[default0]:`, `[trainer1]:`), which
# a worker prints only once torchrun started it; torch's own `[rank0]:` says nothing of a launcher
_LAUNCHED = re.compile(rb"\n" + _PREFIXES + rb"\[(?!rank\d)[A-Za-z_-]+\d{1,6}\]:")
# srun --label around another prefix: `3: [rank3]:` (a task per rank) or `1: [rank9]:`/`1: [default1]:`
# (a launcher per node, the task is the node)
_TASK_WRAPS = re.compile(rb"\n\s{0,3}(\d{1,5}): \[([A-Za-z_-]*?)(\d{1,6})\]:")
# a Ray / vLLM worker's prefix, `(RayTrainWorker pid=2321, ip=10.0.0.5) `: the pid, then the message
_WORKER = rb"\((?:[A-Za-z_][\w.]*,? )?pid=(\d{1,8})"
_WORKER_PREFIX = _WORKER + rb"(?:, ip=[\d.]{7,15})?\) "
# followed by the rank the worker logs: `(PolicyWorker pid=88231) [rank3]`
_PID_RANK_CENSUS = re.compile(_WORKER_PREFIX + rb"\[[Rr]ank ?(\d{1,6})\]")
# Ray Train's own line naming a worker's rank: `(RayTrainWorker pid=2321, ip=10.0.0.5) Setting up process
# group for: env:// [rank=1, world_size=4]`
_PID_SETUP_RANK_CENSUS = re.compile(_WORKER_PREFIX + rb"[^\n]{0,160}?\[rank=(\d{1,6}), world_size=\d{1,6}\]")
# Ray Train v2's controller lists its workers when it starts them: `(TrainController pid=9852) -
# (ip=10.0.0.5, pid=9974) world_rank=1, local_rank=1, node_rank=0`
_PID_WORKER_LIST_CENSUS = re.compile(rb"\(ip=[\d.]{7,15}, pid=(\d{1,8})\) world_rank=(\d{1,6}), local_rank=")
# a worker process's prefix that names no rank (no `TP1`): its lines are one process's stream
_PID_CENSUS = re.compile(rb"\n" + _WORKER + rb"[,)]")
# such a worker's line and its message, whose first words may name the worker's rank (`rank 2: ...`)
_PID_MESSAGE_CENSUS = re.compile(rb"\n" + _WORKER_PREFIX + rb"([^\n]{1,80})")
# a host's prefix around torchrun's pair (pdsh: `gpu-node-1: [default0]:[rank2]:`): that host's
# local rank 0 is global rank 2 (the node's offset, where one console holds several nodes)
_HOST_NAME = rb"[A-Za-z][\w.-]{0,62}\d[\w.-]{0,62}|\d{1,3}(?:\.\d{1,3}){3}"
_HOST_LINE = re.compile(rb"\n(?:" + _HOST_NAME + rb"): ")
_HOST_PAIR = re.compile(rb"(" + _HOST_NAME + rb"): \[[A-Za-z_-]*?(\d{1,6})\]:\[rank(\d{1,6})\]:")
_MPI_CENSUS = re.compile(rb"\n\[(?:\d{1,6},)?(\d{1,6})\]<std(?:out|err)>:")
_NCCL_LINE = re.compile(
    rb"\n(?:\s{0,3}\d{1,5}: )?(?:\[[^\]\n]{1,40}\]:)*(?:[\w.-]{1,64}: )?([A-Za-z0-9][\w.-]{0,63}):(\d+):\d+ \[(\d{1,3})\] (?:[\w./-]{1,80}:\d{1,6} )?NCCL ")
_NCCL_LOCAL = re.compile(rb"\[(\d{1,2})\] (?:[\w./-]{1,80}:\d{1,6} )?NCCL ")
NCCL_LOCALS = 32  # local ranks 0-31 name their host in NCCL lines (no node has more GPUs)


@dataclass(frozen=True)
class RawHit:
    """A signature hit before rank resolution (which needs every file's census)."""

    signature: Signature
    captures: dict
    line: int
    text: str
    prefix: LinePrefix
    time: float | None
    time_inherited: bool


@dataclass
class FileScan:
    """Everything one input contributed."""

    input: InputFile
    hints: PathHints
    stats: ReadStats = field(default_factory=ReadStats)
    hits: list[RawHit] = field(default_factory=list)
    local_ranks: set = field(default_factory=set)
    global_ranks: set = field(default_factory=set)
    local_to_global: Counter = field(default_factory=Counter)
    host_pairs: Counter = field(default_factory=Counter)  # (host, local, global) from `host: [defaultL]:[rankG]:`
    nccl_hosts: dict = field(default_factory=dict)  # local rank -> host
    nccl_pids: dict = field(default_factory=dict)  # (host, cudaDev) -> (pid, line) of NCCL's first line for it
    worker_pids: dict = field(default_factory=dict)  # pid -> the rank a Ray/vLLM worker says it is
    process_pids: set = field(default_factory=set)  # pids of worker prefixes that name no rank (a stream each)
    srun_tasks: set = field(default_factory=set)  # srun --label task ids seen
    tasks_are_nodes: bool = False  # the srun tasks wrap [rankN]/[defaultN] prefixes of other numbers
    task_layout_read: bool = False
    first_time: float | None = None
    last_time: float | None = None  # of the last timed line read so far, any stream
    first_launched: int | None = None  # the line of the first worker line a launcher prefixed (`[default0]:`)
    stream_times: dict = field(default_factory=dict)  # rank stream -> its last time read so far
    tails: dict = field(default_factory=dict)  # rank stream (None: the file's only one) -> [(line, time, text)]
    progress_tails: dict = field(default_factory=dict)  # rank stream -> its last progress lines, same form
    error: str = ""
    found_once: set = field(default_factory=set)  # indices of first_only signatures that hit already
    # what a scan of a later part of a file assumed (match/split.py checks it against the parts
    # before); None for a scan of a whole file
    record: "PartRecord | None" = field(default=None, compare=False, repr=False)

    def resumed(self, item: InputFile) -> "FileScan":
        """An empty scan of more of the same file: it carries this one's times and rank census,
        so lines without a time of their own inherit what a single pass would give them."""
        return FileScan(input=item, hints=self.hints, global_ranks=set(self.global_ranks),
                        local_ranks=set(self.local_ranks), worker_pids=dict(self.worker_pids),
                        process_pids=set(self.process_pids),
                        srun_tasks=set(self.srun_tasks), tasks_are_nodes=self.tasks_are_nodes,
                        task_layout_read=self.task_layout_read,
                        first_time=self.first_time, first_launched=self.first_launched,
                        last_time=self.last_time, stream_times=dict(self.stream_times),
                        found_once=set(self.found_once))  # tails: the chunk's own, merged by the caller


@dataclass
class PartRecord:
    """What the scan of a part of a file (not its first) did that depends on the lines before
    the part: per block, the ranks its launcher prefixes named and whether the scan took the
    file for several ranks' output; the hits whose time comes from before the part."""

    census: list = field(default_factory=list)  # per block: (globals, locals, srun tasks, worker pids) seen in it
    several: list = field(default_factory=list)  # per block: streams_view when its lines were matched
    times_before: list = field(default_factory=list)  # (index of a hit, its rank stream): time from before


class Scanner:
    """Scans inputs with one compiled Matcher and one shared Clock."""

    def __init__(self, signatures: list[Signature], engine: str | None = None) -> None:
        self.signatures = list(signatures)
        self.matcher = Matcher(self.signatures, engine)
        self.clock = Clock()
        self.on_block = None  # optional callable(bytes scanned), for progress within a file
        self._lookbacks: dict = {}  # per rank stream: (asked at, time found, lines back) in this block
        self._first_only = {id(item): index for index, item in enumerate(self.matcher.compiled)
                            if item.signature.first_only}

    def __getstate__(self):
        # compiled databases do not pickle: a copy in another process compiles (or loads) its own
        return {"signatures": self.signatures, "engine": self.matcher.engine}

    def __setstate__(self, state) -> None:
        self.__init__(state["signatures"], state["engine"])

    def scan(self, item: InputFile, resume: FileScan | None = None) -> FileScan:
        """Scan one input; `resume` is the scan of the same file's earlier part (a file that
        grows, read chunk by chunk), whose times and census carry into this one."""
        scan = resume.resumed(item) if resume is not None else FileScan(input=item, hints=hints_from_path(item.relative))
        self.keep_last_tails(scan, *self.scan_blocks(item, scan, first_line=item.first_line))
        return scan

    def scan_blocks(self, item: InputFile, scan: FileScan, start: int = 0, stop: int | None = None,
                    first_line: int = 1) -> tuple[Block | None, Block | None]:
        """Scan the blocks of `item` (its reads from `start` to `stop`, see read_blocks) into
        `scan`; the last two blocks, for keep_last_tails."""
        previous = last = None
        try:
            for block in read_blocks(item, scan.stats, decode=False, start=start, stop=stop, first_line=first_line):
                if len(block.data) > BIG_BLOCK:
                    _tune_allocator()
                self._scan_block(block, scan)
                previous, last = last, block
                if self.on_block is not None:
                    self.on_block(len(block.data) + 1)
        except Unreadable as exc:
            scan.error = str(exc)
        return previous, last

    def keep_last_tails(self, scan: FileScan, previous: Block | None, last: Block | None) -> None:
        """What each rank printed last: walked back from the end once, not at every block (and
        from the block before when the last is short: a reader's final piece can be one line)."""
        if last is None:
            return
        if previous is not None and last.line_count < _tail_window(scan)[1]:
            self._keep_tails(previous, scan)
        self._keep_tails(last, scan)

    def _census(self, block: Block, scan: FileScan, hints: tuple | None) -> None:
        """Launcher prefixes and NCCL hosts of a block. `hints` (from the fast engine) says
        whether a `[x3]:` prefix may occur and which `[L] NCCL` local ranks occur; without them
        the same is found here, more slowly. Either way the same code below decides."""
        data = block.data
        if hints is None:
            bracket = b"]:" in data
            nccl_locals = {int(local) for local in set(_NCCL_LOCAL.findall(data))} if b"] NCCL " in data else set()
        else:
            bracket, nccl_locals, _rendered = hints
        seen_globals, seen_locals, pids = set(), set(), set()
        if bracket:
            for role, local, global_rank in _prefix_census(block):
                if role == b"rank":
                    seen_globals.add(int(local))
                    continue
                if role and scan.first_launched is None:  # the first block with a launcher's prefix
                    scan.first_launched = _first_launched(block)
                seen_locals.add(int(local))
                if global_rank:
                    scan.local_to_global[(int(local), int(global_rank))] += 1
                    seen_globals.add(int(global_rank))
        head = b"\n" + data[:65536]  # prefixes on every line show in a block's first lines
        if bracket and _HOST_LINE.search(head) and b"]:[rank" in data:  # (the head first: few files have hosts)
            _host_pair_census(data, scan)
        if b"pid=" in head:
            named = set(_PID_RANK_CENSUS.findall(data))
            if b", world_size=" in data:  # Ray Train's set-up line
                named |= set(_PID_SETUP_RANK_CENSUS.findall(data))
            if b") world_rank=" in head:  # Ray Train v2's list of its workers
                named |= set(_PID_WORKER_LIST_CENSUS.findall(head))
            for pid, rank in named:
                scan.worker_pids.setdefault(int(pid), int(rank))
            # the workers of a block show in its first lines and its last (where its tails are read)
            pids = {int(pid) for pid in set(_PID_CENSUS.findall(head)) | set(_PID_CENSUS.findall(b"\n" + data[-65536:]))}
            _ranks_workers_name(head, scan)
        if b">:" in head and b"<std" in head:
            seen_globals.update(int(rank) for rank in set(_MPI_CENSUS.findall(b"\n" + data)))
        tasks = {int(task) for task in set(_SRUN_CENSUS.findall(head))} if _SRUN_CENSUS.search(head) else set()
        if tasks and bracket and not scan.task_layout_read:
            scan.task_layout_read = True  # one block tells how srun started the job
            scan.tasks_are_nodes = any(role != b"rank" or task != number for task, role, number in set(_TASK_WRAPS.findall(head)))
        if scan.record is not None:
            scan.record.census.append((frozenset(seen_globals), frozenset(seen_locals), frozenset(tasks), frozenset(pids)))
        add_census(scan, seen_globals, seen_locals, tasks, pids)
        new_locals = [local for local in nccl_locals if local < NCCL_LOCALS and local not in scan.nccl_hosts]
        if new_locals:
            _nccl_census(data, new_locals, scan, block.first_line)

    def _scan_block(self, block: Block, scan: FileScan) -> None:
        data = block.data
        self._lookbacks = {}  # see _last_time_in: answers of this block's earlier lookbacks
        candidates, valid, hints = self.matcher.candidate_lines(data)
        if hints[2] if hints is not None else may_hold_rendered(data):
            rewritten = as_python_tracebacks(data, self.matcher.exception_modules)
            if rewritten is not data:  # a traceback as rich or IPython prints it: read as Python's
                block.rewrite(rewritten)
                data = rewritten
                candidates, valid, hints = self.matcher.candidate_lines(data)
        if valid is None:
            valid = _valid_utf8(data)
        if not valid:
            scan.stats.invalid_utf8 = True
        self._census(block, scan, hints)
        if scan.record is not None:
            scan.record.several.append(streams_view(scan))
        # number candidate lines with one pass over the block in all: count from the previous
        # candidate or back from the block's end, whichever is shorter (hits cluster at the end)
        size = len(data)
        newlines = None  # of the whole block, once counted
        line_number, counted_to = block.first_line, 0
        for start in sorted(candidates):
            if scan.found_once and candidates[start] <= scan.found_once:
                continue  # only signatures that already had their one hit in this file
            if start - counted_to <= size - start:
                line_number += data.count(b"\n", counted_to, start)
            else:
                if newlines is None:
                    newlines = block.line_count - 1  # counted once per block (the census may have)
                line_number = block.first_line + newlines - data.count(b"\n", start)
            counted_to = start
            end = data.find(b"\n", start)
            raw_line = (data[start:] if end < 0 else data[start:end]).decode("utf-8", "replace")
            self._match_line(raw_line, candidates[start], line_number, data, start, scan)
        self._carry_times(data, scan)

    def _keep_tails(self, block: Block, scan: FileScan) -> None:
        """Each rank stream's last lines in this block (masked, with their times) replace what an
        earlier block left for that stream."""
        data = block.data
        wanted, window = _tail_window(scan)
        found: dict = {}
        progress: dict = {}
        satisfied: set = set()  # streams with all the lines wanted
        end, line_number = len(data), block.first_line + block.line_count - 1
        several = _several_streams(scan)
        text_ranks = False  # lines that name their rank in the message: walk the whole window
        for _ in range(window):
            if end <= 0 and line_number < block.first_line:
                break
            start = data.rfind(b"\n", 0, end) + 1
            raw = data[start:end]
            if raw.strip():
                line = _display_text(raw[:2000].decode("utf-8", "replace"))
                prefix = parse_prefix(line)
                stream = _stream_of(prefix)  # the same key in every chunk of a growing file
                # a line no prefix ties to a rank that names its rank first (`rank 2: step 11`): that
                # rank's, also in a console where only torch's tracebacks carry `[rankN]:` (torchrun
                # without --tee); in a file of one rank, its name says whose every line is
                if stream is None and scan.hints.rank is None and scan.hints.local_rank is None:
                    named = leading_rank(line[prefix.offset:])
                    if named is not None:
                        stream, text_ranks = (None, named), True
                kept = found.setdefault(stream, [])
                steps = progress.setdefault(stream, [])
                # (a traceback's frames would fill the tail: what the rank did before it raised is kept)
                wanted_line = len(kept) < TAIL_LINES and not is_traceback_body(line[prefix.offset:])
                wanted_step = len(steps) < PROGRESS_TAIL_LINES and is_progress(line[prefix.offset:])
                if wanted_line or wanted_step:
                    # unmasked here: what a diagnosis shows of these lines passes the masker with
                    # everything else it says (pipeline.diagnose_scans), and most are never shown
                    if start > 0 and starts_like_a_continuation(line):
                        # a tail is masked later, alone: the secret its line continues is masked now
                        line = mask_continuation(line, _previous_line(data, start))
                    kept_line = (line_number, self._time_of(line, prefix), line[:500])
                    if wanted_line:
                        kept.append(kept_line)
                    if wanted_step:
                        steps.append(kept_line)
                    if (stream is not None or not several) and len(kept) >= TAIL_LINES and len(steps) >= PROGRESS_TAIL_LINES:
                        satisfied.add(stream)
                        if len(satisfied) >= wanted and not text_ranks:
                            break
            if start == 0:
                break
            end, line_number = start - 1, line_number - 1
        if text_ranks:
            _merge_lone_text_rank(found, progress)
        found = {stream: lines[::-1] for stream, lines in found.items()}
        progress = {stream: lines[::-1] for stream, lines in progress.items() if lines}
        add_tails(scan, found, progress, block.first_line + block.line_count - 1, window)

    def _time_of(self, line: str, prefix: LinePrefix) -> float | None:
        """A line's own time: its message's, after the launcher prefixes; else the one a prefix
        carries (mpirun --timestamp-output writes its time before the rank's tag)."""
        time = self.clock.parse(line[prefix.offset:]) if prefix.offset else self.clock.parse(line)
        if time is None and prefix.stamped:
            time = self.clock.parse(line)
        return time

    def _carry_times(self, data: bytes, scan: FileScan) -> None:
        """Remember the block's last time, overall and per rank stream, for the lines of later
        blocks that carry no time of their own."""
        block_time = self._last_time_in(data, len(data))
        if block_time is None:
            return
        scan.last_time = block_time
        if scan.first_time is None:
            scan.first_time = self._first_time_in(data)
        if _several_rank_streams(scan):  # else every line inherits the file's last time (see _inherited_time)
            scan.stream_times.update(self._stream_times_before(data, len(data)))

    def _match_line(self, raw_line: str, indices, line_number: int, data: bytes, start: int,
                    scan: FileScan) -> None:
        line = mask_secrets(raw_line)
        if start > 0 and starts_like_a_continuation(raw_line):  # the rest of a secret wrapped onto this line?
            line = mask_continuation(line, _previous_line(data, start))
        searched = raw_line.replace("\r", " ")
        masked = searched if line == raw_line else line.replace("\r", " ")
        hits = self.matcher.confirm(searched, masked, indices)
        if hits and self._first_only:
            hits = [hit for hit in hits if self._first_only.get(id(hit[0])) not in scan.found_once]
            scan.found_once.update(self._first_only[id(hit[0])] for hit in hits if id(hit[0]) in self._first_only)
        if not hits:
            return
        prefix = parse_prefix(line)
        time = self._time_of(line, prefix)
        inherited = False
        if time is None:
            time = self._inherited_time(data, start, prefix, scan)
            inherited = time is not None
        display = _display_text(line)
        for compiled, captures in hits:
            scan.hits.append(RawHit(compiled.signature, captures, line_number, display, prefix, time, inherited))

    def _inherited_time(self, data: bytes, start: int, prefix: LinePrefix, scan: FileScan) -> float | None:
        """The time of a line that carries none: that of the nearest earlier timed line of the
        same rank stream. In a file of one rank (or none) every earlier line is that rank's; in a
        console of several, another rank's time (or the launcher's, written after the fault) would
        misplace the line, so only the same rank's lines count."""
        stream = _rank_stream_of(prefix) if _several_rank_streams(scan) else None
        time = self._last_time_in(data, start, stream)
        if time is not None:
            return time
        time = scan.last_time if stream is None else scan.stream_times.get(stream)
        if time is None and scan.record is not None:
            scan.record.times_before.append((len(scan.hits), stream))  # the lines before the part tell
        return time

    def _stream_times_before(self, data: bytes, end: int) -> dict:
        """The last time of each rank stream among the block's final lines."""
        times: dict = {}
        for _ in range(TIME_LOOKBACK_LINES):
            if end <= 0:
                break
            start = data.rfind(b"\n", 0, end - 1) + 1
            line = data[start:end].decode("utf-8", "replace")
            prefix = parse_prefix(line)
            stream = _rank_stream_of(prefix)
            if stream is not None and stream not in times:
                value = self._time_of(line, prefix)
                if value is not None:
                    times[stream] = value
            end = start - 1 if start > 0 else 0
        return times

    def _last_time_in(self, data: bytes, end: int, stream: tuple | None = None) -> float | None:
        """The time of the nearest earlier line in this block that carries one, within
        TIME_LOOKBACK_LINES lines; when the line names its rank (a combined console), only
        earlier lines of the same rank count.

        A block of untimed hits (the same error on every line) would read back the whole window
        for each: each answer is kept (where it was asked, what it found, how many lines back),
        and a later walk that reaches an earlier question's line takes its answer from there."""
        asked_at, known = end, self._lookbacks.get(stream)
        for walked in range(1, TIME_LOOKBACK_LINES + 1):
            if end <= 0:
                return self._remember(stream, asked_at, None, None)
            if known is not None and end == known[0] - 1:  # the next lines are the earlier walk's
                _, value, distance = known
                found = value is not None and walked - 1 + distance <= TIME_LOOKBACK_LINES
                return self._remember(stream, asked_at, value if found else None, walked - 1 + distance if found else None)
            start = data.rfind(b"\n", 0, end - 1) + 1
            line = data[start:end].decode("utf-8", "replace")
            prefix = parse_prefix(line) if line[:1] in "[0123456789 (" or ": " in line[:40] else None
            same_stream = stream is None or (prefix is not None and _rank_stream_of(prefix) == stream)
            value = self.clock.parse(line[prefix.offset:] if prefix else line) if same_stream else None
            if value is not None:
                return self._remember(stream, asked_at, value, walked)
            end = start - 1 if start > 0 else 0
            if start == 0:
                return self._remember(stream, asked_at, None, None)
        return self._remember(stream, asked_at, None, None)

    def _remember(self, stream, asked_at: int, value: float | None, distance: int | None) -> float | None:
        self._lookbacks[stream] = (asked_at, value, distance)
        return value

    def _first_time_in(self, data: bytes) -> float | None:
        position = 0
        for _ in range(TIME_LOOKBACK_LINES):
            end = data.find(b"\n", position)
            line = (data[position:] if end < 0 else data[position:end]).decode("utf-8", "replace")
            prefix = parse_prefix(line)
            value = self._time_of(line, prefix)
            if value is not None or end < 0:
                return value
            position = end + 1
        return None


def _previous_line(data: bytes, start: int) -> str:
    """The line before the one starting at `start` in a block."""
    begin = data.rfind(b"\n", 0, max(0, start - 1)) + 1
    return data[begin:max(begin, start - 1)][:65536].decode("utf-8", "replace")


def add_tails(scan: FileScan, tails: dict, progress: dict, last_line: int, window: int | None = None) -> None:
    """Append later lines (oldest first, per rank stream) to the scan's tails. Only lines within
    the window from the file's end count, however the file was read (at once, or chunk by chunk
    as it grew): the same answer either way."""
    for stream, lines in tails.items():
        scan.tails[stream] = (scan.tails.get(stream, []) + lines)[-TAIL_LINES:]
    for stream, lines in progress.items():
        scan.progress_tails[stream] = (scan.progress_tails.get(stream, []) + lines)[-PROGRESS_TAIL_LINES:]
    oldest = last_line + 1 - (window if window is not None else _tail_window(scan)[1])
    for kept in (scan.tails, scan.progress_tails):
        for stream in list(kept):
            kept[stream] = [line for line in kept[stream] if line[0] > oldest]
            if not kept[stream]:
                del kept[stream]


def add_later_ids(scan: FileScan, later: FileScan, shift: int) -> None:
    """Add what a scan of a later part of the same file found of who is who (NCCL's host and pid
    per local rank, Ray worker pids, local->global pairs, how srun started the job), its line
    numbers shifted by `shift`: the first of each wins, as in one scan of the whole file."""
    scan.local_to_global.update(later.local_to_global)
    scan.host_pairs.update(later.host_pairs)
    for local, host in later.nccl_hosts.items():
        if local not in scan.nccl_hosts:
            scan.nccl_hosts[local] = host
            if (host, local) in later.nccl_pids:
                pid, line = later.nccl_pids[(host, local)]
                scan.nccl_pids.setdefault((host, local), (pid, line + shift))
    for pid, rank in later.worker_pids.items():
        scan.worker_pids.setdefault(pid, rank)
    if later.task_layout_read and not scan.task_layout_read:
        scan.task_layout_read, scan.tasks_are_nodes = True, later.tasks_are_nodes


def _host_pair_census(data: bytes, scan: FileScan) -> None:
    """Count the block's `host: [defaultL]:[rankG]:` lines, read only where `]:[rank` occurs (a
    traceback's lines, not every line of the console)."""
    position = data.find(b"]:[rank")
    while position >= 0:
        match = _HOST_PAIR.match(data, data.rfind(b"\n", 0, position) + 1)
        if match is not None:
            host, local, global_rank = match.groups()
            scan.host_pairs[(host.decode(), int(local), int(global_rank))] += 1
        end = data.find(b"\n", position)
        position = data.find(b"]:[rank", end) if end >= 0 else -1


_QUOTED_RANK_HEADER = b"[Rank "


def _ranks_workers_name(head: bytes, scan: FileScan) -> None:
    """The rank each worker process (by the pid its prefix names) says it is in its own messages'
    first words (`rank 2: loading shard 5`), read in a block's first lines: kept when at least two
    thirds of the worker's lines that name a rank name that one."""
    named: dict[int, Counter] = {}
    for pid, message in _PID_MESSAGE_CENSUS.findall(head):
        pid = int(pid)
        if message.startswith(_QUOTED_RANK_HEADER):
            continue  # Ray Train's controller quoting a worker's error (`[Rank 0 Error Snippet]:`): not its own rank
        if pid not in scan.worker_pids:
            rank = leading_rank(message.decode("utf-8", "replace"))
            if rank is not None:
                named.setdefault(pid, Counter())[rank] += 1
    for pid, counts in named.items():
        rank, top = counts.most_common(1)[0]
        if 3 * top >= 2 * sum(counts.values()):
            scan.worker_pids.setdefault(pid, rank)


def add_census(scan: FileScan, seen_globals, seen_locals, tasks, pids=()) -> None:
    """Add the ranks one block's launcher prefixes named (srun task ids count as global ranks
    while no prefix names ranks that are not tasks), and the worker processes they named."""
    scan.global_ranks.update(seen_globals)
    scan.local_ranks.update(seen_locals)
    scan.process_pids.update(pids)
    scan.srun_tasks.update(tasks)
    if not scan.global_ranks - scan.srun_tasks:
        scan.global_ranks.update(tasks)


def _merge_lone_text_rank(found: dict, progress: dict) -> None:
    """Lines that name their rank in the message make that rank's stream only when several ranks
    do so (a console where every rank logs `Rank N step K`); one process that writes its own rank
    into some messages keeps a single stream. Both walks went from the end backwards."""
    named = [stream for stream in found if stream is not None and stream[0] is None and isinstance(stream[1], int)]
    if len(named) >= 2:
        return
    for kept in (found, progress):
        for stream in named:
            lines = kept.pop(stream, [])
            if lines:
                kept[None] = sorted(kept.get(None, []) + lines, key=lambda item: -item[0])[:TAIL_LINES if kept is found else PROGRESS_TAIL_LINES]


def _first_launched(block: Block) -> int:
    """The line of the block's first line that a launcher prefixed with its worker's name
    (torchrun's `[default0]:`, `[trainer1]:`; not torch's own `[rank0]:`): the census saw one."""
    data = block.data
    if _LAUNCHED.match(b"\n" + data[:512]):
        return block.first_line
    found = _LAUNCHED.search(data)
    return block.first_line + data.count(b"\n", 0, found.start()) + 1 if found else 0


def _prefix_census(block: Block) -> set:
    """Distinct (role, local, global) launcher prefixes of a block's lines."""
    data = block.data
    first = _CENSUS.match(b"\n" + data[:512])
    if first is not None:
        # one prefix on every line (a per-rank file): two substring counts prove it
        prefix = first.group(0)
        extends = first.group(3) is None and b"[rank" in data and data.count(prefix + b"[rank") > 0
        if not extends and data.startswith(prefix[1:]) and data.count(prefix) == block.line_count - 1:
            return {first.groups(default=b"")}
    found = set(_CENSUS.findall(data))
    head = _CENSUS.match(b"\n" + data[:512])
    if head is not None:
        found.add(head.groups(default=b""))
    return found


def _nccl_census(data: bytes, nccl_locals, scan: FileScan, first_line: int) -> None:
    """For each local rank L given, the host and pid of the first `host:pid:tid [L] NCCL` line."""
    for local in sorted(nccl_locals):
        needle = b" [%d] NCCL " % local
        position = data.find(needle)
        while position >= 0:
            start = data.rfind(b"\n", 0, position) + 1
            found = _NCCL_LINE.match(b"\n" + data[start:position + len(needle)])
            if found:
                host = found.group(1).decode("utf-8", "replace")
                if not is_placeholder_host(host):  # (a redacted host names none)
                    scan.nccl_hosts[local] = host
                    line = first_line + data.count(b"\n", 0, start)
                    scan.nccl_pids.setdefault((host, local), (int(found.group(2)), line))
                break
            position = data.find(needle, position + 1)


BIG_BLOCK = 1 << 20
_tuned = False


def _tune_allocator() -> None:
    """Keep glibc from giving every multi-megabyte block fresh pages from the kernel (and taking
    them back): with blocks served from the heap, a 1 GB scan spends ~0.8 s less in page faults."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    mallopt(m_mmap_threshold, 64 << 20)
    mallopt(m_trim_threshold, 32 << 20)
    mallopt(m_top_pad, 8 << 20)


def _valid_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _tail_window(scan: FileScan) -> tuple[int, int]:
    """(rank streams wanted, lines walked back from the end to find their last lines)."""
    wanted = stream_count(scan) if _several_streams(scan) else 1
    return wanted, min(max(TAIL_WALK_LINES, 12 * wanted * TAIL_LINES // 8), 3000)


def stream_count(scan: FileScan) -> int:
    """How many rank or worker-process streams the file's prefixes named."""
    return len(scan.global_ranks | scan.local_ranks) + len(scan.process_pids)


def _several_streams(scan: FileScan) -> bool:
    """Whether the file interleaves the output of several ranks (a combined console)."""
    return stream_count(scan) > 1


@dataclass(frozen=True)
class Process:
    """A worker process's stream, known by the pid its prefix names (Ray), before any rank."""

    pid: int


def _stream_of(prefix) -> tuple | None:
    """Which rank's (or worker process's) output a prefixed line belongs to (None when the line
    names neither)."""
    if prefix.pid is not None:
        # every line of a Ray worker carries its pid; only some carry a rank too (`[rankN]:` on its
        # tracebacks, NCCL's `[1] NCCL` on its NCCL lines): they are the same process's
        return (prefix.outer_host, Process(prefix.pid))
    return _rank_stream_of(prefix)


def _several_rank_streams(scan: FileScan) -> bool:
    return len(scan.global_ranks | scan.local_ranks) > 1


def streams_view(scan: FileScan) -> tuple[bool, bool]:
    """Whether the file's lines so far are several streams' (for their tails), and several ranks'
    (for the times lines without one inherit): what a scan of a later part must have seen alike."""
    return _several_streams(scan), _several_rank_streams(scan)


def _rank_stream_of(prefix) -> tuple | None:
    """Which rank's output a line belongs to by the rank its prefixes name: what a line without a
    time inherits one from. (A worker process's own lines may be minutes apart; in a console the
    workers share, the line before in the file is the nearer bound of when it was printed.)"""
    if prefix.rank is None and prefix.local_rank is None:
        return None
    # torchrun writes `[default2]:` on every line and `[rank2]:` only on some: the local rank
    # is the stream when present
    # the host of an outer prefix (pdsh) tells nodes apart; NCCL's own host prefix names the same
    # rank's host on some of its lines only, so it must not make those lines another stream
    return (prefix.outer_host, prefix.local_rank if prefix.local_rank is not None else prefix.rank)


def _display_text(line: str) -> str:
    """What a report shows: progress-bar segments before the last '\\r' are dropped."""
    if "\r" in line:
        segments = [segment for segment in line.split("\r") if segment.strip()]
        line = segments[-1] if segments else ""
    return line if len(line) <= 2000 else line[:2000] + " …"
