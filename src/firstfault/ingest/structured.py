"""Untrusted structured data (side-file JSON, unpickled dumps, request bodies), read within bounds.

A side file is tiny next to the logs, but a hostile or broken one must cost no more than its
size: JSON nested 100,000 deep, `Infinity` or `1e999` where a number is expected, a 400-byte
pickle of lists that share their items (2^50 paths through 50 objects). The checks here walk a
parsed value with an explicit stack and a budget, so every one of those is refused in time
linear in the file, never by a RecursionError, an OverflowError or a hang.
"""
from __future__ import annotations

import json
import math

MAX_DEPTH = 32  # flight-recorder dumps are ~6 deep, error records ~3, request bodies ~3


class TooComplex(ValueError):
    """The value is nested too deep, holds too many items, or a number that is not finite."""


def loads_json(data: bytes | str, *, max_depth: int = MAX_DEPTH, max_nodes: int | None = None, lenient: bool = False):
    """json.loads that refuses NaN, Infinity and 1e999 and whatever is nested beyond `max_depth`
    (ValueError, or TooComplex which is one). `lenient`: such numbers are read as their text
    (`"Infinity"`), for a caller that checks each field it uses and says which it left out."""
    try:
        if lenient:
            value = json.loads(data, parse_constant=str, parse_float=lambda text: _finite_float(text) if _finite(text) else text)
        else:
            value = json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise TooComplex("nested deeper than any such file is") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None
    check_plain(value, max_depth=max_depth, max_nodes=max_nodes or _node_budget(data))
    return value


def _refuse_constant(name: str):
    raise TooComplex(f"{name} is not a number a log tool can use")


def _finite(text: str) -> bool:
    return math.isfinite(float(text))


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise TooComplex(f"{text[:20]} is too large to be a number")
    return value


def _node_budget(data) -> int:
    # a tree holds at most one item per byte of its file; shared items (a pickle's memo) may
    # repeat, so the budget is a small multiple of the size, never an exponential
    return 4 * len(data) + 10_000


def check_plain(value, *, max_depth: int = MAX_DEPTH, max_nodes: int = 1_000_000) -> None:
    """Raise TooComplex unless `value` is plain (dict, list, tuple, str, bytes, int, finite
    float, bool, None), at most `max_depth` deep, and visits at most `max_nodes` items counting
    every path to a shared item (so a small DAG that expands exponentially is refused)."""
    stack = [(value, 1)]
    visited = 0
    while stack:
        item, depth = stack.pop()
        visited += 1
        if visited > max_nodes:
            raise TooComplex(f"holds more than {max_nodes} items")
        if isinstance(item, (str, bytes, bool, int)) or item is None:
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise TooComplex(f"holds the number {item}")
            continue
        if depth > max_depth:
            raise TooComplex(f"nested more than {max_depth} deep")
        if isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1) for child in item)
        else:
            raise TooComplex(f"holds a {type(item).__name__}, not plain data")


def bounded_int(value, low: int, high: int) -> int | None:
    """An integer in [low, high] from an int, a whole finite float or a decimal string; None
    for anything else (`Infinity`, `1e300`, `"abc"`, True)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return None
        value = int(value)
    elif isinstance(value, str):
        text = value.strip()
        # ASCII digits only: str.isdigit also takes '²', which int() refuses
        if not text.isascii() or not (text.isdigit() or text[:1] == "-" and text[1:].isdigit()) or len(text) > 20:
            return None
        value = int(text)
    if not isinstance(value, int):
        return None
    return value if low <= value <= high else None


def bounded_float(value, low: float, high: float) -> float | None:
    """A finite number in [low, high] from an int, a float or a decimal string, else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        if len(value) > 40:
            return None
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int):
        if not low <= value <= high:
            return None
        value = float(value)
    if not isinstance(value, float) or not math.isfinite(value):
        return None
    return value if low <= value <= high else None
