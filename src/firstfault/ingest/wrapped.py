"""A log pasted hard-wrapped: its long lines broken at a fixed width, read joined again.

    item = unwrapped(item)   # the same item when its lines show no such width

A terminal's copy, a mail or a forum post breaks a long line into pieces of one width: the error
line (`RuntimeError: CUDA error: ... device-side assert triggered`), a launcher's report, a
watchdog timeout become two or three lines none of which says it whole, and the pieces after the
first lose the line's launcher prefix. A text shows such a width W when no line is longer, at
least MIN_PIECES lines (and one in twenty) are exactly W long, and the line after such a line
reads as the rest of it: it is not blank, not itself a new line's start (a date, a time, a
bracketed or srun prefix, a syslog date, a traceback's frame), and the break falls inside a word
(letters or digits on both sides) or right after a blank the piece ends in, for at least a third
of them. Each run of W-long lines is joined
with the line that ends it; an empty line stays in place of each piece taken up, so line numbers
do not change. Logs on disk written by the job itself are never wrapped: only a few inputs (a
paste, a saved post) are looked at (`pasted.PASTED_INPUTS`).
"""
from __future__ import annotations

import re
from dataclasses import replace

from .reader import starts_as_plain_text, without_terminal_codes
from .sources import InputFile

MAX_WRAPPED_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 64 * 1024  # where the width is measured
MIN_WIDTH = 40
MIN_PIECES = 3
PIECE_SHARE = 20  # at least one line in this many is a piece of the width
REMAINDER_SHARE, RESHAPED_SHARE, SPLIT_WORD_SHARE = 0.3, 0.7, 0.3

# how a line of a log starts that the rest of a longer line does not
_LINE_START = re.compile(rb"\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|\[|\s{0,5}\d{1,6}: |[A-Z][a-z]{2} [ \d]\d |  File |Traceback ")


def unwrapped(item: InputFile) -> InputFile:
    """`item` with its hard-wrapped lines joined (as in-memory content)."""
    head = item.head(HEAD_BYTES)
    if not head or not starts_as_plain_text(head):
        return item  # gzip, UTF-16 and binary inputs are read as they are
    whole = len(head) < HEAD_BYTES  # the whole text: its last line is complete, line end or not
    width = _width(without_terminal_codes(head), whole)  # a terminal wraps what it shows, not its colour codes
    if width is None:
        return item
    data = item.whole(MAX_WRAPPED_BYTES)
    data = without_terminal_codes(data) if data is not None else None
    if data is None or re.search(rb"[^\r\n]{%d}" % (width + 1), data):
        return item  # a longer line: that width is not a wrap's
    pieces = re.compile(rb"^((?:[^\r\n]{%d}\r?\n)+)([^\r\n]*)" % width, re.MULTILINE)
    return replace(item, path=None, content=pieces.sub(_joined, data))


def _joined(run: re.Match) -> bytes:
    taken = run.group(1).split(b"\n")[:-1]
    return b"".join(piece.rstrip(b"\r") for piece in taken) + run.group(2) + b"\n" * len(taken)


def _width(head: bytes, whole: bool = False) -> int | None:
    """The width the head's long lines are broken at, or None. `whole`: the head is the whole text."""
    lines = [line.rstrip(b"\r") for line in head.split(b"\n")]
    lines = lines if whole and lines[-1] else lines[:-1]  # else the last may be cut (or is empty)
    written = sum(1 for line in lines if line.strip())
    width = max(map(len, lines), default=0)
    if width < MIN_WIDTH:
        return None
    broken = [index for index in range(len(lines) - 1) if len(lines[index]) == width]
    if len(broken) < MIN_PIECES or len(broken) * PIECE_SHARE < written:
        return None
    rests = [(lines[index], lines[index + 1]) for index in broken]
    remainders = sum(1 for _, rest in rests if rest.strip() and len(rest) < width)
    reshaped = sum(1 for piece, rest in rests if rest.strip() and _shape(rest) != _shape(piece))
    split_words = sum(1 for piece, rest in rests if _cut_mid_line(piece, rest))
    if (remainders < REMAINDER_SHARE * len(broken) or reshaped < RESHAPED_SHARE * len(broken)
            or split_words < SPLIT_WORD_SHARE * len(broken)):
        return None
    return width


def _cut_mid_line(piece: bytes, rest: bytes) -> bool:
    """Whether the break between a piece and the line after it falls inside a line: inside a
    word (letters or digits on both sides), or right after a blank (the piece ends in one, as
    a terminal leaves it when the width falls between two words), the rest not a line's start."""
    if _LINE_START.match(rest) or not rest[:1].strip():
        return False
    return (piece[-1:].isalnum() and rest[:1].isalnum()) or piece[-1:] in (b" ", b"\t")


def _shape(line: bytes) -> bytes:
    """A line's first characters as classes (digit 9, letter a, blank _), to tell records of one
    template (`[2024-05-02 22:20:18,674] rank3 ...` after `[2024-05-02 ...`) from pieces."""
    return bytes(57 if 48 <= byte <= 57 else 97 if (65 <= byte <= 90 or 97 <= byte <= 122) else 95 if byte in (9, 32)
                 else byte for byte in line[:8])
