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
    """True when the whole pattern ignores case (a global `(?i)` flag)."""
    if pattern.startswith("(?i)"):
        return True
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return False
    flags = parsed.state.flags if hasattr(parsed, "state") else parsed.pattern.flags
    return bool(flags & sre_constants.SRE_FLAG_IGNORECASE)


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


def _options(parsed) -> list[tuple[str, ...]]:
    """Ways to name what every match contains: each option is a set of alternative literals, at
    least one of which occurs in any match."""
    options: list[tuple[str, ...]] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            options.append(("".join(current),))
            current.clear()

    for opcode, argument in parsed:
        if opcode is sre_constants.LITERAL:
            current.append(chr(argument))
            continue
        if opcode is sre_constants.AT:
            continue
        flush()
        if opcode is sre_constants.SUBPATTERN:
            if not argument[1] & sre_constants.SRE_FLAG_IGNORECASE:  # scoped (?i:...) has no exact literal
                options.extend(_options(argument[-1]))
        elif opcode in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and argument[0] >= 1:
            options.extend(_options(argument[2]))
        elif opcode is sre_constants.BRANCH:
            chosen = []
            for alternative in argument[1]:
                best = _best(_options(alternative))
                if not best:
                    chosen = []
                    break
                chosen.extend(best)
            if chosen:
                options.append(tuple(sorted(set(chosen))))
    flush()
    return options


def _best(options: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The most selective option: longest shortest literal, then fewest alternatives."""
    return max(options, key=lambda option: (min(map(len, option)), -len(option)), default=())


def required_literals(pattern: str) -> tuple[str, ...]:
    """Literals of which every match contains at least one; () when there is no useful set.
    Lower-cased for case-insensitive patterns."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return ()
    best = _best(_options(parsed))
    if not best or min(map(len, best)) < 3:
        return ()
    return tuple(sorted({literal.lower() for literal in best})) if is_case_insensitive(pattern) else best
