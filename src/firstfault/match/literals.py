"""The required literal of a signature pattern: a substring every matching line contains.

The scanner looks for these literals first (cheap), and runs a signature's full regex only on
lines that contain its literal.
"""
from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

MIN_LITERAL = 4


def is_case_insensitive(pattern: str) -> bool:
    return pattern.startswith("(?i)")


def _runs(parsed) -> list[str]:
    """Runs of literal characters that every match must contain."""
    runs: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    for opcode, argument in parsed:
        if opcode is sre_constants.LITERAL:
            current.append(chr(argument))
        elif opcode is sre_constants.SUBPATTERN:
            flush()
            runs.extend(_runs(argument[-1]))
        elif opcode in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and argument[0] >= 1:
            flush()
            runs.extend(_runs(argument[2]))
        elif opcode is sre_constants.AT:
            continue
        else:
            flush()
    flush()
    return runs


def required_literal(pattern: str) -> str:
    """The longest literal run the pattern requires ('' when it has none)."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return ""
    runs = _runs(parsed)
    best = max(runs, key=len, default="")
    return best.lower() if is_case_insensitive(pattern) else best
