"""Tracebacks Python printed and went on from are not failures.

`Exception ignored in: <... __del__>` (an exception in a destructor or at shutdown), `Exception
in thread X:` (a background thread died, the process did not) and a multiprocessing queue's
feeder thread reporting a closed pipe all print a full traceback while the run continues; so does
torchrun's agent when its exit barrier (the wait for the other agents, after its own workers
ended) fails, as when the agent holding the store left first. The
lines of such a traceback, from its header to its exception line, are dropped before the verdict.
"""
from __future__ import annotations

from ..match.context import ERROR_STATEMENT, FAILURE_SIGNATURES, NONFATAL, TRACEBACK_HEADER
from ..model import Match

REGION_LINES = 60  # a traceback longer than this after its header is not the same one
EXCEPTION_LINE = "python-exception-line"


def without_nonfatal(matches: list[Match]) -> list[Match]:
    regions = _regions(matches)
    if not regions:
        return matches
    return [match for match in matches if not _failure_sign(match) or not _inside(match, regions)]


def _failure_sign(match: Match) -> bool:
    """A line that could make the verdict a failure (context lines only help attribute one)."""
    return match.role != "context" or match.signature.name in (*FAILURE_SIGNATURES, ERROR_STATEMENT)


def _regions(matches: list[Match]) -> dict[tuple, list[tuple[int, int]]]:
    """(source, rank) -> [(first line, last line)] of each non-fatal traceback."""
    ends: dict[tuple, list[int]] = {}
    headers: dict[tuple, list[int]] = {}
    for match in matches:
        if match.signature.name == EXCEPTION_LINE:
            ends.setdefault(_stream(match), []).append(match.line.origin.line)
        elif match.signature.name == TRACEBACK_HEADER:
            headers.setdefault(_stream(match), []).append(match.line.origin.line)
    regions: dict[tuple, list[tuple[int, int]]] = {}
    for match in matches:
        if match.signature.name != NONFATAL:
            continue
        stream, marker = _stream(match), match.line.origin.line
        # a marker inside the traceback (the feeder thread's frame) starts at its header
        earlier_end = max((line for line in ends.get(stream, ()) if line < marker), default=0)
        start = max((line for line in headers.get(stream, ()) if earlier_end < line <= marker
                     and marker - line <= REGION_LINES), default=marker)
        later = [line for line in ends.get(stream, ()) if marker <= line <= marker + REGION_LINES]
        regions.setdefault(stream, []).append((start, min(later) if later else marker + REGION_LINES))
    return regions


def _inside(match: Match, regions: dict) -> bool:
    line = match.line.origin.line
    return any(start <= line <= end for start, end in regions.get(_stream(match), ()))


def _stream(match: Match) -> tuple:
    return match.line.origin.source, match.line.origin.rank
