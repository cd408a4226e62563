"""The second half of a wrapped secret: a terminal, `rich` or a fixed-width log cuts a long token
or password, and its rest starts the next line, where no detector can tell it from text.

    line = mask_continuation(line, previous_raw_line)

A line continues a secret when the line before it is long (a wrap comes at a width), ends in a
mask once masked (the secret ran to its end: nothing but box edges, quotes or brackets after
it), and the line begins, after a launcher prefix or a box edge, with an unbroken run of token
characters that reads as part of a secret: a digit in it, or 20 characters or more (so that a
word, `RuntimeError` or `Downloading`, is never taken), and that is not the date of a new log
record (`2026-12-02 08:00:01 ...`). That run is masked too. The check costs nothing for lines
that do not begin with such a run.
"""
from __future__ import annotations

import re

from ..ingest.attribution import parse_prefix

# a run of token characters at the start (after a box edge and spaces), long enough to be the
# rest of a secret, ended by a space, a quote, a bracket or the line's end
_START = re.compile(r"(?P<lead>[ \t│┃|]*)(?P<rest>[A-Za-z0-9+/=_.~\-]{6,2048})(?=[\s'\")\]},;│┃|]|$)")
_ENDS_IN_MASK = re.compile(r"<[a-z0-9-]{2,40}>[\s'\")\]},;│┃|]*$")
MARK = "<masked>"


WRAPPED_MIN = 40  # characters of a line a terminal or rich wrapped


# A log record's own start, a date then a time of day (`2026-12-02 08:00:01`, `2026/12/02 08:00`,
# `12/02/2026 08:00`): a line that begins so is the next record, not the rest of a secret (the
# line after `HF_TOKEN=<hf-token>` in an env dump lost its timestamp to the mask, and with it its
# place in time)
_RECORD_START = re.compile(r"(?:(?:19|20)\d\d[-/][01]\d[-/][0-3]\d|[01]\d/[0-3]\d/(?:19|20)\d\d)[T _][0-2]\d:[0-5]\d")


def starts_like_a_continuation(line: str) -> bool:
    return _secret_run(line) is not None


def _secret_run(line: str) -> re.Match | None:
    """The run of token characters that begins `line` (after a launcher prefix and a box edge)
    when it may be the rest of a secret: a digit in it, or 20 characters or more, and not the
    date of a new record."""
    start = _START.match(line, parse_prefix(line).offset)
    if start is None or _RECORD_START.match(line, start.start("rest")):
        return None
    run = start.group("rest")
    return start if any(char.isdigit() for char in run) or len(run) >= 20 else None


def mask_continuation(line: str, previous_raw: str | None) -> str:
    """`line` (masked already) with the rest of a secret the previous line began masked."""
    if not previous_raw:
        return line
    start = _secret_run(line)
    if start is None or len(previous_raw.rstrip()) < WRAPPED_MIN:
        return line
    from . import mask_secrets

    if not _ENDS_IN_MASK.search(mask_secrets(previous_raw).rstrip("\n")):
        return line
    return line[:start.start("rest")] + MARK + line[start.end("rest"):]
