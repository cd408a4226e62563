"""Which log lines report training progress, the step counter and the epoch they carry, and which
are only a traceback's body (they say nothing of what a rank was doing).

Used by the scanner (to keep each rank stream's last progress lines) and by the correlator (to
tell an error the run outlived from one it died of).
"""
from __future__ import annotations

import re

# Counters training loops print: `step 1120`, `iter 1040 / 1125`, `Epoch 3`, `global_step=500`,
# `[epoch 0], [iter 1100 / 1125]`, tqdm's `Epoch 0:  64%|...| 2000/3117`.
_COUNTER = re.compile(
    r"(?i)\b(?:global[_ ]step|step|steps|iter|iteration|it|epoch|batch|update)s?\b\s*[:=#]?\s*\[?\s*(\d{1,9})\b"
    r"|\|\s*(\d{1,9})/(?:\d{1,9}|\?)\s*\[")
# Words that say a line reports training progress even without a counter (`loss=2.41`).
_PROGRESS_WORDS = re.compile(r"(?i)\b(?:loss|lr|learning[_ ]rate|grad[_ ]norm|tokens?/s|samples?/s|it/s|s/it|throughput|accuracy|acc|ppl|perplexity)\b\s*[:=]?\s*[-+]?\d")


def is_progress(text: str) -> bool:
    return bool(_PROGRESS_WORDS.search(text) or _COUNTER.search(text) and ("%|" in text or _has_metric(text)))


def _has_metric(text: str) -> bool:
    return bool(re.search(r"\d\.\d|\d+/\d+", text))


def counter_of(text: str) -> int | None:
    """The largest step-like counter on a progress line."""
    values = counters_of(text)
    return max(values) if values else None


def counters_of(text: str) -> tuple[int, ...]:
    """The step-like counters on a progress line, in order (`epoch 1 step 5/8` -> (1, 5)): a later
    line of the same loop compares greater, also across an epoch (`epoch 0 step 8/8` < `epoch 1 step 1/8`)."""
    return tuple(int(a or b) for a, b, in ((m.group(1), m.group(2)) for m in _COUNTER.finditer(text)) if (a or b))


_OF_TOTAL = re.compile(r"\b(\d{1,9})\s*/\s*(\d{1,9})\b")


def short_of_total(text: str) -> tuple[int, int] | None:
    """`step 4/40` -> (4, 40) when a progress line's count is short of its total (the last count
    on the line); None when it reached it or gives none."""
    found = _OF_TOTAL.findall(text)
    if not found:
        return None
    done, total = (int(value) for value in found[-1])
    return (done, total) if 0 < done < total else None


_TRACE_BODY = ("frame #", "File \"", "File '", "^", "~", "Traceback (most recent call last)", "Exception raised from")


def is_traceback_body(text: str) -> bool:
    """A traceback's frame, code or caret line (Python's or c10's): it says where a process was
    in the code when it raised, not what it was doing."""
    stripped = text.strip()
    return stripped.startswith(_TRACE_BODY) or (text.startswith("    ") and bool(stripped))


# `epoch 3`, `Epoch 3:`, `epoch=3`, `[epoch 3]`, `Epoch 3/10` (not `epochs 10`, a setting)
_EPOCH = re.compile(r"(?i)\bepoch\b\s*[:=#]?\s*\[?\s*(\d{1,6})\b")


def epoch_of(text: str) -> int | None:
    """The epoch a line names, when it names one."""
    found = _EPOCH.search(text)
    return int(found.group(1)) if found else None
