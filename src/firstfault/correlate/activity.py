"""What each rank stream printed last: the facts behind hangs, survived errors and external stops.

A stream is one rank's output in one file (a per-rank file, or one rank's prefixed lines in a
combined console). The scanner keeps each stream's last lines; this module reads progress out of
them: the last step, iteration or epoch counter a stream printed, and when.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..match.progress_lines import counter_of, counters_of, is_progress

@dataclass(frozen=True)
class StreamLine:
    line: int
    time: float | None
    text: str


@dataclass(frozen=True)
class StreamActivity:
    source: str
    rank: int | None
    host: str | None
    lines: tuple[StreamLine, ...]  # the stream's last lines, oldest first
    unprefixed: bool = False  # the lines of a combined console that name no rank (launcher, scheduler)
    progress: tuple[StreamLine, ...] = ()  # its last progress lines (steps, loss), oldest first

    @property
    def last(self) -> StreamLine | None:
        return self.lines[-1] if self.lines else None

    @property
    def last_time(self) -> float | None:
        return next((line.time for line in reversed(self.lines) if line.time is not None), None)

    @property
    def last_progress(self) -> StreamLine | None:
        return next((line for line in reversed(self.lines) if is_progress(line.text)), None)

    @property
    def last_counter(self) -> int | None:
        progress = self.last_progress
        return counter_of(progress.text) if progress else None


def stream_for(activity, source: str, rank: int | None, unprefixed: bool = False):
    """The stream a line of `source` written by `rank` belongs to, or None."""
    in_file = [stream for stream in activity if stream.source == source]
    if len(in_file) == 1:
        return in_file[0]
    if rank is None:
        return next((stream for stream in in_file if stream.unprefixed), None) if unprefixed else None
    return next((stream for stream in in_file if stream.rank == rank and not stream.unprefixed), None)


def healthy_progress_after(stream: StreamActivity, line: int, failure_lines: frozenset) -> list[StreamLine]:
    """The stream's progress lines after `line` that are not themselves failure lines."""
    seen = {item.line: item for item in (*stream.progress, *stream.lines)}
    return [item for number, item in sorted(seen.items()) if number > line
            and (stream.source, number) not in failure_lines and is_progress(item.text)]


_DIGITS = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_LEAD = re.compile(r"^[^A-Za-z]*")


def template(text: str) -> str:
    """A line with its numbers, times and leading prefixes masked: lines of different ranks and
    steps that say the same thing compare equal."""
    return _DIGITS.sub("#", _LEAD.sub("", text)).strip()


def advancing(lines: list[StreamLine]) -> bool:
    """Whether progress lines show training moving on: counters that grow, read in order (`epoch 1
    step 1` after `epoch 0 step 8`), or (with no counters at all) several metric lines."""
    counters = [value for value in (counters_of(line.text) for line in lines) if value]
    if counters:
        return len(counters) >= 2 and counters[-1] > counters[0]
    return len(lines) >= 2
