"""A log pasted with a margin on every line, read as the log it was.

    item = without_margin(item)   # the same item when its lines carry no common margin

Logs reach firstfault out of issue threads, chats and mails as often as from disk: a Markdown
code block indents every line by four spaces, a reply quotes every line with `> ` (`> > ` a
reply to a reply). With the margin, nothing that is said at a line's start is found there: the
launcher prefix (`[rank3]:`, `3: `), a traceback's frames, the first words of an error line.
When every non-empty line of a text carries the same margin, the margin says nothing of the log,
and it is taken off (line numbers do not change). The whole text is checked, not a sample: a log
whose first lines only are indented (a configuration dump) keeps its indentation.
"""
from __future__ import annotations

import re
from dataclasses import replace

from .reader import starts_as_plain_text
from .sources import InputFile

MAX_MARGIN_BYTES = 256 * 1024 * 1024  # larger texts are read as they are (the copy would sit in memory)
FIRST_BYTES = 4096  # the first lines decide whether the whole text is looked at
MIN_INDENT = 2  # spaces; one is too common in logs (right-aligned srun labels) to be a paste's (a tab is one)
MAX_QUOTE_DEPTH = 4

_INDENT = re.compile(rb"[ \t]*")
_QUOTE = rb"[ \t]{0,3}> ?"  # one level of a mail or Markdown quote


def without_margin(item: InputFile, head: bytes | None = None) -> InputFile:
    """`item` with the margin every non-empty line carries taken off (as in-memory content).
    `head`: its first FIRST_BYTES, when the caller read them already."""
    head = item.head(FIRST_BYTES) if head is None else head
    if head is None or not starts_as_plain_text(head):
        return item  # gzip, UTF-16 and binary inputs are read as they are
    margin = _margin(complete_lines(head))
    if margin is None:
        return item
    data = item.whole(MAX_MARGIN_BYTES)
    if data is None or _some_line_lacks(margin, data):
        return item
    return replace(item, path=None, content=margin.sub(b"", data))


def complete_lines(head: bytes) -> list[bytes]:
    """The non-empty lines of an input's first FIRST_BYTES (without the last, which may be cut,
    unless `head` is the whole text)."""
    whole = len(head) < FIRST_BYTES
    lines = head.split(b"\n")
    return [line.rstrip(b"\r") for line in (lines if whole else lines[:-1]) if line.strip()]


def _margin(lines: list[bytes]) -> re.Pattern | None:
    """The margin all `lines` share, as a pattern anchored at each line's start; None if none."""
    if not lines:
        return None
    depth = 0
    while depth < MAX_QUOTE_DEPTH and all(re.match(_QUOTE * (depth + 1), line) for line in lines):
        depth += 1
    if depth:
        return re.compile(rb"^" + _QUOTE * depth, re.MULTILINE)
    indent = min((_INDENT.match(line).group(0) for line in lines), key=len)
    if (len(indent) < MIN_INDENT and b"\t" not in indent) or not all(line.startswith(indent) for line in lines):
        return None
    return re.compile(rb"^" + re.escape(indent), re.MULTILINE)


def _some_line_lacks(margin: re.Pattern, data: bytes) -> bool:
    """Whether a line of `data` that is not blank starts without `margin`."""
    lacking = re.compile(rb"^(?!" + margin.pattern[1:] + rb")[ \t]*[^ \t\r\n]", re.MULTILINE)
    return lacking.search(data) is not None
