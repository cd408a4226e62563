"""One streaming pass over one input: blocks -> candidate lines -> masked -> matched hits.

Per-line Python work happens only on lines that contain a signature literal; the rest of a
block is handled by C-level regex passes (literal prefilter, launcher-prefix census).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..ingest.attribution import LinePrefix, PathHints, hints_from_path, parse_prefix
from ..ingest.reader import Block, ReadStats, Unreadable, read_blocks
from ..ingest.sources import InputFile
from ..ingest.timestamps import Clock
from ..mask import mask_secrets
from ..model import Signature
from .compiler import Matcher

TIME_LOOKBACK_LINES = 60

# Launcher prefixes, counted per block so ranks/hosts seen and local->global maps are known.
_CENSUS = re.compile(r"(?m)^(?:\s{0,3}\d{1,5}: )?(?:[\w.-]{1,64}: )?\[([A-Za-z_-]*?)(\d{1,6})\]:(?:\[rank(\d{1,6})\]:)?")
_SRUN_CENSUS = re.compile(r"(?m)^\s{0,3}(\d{1,5}): ")
_NCCL_CENSUS = re.compile(r"(?m)^(?:\s{0,3}\d{1,5}: )?(?:\[[^\]\n]{1,40}\]:)*(?:[\w.-]{1,64}: )?([A-Za-z0-9][\w.-]{0,63}):(\d+):\d+ \[(\d{1,3})\] NCCL ")


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
    nccl_hosts: dict = field(default_factory=dict)  # local rank -> host
    first_time: float | None = None
    last_time: float | None = None
    error: str = ""


class Scanner:
    """Scans inputs with one compiled Matcher and one shared Clock."""

    def __init__(self, signatures: list[Signature]) -> None:
        self.matcher = Matcher(signatures)
        self.clock = Clock()

    def scan(self, item: InputFile) -> FileScan:
        scan = FileScan(input=item, hints=hints_from_path(item.relative))
        carried_time: float | None = None
        try:
            for block in read_blocks(item, scan.stats):
                self._census(block.text, scan)
                carried_time = self._scan_block(block, scan, carried_time)
        except Unreadable as exc:
            scan.error = str(exc)
        return scan

    def _census(self, text: str, scan: FileScan) -> None:
        for role, local, global_rank in set(_CENSUS.findall(text)):
            if role == "rank":
                scan.global_ranks.add(int(local))
                continue
            scan.local_ranks.add(int(local))
            if global_rank:
                scan.local_to_global[(int(local), int(global_rank))] += 1
                scan.global_ranks.add(int(global_rank))
        if not scan.global_ranks:
            scan.global_ranks.update(int(task) for task in set(_SRUN_CENSUS.findall(text[:65536])))
        if " NCCL " not in text:
            return
        for host, _pid, local in set(_NCCL_CENSUS.findall(text)):
            scan.nccl_hosts.setdefault(int(local), host)

    def _scan_block(self, block: Block, scan: FileScan, carried_time: float | None) -> float | None:
        text = block.text
        starts = sorted({text.rfind("\n", 0, offset) + 1 for offset in self.matcher.candidate_offsets(text)})
        line_number, counted_to = block.first_line, 0
        for start in starts:
            line_number += text.count("\n", counted_to, start)
            counted_to = start
            end = text.find("\n", start)
            raw_line = text[start:] if end < 0 else text[start:end]
            self._match_line(raw_line, line_number, text, start, scan, carried_time)
        block_time = self._last_time_in(text, len(text))
        if block_time is not None:
            carried_time = block_time
            scan.last_time = block_time
            if scan.first_time is None:
                scan.first_time = self._first_time_in(text)
        return carried_time

    def _match_line(self, raw_line: str, line_number: int, text: str, start: int, scan: FileScan, carried_time) -> None:
        line = mask_secrets(raw_line)
        hits = self.matcher.match_line(line.replace("\r", " "))
        if not hits:
            return
        prefix = parse_prefix(line)
        time = self.clock.parse(line[prefix.offset:]) if prefix.offset else self.clock.parse(line)
        inherited = False
        if time is None:
            time = self._last_time_in(text, start)
            time = carried_time if time is None else time
            inherited = time is not None
        display = _display_text(line)
        for compiled, captures in hits:
            scan.hits.append(RawHit(compiled.signature, captures, line_number, display, prefix, time, inherited))

    def _last_time_in(self, text: str, end: int) -> float | None:
        """The time of the nearest earlier line in this block that carries one."""
        for _ in range(TIME_LOOKBACK_LINES):
            if end <= 0:
                return None
            start = text.rfind("\n", 0, end - 1) + 1
            line = text[start:end]
            prefix = parse_prefix(line) if line[:1] in "[0123456789 (" or ": " in line[:40] else None
            value = self.clock.parse(line[prefix.offset:] if prefix else line)
            if value is not None:
                return value
            end = start - 1 if start > 0 else 0
            if start == 0:
                return None
        return None

    def _first_time_in(self, text: str) -> float | None:
        position = 0
        for _ in range(TIME_LOOKBACK_LINES):
            end = text.find("\n", position)
            line = text[position:] if end < 0 else text[position:end]
            prefix = parse_prefix(line)
            value = self.clock.parse(line[prefix.offset:])
            if value is not None or end < 0:
                return value
            position = end + 1
        return None


def _display_text(line: str) -> str:
    """What a report shows: progress-bar segments before the last '\\r' are dropped."""
    if "\r" in line:
        segments = [segment for segment in line.split("\r") if segment.strip()]
        line = segments[-1] if segments else ""
    return line if len(line) <= 2000 else line[:2000] + " …"
