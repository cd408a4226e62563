"""What a hang's timeouts say: which collective each rank was in, and how far each rank got.

Helpers for the hang rules (correlate/rules/hang.py): the collective a rank was in when it timed
out (traceback frames, NCCL OpType / SeqNum captures), and which ranks only lost their peers.
"""
from __future__ import annotations

from ..model import Match

BACKWARD_OPS = {"_engine_run_backward", "run_backward", "backward"}
_DISCONNECT_WORDS = ("closed by peer", "reset by peer", "Connection closed", "Broken pipe", "Connection reset")
FRAME_LOOKBACK_LINES = 60


def op_for(timeout: Match, frames) -> str | None:
    """The collective the rank was in: its traceback's innermost c10d frame, else the
    OpType the watchdog line names (a gloo send/recv is transport, not a collective)."""
    origin = timeout.line.origin
    before = [frame for frame in frames
              if frame.line.origin.source == origin.source and frame.line.origin.rank == origin.rank
              and 0 <= origin.line - frame.line.origin.line <= FRAME_LOOKBACK_LINES]
    if before:
        op = before[-1].captures.get("op")
        return "backward" if op in BACKWARD_OPS else op
    op = (timeout.captures.get("op") or "").lower()
    return op if op and op not in ("send", "recv") else None


def is_disconnect(match: Match) -> bool:
    return any(word in match.line.text for word in _DISCONNECT_WORDS)


def first_by_rank(matches) -> dict:
    first: dict = {}
    for match in matches:
        first.setdefault(match.line.origin.rank, match)
    return first


def first_disconnects(collateral) -> dict[int, Match]:
    return {rank: match for rank, match in first_by_rank(
        [match for match in collateral if is_disconnect(match)]).items() if rank is not None}


def sequence_progress(timeouts) -> dict[int, int]:
    """NCCL: rank -> the highest SeqNum it waited in, or its last enqueued work."""
    waiting: dict[int, int] = {}
    enqueued: dict[int, int] = {}
    for match in timeouts:
        rank = match.line.origin.rank
        if rank is None:
            continue
        if "seq" in match.captures:
            waiting[rank] = max(waiting.get(rank, 0), int(match.captures["seq"]))
        if "enqueued" in match.captures:
            enqueued[rank] = int(match.captures["enqueued"])
    return {**waiting, **enqueued}
