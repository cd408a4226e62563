"""How sure the verdict is, beyond how specific the winning signature is.

A signature's weight ranks candidates: a generic `KeyError: ...` line weighs 0.3 so that any more
specific failure beats it. As a confidence that weight undersells a clear-cut case: an uncaught
exception printed with its traceback, that nothing else competes with and that the run did not
survive (the verdict is not `healthy`), is what the process died of. Rule `traceback-ended-run`
raises the confidence of such a primary to TRACEBACK_CONFIDENCE; everything else keeps the
weight-based value.
"""
from __future__ import annotations

from ..model import Match

TRACEBACK_CONFIDENCE = 0.9
TRACEBACK_HEADER = "failed-traceback"  # the context signature of `Traceback (most recent call last):`
TRACEBACK_LINES = 400  # the header is at most this many lines above the exception line


def traceback_ended_run(confidence: float, initiating: Match, matches: list[Match], rival_weights: list[float]) -> float:
    """The confidence of a primary whose initiating line is the last line of a printed traceback.

    `rival_weights`: the weights of the other failures the engine considered; any rival at least
    as heavy as the primary means the case is not clear-cut and the confidence stays."""
    if confidence >= TRACEBACK_CONFIDENCE or initiating.role != "root":
        return confidence
    if any(weight >= initiating.signature.weight for weight in rival_weights):
        return confidence
    origin = initiating.line.origin
    for match in matches:
        header = match.line.origin
        if (match.signature.name == TRACEBACK_HEADER and header.source == origin.source
                and header.rank == origin.rank and 0 < origin.line - header.line <= TRACEBACK_LINES):
            return TRACEBACK_CONFIDENCE
    return confidence
