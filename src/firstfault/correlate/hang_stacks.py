"""Stacks taken from hung processes, as logs show them: the traceback Ctrl-C leaves
(`KeyboardInterrupt`, most recent call last) and faulthandler's timed dumps (`Timeout (0:10:00)!`,
most recent call first). Each says where one process was waiting."""
from __future__ import annotations

from dataclasses import dataclass

from ..match.context import FRAME_SIGNATURES, HANG_STACK_MARKER, STACK_FRAME, TRACEBACK_HEADER
from ..model import Match
from .hangs import BACKWARD_OPS

STACK_LINES = 80  # a stack is at most this many lines long
FRAME_GAP = 3  # frame lines of one stack are at most this far apart
# A launcher's own stack (it waits for its workers) says nothing about where a worker waited.
LAUNCHER_FILES = ("commands/launch.py", "distributed/run.py", "distributed/launch.py", "elastic/agent/",
                  "deepspeed/launcher/", "multiprocessing/spawn.py")


@dataclass(frozen=True)
class HangStack:
    marker: Match
    frames: tuple[Match, ...]  # outermost first
    ops: tuple[str, ...]  # collective frames (c10d op names, backward), outermost first

    @property
    def rank(self) -> int | None:
        return self.marker.line.origin.rank

    @property
    def innermost(self) -> Match:
        return self.frames[-1]

    @property
    def wait(self) -> str:
        """Where the process waited: its innermost collective, else its innermost function."""
        if self.ops:
            return "backward" if self.ops[-1] in BACKWARD_OPS or (self.ops[-1] == "all_reduce" and "backward" in self.ops) else self.ops[-1]
        return self.innermost.captures.get("func", "")

    @property
    def functions(self) -> list[str]:
        return [frame.captures.get("func", "").lower() for frame in self.frames]


def hang_stacks(matches) -> tuple[HangStack, ...]:
    by_stream: dict[tuple, list[Match]] = {}
    markers = []
    for match in matches:
        name = match.signature.name
        if name == HANG_STACK_MARKER:
            markers.append(match)
        if name in (STACK_FRAME, TRACEBACK_HEADER, HANG_STACK_MARKER) or name in FRAME_SIGNATURES:
            by_stream.setdefault((match.line.origin.source, match.line.origin.rank), []).append(match)
    stacks = []
    for marker in markers:
        origin = marker.line.origin
        lines = by_stream.get((origin.source, origin.rank), [])
        if "Timeout (" in marker.line.text:
            block = _block(lines, origin.line, forward=True)
        else:
            block = _block(lines, origin.line, forward=False)
        frames = tuple(m for m in block if m.signature.name == STACK_FRAME)
        if not frames or any(launcher in frame.captures.get("file", "") for frame in frames for launcher in LAUNCHER_FILES):
            continue
        ops = tuple(m.captures["op"] for m in block if m.signature.name in FRAME_SIGNATURES)
        stacks.append(HangStack(marker, frames, ops))
    return tuple(stacks)


def _block(lines: list[Match], at: int, forward: bool) -> list[Match]:
    """The frame lines of the stack next to a marker (after it for most-recent-first dumps)."""
    ordered = sorted(lines, key=lambda m: m.line.origin.line)
    if forward:
        # faulthandler lists the innermost frame first: reverse to outermost first
        candidates = [m for m in ordered if at < m.line.origin.line <= at + STACK_LINES]
        block, last = [], at
        for match in candidates:
            if match.line.origin.line - last > FRAME_GAP or match.signature.name in (HANG_STACK_MARKER, TRACEBACK_HEADER):
                break
            block.append(match)
            last = match.line.origin.line
        return block[::-1]
    candidates = [m for m in reversed(ordered) if at - STACK_LINES <= m.line.origin.line < at]
    block, last = [], at
    for match in candidates:
        if last - match.line.origin.line > FRAME_GAP or match.signature.name in (HANG_STACK_MARKER, TRACEBACK_HEADER):
            break
        block.append(match)
        last = match.line.origin.line
    return block[::-1]
