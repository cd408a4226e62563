"""Numeric conditions a signature may add to its regex, over the sizes it captures.

    condition: "unallocated >= 2 * tried and unallocated >= 1 GiB"
    condition: "reserved - allocated >= 2 * tried"

A condition is comparisons joined by `and`; each side is a capture, `N * capture`, a
difference of two of those, or a size literal (`512 MiB`). Captured sizes are read as byte
counts ("2.51 GiB", "283.44 MiB", "512 bytes"); a capture that is absent or not a size makes
the condition false, so the signature does not match.
"""
from __future__ import annotations

import operator
import re
from functools import lru_cache

_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B|bytes?)?\s*$", re.IGNORECASE)
_COMPARISON = re.compile(r"^(.+?)\s*(>=|<=|>|<)\s*(.+)$")
_TERM = re.compile(r"^(?:(\d+(?:\.\d+)?)\s*\*\s*)?([A-Za-z_]\w*)$")
_OPERATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


class ConditionError(ValueError):
    """The condition text does not follow the grammar above."""


def size_in_bytes(text: str) -> float | None:
    found = _SIZE.match(text)
    if not found:
        return None
    unit = (found.group(2) or "").lower()
    return float(found.group(1)) * _UNITS[unit]


@lru_cache(maxsize=256)
def parse(condition: str) -> tuple:
    """The condition as ((left, op, right), ...); each side a tuple of (sign, factor, name or bytes)."""
    comparisons = []
    for part in re.split(r"\s+and\s+", condition.strip()):
        found = _COMPARISON.match(part)
        if not found:
            raise ConditionError(f"{part!r} is not a comparison (a > b, a >= 2 * b, a - b > 1 GiB)")
        comparisons.append((_side(found.group(1)), found.group(2), _side(found.group(3))))
    return tuple(comparisons)


def _side(text: str) -> tuple:
    literal = size_in_bytes(text)
    if literal is not None:
        return ((1, 1.0, literal),)
    terms = []
    for index, piece in enumerate(re.split(r"\s+-\s+", text.strip())):
        found = _TERM.match(piece.strip())
        if not found:
            raise ConditionError(f"{piece!r} is not a capture name, N * name, or a size")
        terms.append((1 if index == 0 else -1, float(found.group(1) or 1), found.group(2)))
    return tuple(terms)


def names(condition: str) -> set[str]:
    """The capture names a condition reads."""
    return {term[2] for left, _op, right in parse(condition) for term in (*left, *right) if isinstance(term[2], str)}


def holds(condition: str, captures: dict) -> bool:
    for left, op, right in parse(condition):
        a, b = _value(left, captures), _value(right, captures)
        if a is None or b is None or not _OPERATORS[op](a, b):
            return False
    return True


def _value(side: tuple, captures: dict) -> float | None:
    total = 0.0
    for sign, factor, item in side:
        value = item if not isinstance(item, str) else size_in_bytes(captures.get(item) or "")
        if value is None:
            return None
        total += sign * factor * value
    return total
