"""Where an exception was raised can say what failed: a signature's `raised_in` frame patterns.

One exception reads differently by where it came from: `ConnectionResetError` raised while the
main process takes a batch's tensors from a DataLoader worker (the worker's resource sharer, in
`rebuild_storage_fd`) says that worker died; raised by a client of a web service it says nothing
of the kind. A signature with `raised_in` holds on a line only when that exception's traceback
shows a frame matching each of its patterns; otherwise the line is dropped from that signature
(its other signatures, as the generic exception line, still read it).

An exception's traceback is the frames printed before it in its stream (file and rank), after
the stream's last traceback header or exception line before it, within TRACEBACK_LINES.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache

from ..match.context import STACK_FRAME, TRACEBACK_HEADER
from ..model import Match
from .nonfatal import EXCEPTION_LINE

TRACEBACK_LINES = 400  # a traceback's header is at most this many lines above its exception line


def where_raised(matches: list[Match]) -> list[Match]:
    """`matches` without the hits of `raised_in` signatures whose traceback lacks their frames."""
    gated = [match for match in matches if match.signature.raised_in]
    if not gated:
        return matches
    frames, bounds = _frames_and_bounds(matches)
    dropped = {id(match) for match in gated if not _raised_where(match, frames, bounds)}
    return [match for match in matches if id(match) not in dropped] if dropped else matches


def _frames_and_bounds(matches: list[Match]) -> tuple[dict, dict]:
    """By stream: its frame lines (line number, text), and the lines that begin or end a traceback."""
    frames: dict[tuple, list[tuple[int, str]]] = {}
    bounds: dict[tuple, list[int]] = {}
    for match in matches:
        name = match.signature.name
        if name == STACK_FRAME:
            frames.setdefault(_stream(match), []).append((match.line.origin.line, match.line.text))
        elif name in (TRACEBACK_HEADER, EXCEPTION_LINE):
            bounds.setdefault(_stream(match), []).append(match.line.origin.line)
    for lines in (*frames.values(), *bounds.values()):
        lines.sort()
    return frames, bounds


def _raised_where(match: Match, frames: dict, bounds: dict) -> bool:
    stream, line = _stream(match), match.line.origin.line
    before = [bound for bound in bounds.get(stream, ()) if bound < line]
    start = max(before[-1] if before else 0, line - TRACEBACK_LINES)
    own = frames.get(stream, [])
    texts = [text for number, text in own[bisect_left(own, (start + 1, "")):] if number < line]
    return all(any(_compiled(pattern).search(text) for text in texts) for pattern in match.signature.raised_in)


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _stream(match: Match) -> tuple:
    return match.line.origin.source, match.line.origin.rank
