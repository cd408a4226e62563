"""Text from logs made safe to print on a terminal: control characters are shown escaped.

A log line may carry ESC/CSI/OSC sequences (colours are harmless; a screen clear, a fake
hyperlink or an OSC 52 clipboard write are not), C1 controls that some terminals obey, and
bidirectional overrides that make a line read differently from what it holds. Renderers apply
`printable_diagnosis` once, to everything they are given; tab and newline are kept.
"""
from __future__ import annotations

import re

from ..model import map_strings

_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character but tab and newline written as an escape (`\\x1b`)."""
    return _UNPRINTABLE.sub(_escaped, text) if _UNPRINTABLE.search(text) else text


def printable_diagnosis(value):
    """A diagnosis (or an alert, or any value of frozen dataclasses) with printable text only."""
    return map_strings(value, printable)
