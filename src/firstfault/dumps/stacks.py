"""Stack dumps of all ranks: parse them, group ranks by stack, name the odd ones out.

Formats read (innermost frame first in all three):
  py-spy dump     `Thread 123 (idle): "MainThread"` then `    func (file.py:12)`
  faulthandler    `Thread 0x... (most recent call first):` / `Current thread 0x...`
                  then `  File "file.py", line 12 in func`
  PyTorch         `#0 all_reduce from file.py:12` (the flight recorder's traceback that
                  ProcessGroupNCCL prints as "Stack trace of the failed collective")
The rank comes from a `[rank3]:` line prefix, else from the file name.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Sequence

from firstfault.errors import InputError

from .ranks import LINE_PREFIX, format_ranks, rank_from_name
from .results import Frame, StackGroup, StackResult
from .sniff import MAX_FRAME_LINE, may_hold_stack_lines
from .stack_frames import describe, grouping_key, in_collective

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_PYSPY_THREAD = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(([a-z+ ]+)\)(?::\s*"(.*)")?\s*$')
# Exactly four spaces: deeper lines are --locals values, not frames.
_PYSPY_FRAME = re.compile(r"^ {4}(\S[^()]*?(?:\([^)]*\))?[^()]*?) \(([^()]+?)(?::(\d+))?\)\s*$")
_FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9A-Fa-f]+)(?: \[(.*)\])? \(most recent "
                        r"call first\):\s*$")
_FH_STACK = re.compile(r"^Stack \(most recent call first\):\s*$")
_FH_FRAME = re.compile(r'^\s*File "(.+)", line (\d+) in (.+?)\s*$')
_TORCH_FRAME = re.compile(r"^\s*#(\d+) (.+?) from (.+?):(\d+)\s*$")
_PROCESS = re.compile(r"^Process \d+: ")
@dataclass(frozen=True)
class ThreadStack:
    name: str
    current: bool
    frames: tuple[Frame, ...]  # innermost first


@dataclass(frozen=True)
class RankStack:
    """One rank's stacks from one source; `main` is the thread the grouping compares."""

    rank: int | None
    source: str
    fmt: str  # "py-spy", "faulthandler", "torch"
    threads: tuple[ThreadStack, ...]

    @property
    def main(self) -> ThreadStack | None:
        def score(thread: ThreadStack) -> tuple:
            outermost = thread.frames[-1].function if thread.frames else ""
            return (outermost == "<module>", thread.name == "MainThread", thread.current)
        return max(self.threads, key=score) if self.threads else None


def looks_like_stacks(head: bytes) -> bool:
    """True when most non-empty lines of the first bytes are stack-dump lines."""
    if not may_hold_stack_lines(head):
        return False
    lines = [_strip_prefix(line)[1] for line in head.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line.strip()][:400]
    headers = sum(1 for line in lines if _is_header(line))
    kinds = [found[0] for found in map(_frame, lines) if found]
    frames = len(kinds)
    # a py-spy frame is any indented line that ends in parentheses (`    loss 0.3 (12 samples/s)`
    # in a log pasted as a code block): without a thread header, only other frames make a dump
    headless = sum(1 for kind in kinds if kind != "py-spy")
    return bool(lines) and headers + frames > 0 and (headers + frames) * 10 >= len(lines) * 6 and (
        headers > 0 or headless >= 2)


def load_stacks(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[RankStack, ...]:
    try:
        with open(path, "rb") as stream:
            data = stream.read(max_bytes)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}",
                         "pass py-spy dump or faulthandler output files") from None
    stacks = parse_stack_text(data.decode("utf-8", "replace"), path, rank_from_name(path))
    if not stacks:
        raise InputError(f"{path}: no stack found", "pass py-spy dump or faulthandler output")
    return stacks


def parse_stack_text(text: str, source: str, rank: int | None = None) -> tuple[RankStack, ...]:
    """Every stack in the text, bucketed by rank (line prefix first, then `rank`)."""
    buckets: dict[int | None, dict] = {}
    for raw in text.splitlines():
        prefixed, line = _strip_prefix(raw)
        owner = prefixed if prefixed is not None else rank
        bucket = buckets.setdefault(owner, {"threads": [], "fmt": ""})
        _feed(bucket, line)
    stacks = []
    for owner, bucket in buckets.items():
        threads = tuple(ThreadStack(t["name"], t["current"], tuple(t["frames"]))
                        for t in bucket["threads"] if t["frames"])
        if threads:
            stacks.append(RankStack(rank=owner, source=source, fmt=bucket["fmt"], threads=threads))
    return tuple(stacks)


def _strip_prefix(line: str) -> tuple[int | None, str]:
    found = LINE_PREFIX.match(line)
    return (int(found.group(1)), line[found.end():]) if found else (None, line)


def _is_header(line: str) -> bool:
    if len(line) > MAX_FRAME_LINE:
        return False
    return bool(_PYSPY_THREAD.match(line) or _FH_THREAD.match(line) or _FH_STACK.match(line)
                or _PROCESS.match(line))


def _frame(line: str) -> tuple[str, Frame] | None:
    if len(line) > MAX_FRAME_LINE:
        return None
    found = _FH_FRAME.match(line)
    if found:
        return "faulthandler", Frame(found.group(3), found.group(1), int(found.group(2)))
    found = _TORCH_FRAME.match(line)
    if found:
        return "torch", Frame(found.group(2), found.group(3), int(found.group(4)))
    found = _PYSPY_FRAME.match(line)
    if found and not line.lstrip().startswith(("File ", "Thread ")):
        return "py-spy", Frame(found.group(1).strip(), found.group(2), int(found.group(3) or 0))
    return None


def _feed(bucket: dict, line: str) -> None:
    if len(line) > MAX_FRAME_LINE:
        return
    header = _PYSPY_THREAD.match(line)
    if header:
        _open_thread(bucket, "py-spy", header.group(3) or header.group(1), False)
        return
    header = _FH_THREAD.match(line)
    if header:
        name = header.group(3) or header.group(2)
        _open_thread(bucket, "faulthandler", name, header.group(1) == "Current thread")
        return
    if _FH_STACK.match(line):
        _open_thread(bucket, "faulthandler", "", True)
        return
    parsed = _frame(line)
    if parsed is None:
        return
    fmt, frame = parsed
    if fmt == "torch" and line.strip().startswith("#0 "):
        _open_thread(bucket, "torch", "collective", False)
    if not bucket["threads"]:
        _open_thread(bucket, fmt, "", False)
    bucket["threads"][-1]["frames"].append(frame)


def _open_thread(bucket: dict, fmt: str, name: str, current: bool) -> None:
    bucket["fmt"] = bucket["fmt"] or fmt
    bucket["threads"].append({"name": name, "current": current, "frames": []})


def group_stacks(stacks: Sequence[RankStack]) -> StackResult:
    """Group ranks by their main thread's normalized stack and name the odd ones out."""
    notes: list[str] = []
    by_rank = _one_per_rank(stacks, notes)
    keyed: dict[tuple, list[int]] = {}
    frames_of: dict[tuple, tuple[Frame, ...]] = {}
    for rank, stack in by_rank.items():
        frames = stack.main.frames
        key = grouping_key(frames)
        keyed.setdefault(key, []).append(rank)
        frames_of.setdefault(key, frames)
    groups = sorted((StackGroup(tuple(ranks), frames_of[key], in_collective(frames_of[key]))
                     for key, ranks in keyed.items()), key=lambda g: (-len(g.ranks), g.ranks))
    odd, why = _odd_ones(groups)
    return StackResult(groups=tuple(groups), odd_ranks=odd,
                       explanation=tuple(notes + why),
                       sources=tuple(sorted({stack.source for stack in by_rank.values()})))


def _one_per_rank(stacks: Sequence[RankStack], notes: list[str]) -> dict[int, RankStack]:
    by_rank: dict[int, RankStack] = {}
    for stack in stacks:
        if stack.rank is None:
            notes.append(f"{os.path.basename(stack.source)}: no rank in its name or lines; "
                         "its stacks were left out.")
        elif stack.rank not in by_rank and stack.main is not None:
            by_rank[stack.rank] = stack
    return dict(sorted(by_rank.items()))


def _odd_ones(groups: list[StackGroup]) -> tuple[tuple[int, ...], list[str]]:
    if not groups:
        return (), ["No stack dump could be read."]
    if len(groups) == 1:
        only = groups[0]
        return (), [f"All {len(only.ranks)} ranks with a stack dump are in "
                    f"{describe(only.frames)}: the stacks single out no rank."]
    waiting = [group for group in groups if group.in_collective]
    elsewhere = [group for group in groups if not group.in_collective]
    if waiting and elsewhere:
        odd_groups, reason = elsewhere, ", outside any collective"
    elif len(groups[0].ranks) > len(groups[1].ranks):
        odd_groups, reason = groups[1:], ""
    else:
        return (), ["The stacks split into equal groups: " + _listing(groups) + "."]
    odd = tuple(sorted(rank for group in odd_groups for rank in group.ranks))
    rest = [group for group in groups if group not in odd_groups]
    lines = [f"{format_ranks(group.ranks)} {_is(group)} in {describe(group.frames)}{reason}"
             for group in odd_groups]
    others = "; ".join(f"{format_ranks(g.ranks)} {_verb(g)} {describe(g.frames)}" for g in rest)
    return odd, [_capital(line + f", while {others}.") for line in lines]


def _capital(line: str) -> str:
    return line[:1].upper() + line[1:]


def _is(group: StackGroup) -> str:
    return "is" if len(group.ranks) == 1 else "are"


def _verb(group: StackGroup) -> str:
    if group.in_collective:
        return "waits in" if len(group.ranks) == 1 else "wait in"
    return f"{_is(group)} in"


def _listing(groups: list[StackGroup]) -> str:
    return "; ".join(f"{format_ranks(g.ranks)} in {describe(g.frames)}" for g in groups)
