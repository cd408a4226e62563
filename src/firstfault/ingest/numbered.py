"""A log pasted with its line numbers, read as the log it was.

    item = without_line_numbers(item, head)   # the same item when its lines are not numbered

What engineers paste is as often the output of `grep -n` on one file (`120:[rank3]: RuntimeError:
...`, context lines `121-...`, `--` between groups) or of `cat -n` / `nl` (`   120\t...`) as the
file itself. The number says where the line was in the file, nothing of the log, and in front of
the line it hides what the line says at its start: the launcher prefix that tells which rank wrote
it, a traceback's frames. When every non-empty line of a text starts with such a number and the
numbers grow from line to line (as a file's line numbers do: an srun task label `0: ` repeats, a
time `08:00:01` does not grow line by line), the numbers are taken off; the line numbers of the
text given do not change (evidence cites the paste's line).
"""
from __future__ import annotations

import re
from dataclasses import replace

from .margin import complete_lines
from .reader import starts_as_plain_text
from .sources import InputFile

MAX_NUMBERED_BYTES = 64 * 1024 * 1024  # larger texts are read as they are (a paste is smaller)
FIRST_LINES = 3  # the first non-empty lines decide whether the whole text is looked at
MIN_LINES = 3

# grep -n: `12:` before a matching line, `12-` before a context line, `--` between groups
_GREP_NUMBER = re.compile(rb"(\d{1,9})[:-]")
_GREP_SEPARATOR = b"--"
# cat -n and nl: the number right-aligned in six columns, then a tab
_CAT_NUMBER = re.compile(rb" {0,8}(\d{1,9})\t")


def without_line_numbers(item: InputFile, head: bytes | None) -> InputFile:
    """`item` without the line number before each of its lines (as in-memory content); `head`:
    its first bytes (None: it cannot be such a paste)."""
    if not head or not starts_as_plain_text(head):
        return item  # gzip, UTF-16 and binary inputs are read as they are
    first = [line for line in complete_lines(head) if line != _GREP_SEPARATOR][:FIRST_LINES]
    form = next((number for number in (_GREP_NUMBER, _CAT_NUMBER) if first and all(map(number.match, first))), None)
    if form is None:
        return item
    data = item.whole(MAX_NUMBERED_BYTES)
    if data is None or not _numbered_throughout(data, form):
        return item
    return replace(item, path=None, content=re.compile(rb"^" + form.pattern, re.MULTILINE).sub(b"", data))


def _numbered_throughout(data: bytes, form: re.Pattern) -> bool:
    """Every non-empty line (grep's `--` aside) starts with a number, and the numbers grow: on
    MIN_LINES lines at least, or on every line from 1 on (a short file numbered whole)."""
    last, count, whole = 0, 0, True
    for line in data.split(b"\n"):
        if not line.strip() or (form is _GREP_NUMBER and line.rstrip(b"\r") == _GREP_SEPARATOR):
            continue
        found = form.match(line)
        number = int(found.group(1)) if found else 0
        if number <= last:
            return False
        whole = whole and number == last + 1
        last, count = number, count + 1
    return count >= MIN_LINES or (count > 0 and whole)
