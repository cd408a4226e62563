"""The logs in the forms they reach firstfault, read back as they were written.

    inputs = as_written(inputs)

Each input passes, in this order: a UTF-16 text of a few inputs (Windows PowerShell's `>`) is read
as UTF-8 (`encoding`), so that all below applies to it too; the margin of a Markdown code block or
a reply's quote is taken off (`margin`); so are the line numbers of `grep -n` or `cat -n` output (`numbered`, only when a few
inputs are given, as below); a paste's hard-wrapped lines are joined again (`wrapped`, only when a few inputs
are given: a job's own files are never wrapped); a collector's time before every line goes behind
the line's launcher prefix (`collected`); several files pasted as one text (`tail`, `grep`), or
containers' outputs interleaved by Docker Compose, are cut back into those files (`combined`),
whose lines may again carry a collector's time. An input's first bytes are read once for these (again
only from a text one of them rewrote); most logs are none of these and stay as they are.
"""
from __future__ import annotations

from .collected import as_logged
from .combined import split_combined
from .encoding import as_utf8
from .margin import FIRST_BYTES, without_margin
from .numbered import without_line_numbers
from .sources import InputFile
from .wrapped import unwrapped

PASTED_INPUTS = 16  # more inputs than this are a job's files, not a paste


def as_written(inputs: list[InputFile]) -> list[InputFile]:
    pasted = len(inputs) <= PASTED_INPUTS
    return [piece for item in inputs for piece in _as_written(item, pasted)]


def _as_written(item: InputFile, pasted: bool) -> list[InputFile]:
    head = item.head(FIRST_BYTES)
    rewrites = (as_utf8, without_margin, without_line_numbers, _unwrapped, as_logged) if pasted else (without_margin, as_logged)
    for rewrite in rewrites:
        rewritten = rewrite(item, head)
        if rewritten is not item:
            item, head = rewritten, rewritten.head(FIRST_BYTES)
    pieces = split_combined(item, head)
    if len(pieces) == 1 and pieces[0] is item:
        return pieces
    # each piece is a text as written in turn (a post's code block hard-wrapped, containers' lines
    # behind a collector's time, tail's output inside a code block); each is shorter than the text
    return [written for piece in pieces for written in _as_written(piece, pasted)]


def _unwrapped(item: InputFile, _head: bytes | None) -> InputFile:
    return unwrapped(item)  # it measures the width on a longer head of its own
