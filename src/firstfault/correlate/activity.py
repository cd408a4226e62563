"""What each rank stream printed last: the facts behind hangs, survived errors and external stops.

A stream is one rank's output in one file (a per-rank file, or one rank's prefixed lines in a
combined console). The scanner keeps each stream's last lines; this module reads progress out of
them: the last step, iteration or epoch counter a stream printed, and when.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Counters training loops print: `step 1120`, `iter 1040 / 1125`, `Epoch 3`, `global_step=500`,
# `[epoch 0], [iter 1100 / 1125]`, tqdm's `Epoch 0:  64%|...| 2000/3117`.
_COUNTER = re.compile(
    r"(?i)\b(?:global[_ ]step|step|steps|iter|iteration|it|epoch|batch|update)s?\b\s*[:=#]?\s*\[?\s*(\d{1,9})\b"
    r"|\|\s*(\d{1,9})/(?:\d{1,9}|\?)\s*\[")
# Words that say a line reports training progress even without a counter (`loss=2.41`).
_PROGRESS_WORDS = re.compile(r"(?i)\b(?:loss|lr|learning[_ ]rate|grad[_ ]norm|tokens?/s|samples?/s|it/s|s/it|throughput|accuracy|acc|ppl|perplexity)\b\s*[:=]?\s*[-+]?\d")


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


def is_progress(text: str) -> bool:
    return bool(_PROGRESS_WORDS.search(text) or _COUNTER.search(text) and ("%|" in text or _has_metric(text)))


def _has_metric(text: str) -> bool:
    return bool(re.search(r"\d\.\d|\d+/\d+", text))


def counter_of(text: str) -> int | None:
    """The largest step-like counter on a progress line."""
    values = [int(a or b) for a, b, in ((m.group(1), m.group(2)) for m in _COUNTER.finditer(text)) if (a or b)]
    return max(values) if values else None
