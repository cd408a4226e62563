"""Which inputs may be dumps, from their first bytes: cheap tests, and nothing heavy imported.

Every input of a diagnosis passes here (thousands of rank logs on a large job); only those that
pass one test go on to `discover.classify`, which decides, and the analysis, which reads them.
A log that passes no test is no dump: every dump `classify` takes passes one of them.
"""
from __future__ import annotations

import os
import re
from typing import Iterable

HEAD_BYTES = 64 * 1024
# The dump writer's default file names: <TORCH_FR_DUMP_TEMP_FILE><rank>.
DUMP_NAMES = ("fr_trace", "nccl_trace", "comm_lib_trace", "flight_recorder")
# No frame or thread header of a stack dump is longer; longer lines are not looked at (the frame
# patterns would take time quadratic in a long line's length)
MAX_FRAME_LINE = 2000
# Every header or frame line of a stack dump (dumps/stacks.py) contains a match of one of these: a
# head with none is no stack dump, decided at C speed. The pattern runs only where its literals
# are found by a plain substring search.
_STACK_LINE_HINTS = tuple((literals, re.compile(pattern)) for literals, pattern in (
    ((b"Thread ",), rb"Thread (?:0x[0-9A-Fa-f]+|\d+) \("),
    ((b"(most recent call first)",), rb"\(most recent call first\)"),
    ((b"Process ",), rb"Process \d+: "),
    ((b'", line ',), rb'", line \d+ in '),
    ((b"#", b" from "), rb"#\d{1,9} [^\n]{0,%d}? from [^\n]{0,%d}?:\d" % (MAX_FRAME_LINE, MAX_FRAME_LINE)),
    # a py-spy frame: four spaces, and a line that ends in a parenthesis
    ((b"    ", b")"), rb"\)[ \t]*(?:[\r\n\x0b\x0c\x1c-\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]|$)"),
))


def is_pickle(head: bytes) -> bool:
    return head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")


def looks_like_dump(head: bytes) -> bool:
    """A flight-recorder dump, by a cheap guess from the first bytes; load_dump decides."""
    if is_pickle(head):
        return b"version" in head[:4096] and (b"pg_config" in head or b"entries" in head)
    text = head.lstrip()[:4096]
    if text[:1] != b"{":
        return False
    return b'"pg_config"' in text or b'"comm_lib_version"' in text or (
        b'"entries"' in text and b'"collective_seq_id"' in text)


def has_dump_name(path: str, head: bytes) -> bool:
    """A JSON file under the dump writer's default name."""
    name = os.path.basename(path).lower()
    return any(marker in name for marker in DUMP_NAMES) and head.lstrip()[:1] == b"{"


def may_hold_stack_lines(data: bytes) -> bool:
    fast = _fast_hints()
    if fast is not None and not fast.search(data):
        return False  # one pass for all the hints (one by one: ~0.2 ms a 64 KiB head)
    return any(all(literal in data for literal in literals) and pattern.search(data)
               for literals, pattern in _STACK_LINE_HINTS)


_UNLOADED = object()
_fast = _UNLOADED


def _fast_hints():
    """The hints' patterns in one Hyperscan database (None: no Hyperscan, or the Python engine
    asked for): a no from it is final, a yes is checked by `re` above."""
    global _fast
    if _fast is _UNLOADED:
        _fast = None
        from ..match.compiler import ENGINE_VARIABLE, hyperscan_available

        if os.environ.get(ENGINE_VARIABLE, "auto") != "python" and hyperscan_available():
            from ..match.hyperscan_engine import AnyOf

            _fast = AnyOf.load([pattern.pattern for _, pattern in _STACK_LINE_HINTS])
    return _fast


def may_be_dump(path: str, head: bytes) -> bool:
    return is_pickle(head) or looks_like_dump(head) or has_dump_name(path, head) or may_hold_stack_lines(head)


def read_head(path: str) -> bytes:
    try:
        with open(path, "rb") as stream:
            return stream.read(HEAD_BYTES)
    except OSError:
        return b""  # unreadable: the engine's ingest reports it


def dump_candidates(paths: Iterable[str]) -> list[tuple[str, bytes]]:
    """(path, first bytes) of the inputs that may be dumps (the others are logs); the heads go on
    to `discover.analyze_heads`, which need not read them again."""
    heads = ((path, read_head(path)) for path in paths)
    return [(path, head) for path, head in heads if may_be_dump(path, head)]
