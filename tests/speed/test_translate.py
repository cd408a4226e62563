"""Python `re` -> Hyperscan translation: a superset of Python's matches, construct by construct,
including where bytes and Python's Unicode str semantics differ."""
from __future__ import annotations

import re

import pytest

from firstfault.match.translate import ASCII, BYTES, NeverMatches, Unsupported, translate

hyperscan = pytest.importorskip("hyperscan")


def hyperscan_matches(pattern: str, dialect: str, line: str) -> bool:
    text, _ = translate(pattern, dialect)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=[text.encode("latin-1")], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_MULTILINE])
    found = []
    database.scan(line.encode("utf-8"), match_event_handler=lambda *args: found.append(args))
    return bool(found)


CASES = [
    (r"GLOBAL (?P<name>[\w.]+)", ["GLOBAL é.x", "GLOBAL a", "GLOBAL  "]),
    (r"(?i)loss\b[^,]{0,5}[:=]\s*(?P<value>nan|inf)\b", ["LOSS: NaN", "loſs = inf", "train loss=nan,", "lossy: nan"]),
    (r"(?i)kernel", ["\u212aernel panic", "KERNEL", "kern"]),
    (r"\bKilled\b", ["Killed", "éKilled", "Killedé", "xKilled"]),
    (r"key, (?P<k>.{1,3})\.", ["key, é.", "key, \U0001f600\U0001f600.", "key, abcd."]),
    (r"a\sb", ["a\x1cb", "a b", "a\u2003b", "ab"]),
    (r"(?P<w>ab)c(?P=w)", ["abcab", "abcac"]),
    (r"foo(?=bar)", ["foobar", "foobaz"]),
    (r"(?<!x)error: ", ["xerror: ", "error: "]),
    (r"end$", ["the end", "end of it"]),
    (r"^start", ["start here", "not start"]),
    (r"x{,2}y\Z", ["xxy", "y", "yz"]),
    (r"[^\]]+\]", ["é]", "]"]),
    (r"[^a-z]q", ["éq", "aq", "Kq"]),
    (r"\d+ GiB", ["12 GiB", "٣ GiB"]),
    (r"(?i)[a-z]+Error", ["ſError", "xERROR"]),
    # a zh_CN shell's words beside the English: the ASCII database keeps the English alternative
    (r"Segmentation fault +\(core dumped\)|段错误 +\(核心已转储\)", ["Segmentation fault (core dumped)", "段错误 (核心已转储)"]),
    (r"x(?:段)?y", ["xy", "x段y"]),
]


@pytest.mark.parametrize("pattern, lines", CASES)
def test_translation_is_a_superset(pattern, lines):
    for line in lines:
        python = re.search(pattern, line) is not None
        dialects = (BYTES,) if not line.isascii() else (ASCII, BYTES)
        for dialect in dialects:
            try:
                fast = hyperscan_matches(pattern, dialect, line)
            except Unsupported:
                continue
            if python:
                assert fast, (pattern, dialect, line)


def test_a_pattern_of_non_ascii_words_never_matches_an_ascii_block_and_has_no_fallback():
    """A block of pure ASCII text cannot hold `段错误`: such a signature is left out of the ASCII
    database, and no Python fallback runs for it on every ASCII block (it did: 8 ms a run)."""
    from firstfault.match.hyperscan_engine import HyperscanEngine

    with pytest.raises(NeverMatches):
        translate(r"段错误 +\(核心已转储\)|总线错误", ASCII)
    with pytest.raises(Unsupported) as raised:
        translate("(?i)\u212a", ASCII)  # the Kelvin sign folds to an ASCII k
    assert not isinstance(raised.value, NeverMatches)
    engine = HyperscanEngine([r"段错误 +\(核心已转储\)", "abc"], use_cache=False)
    assert engine.fallback_ascii == frozenset() and engine.fallback_bytes == frozenset()
    lines, _left_out, _valid, _hints = engine.scan("段错误 (核心已转储)\nabc".encode())
    assert lines == {0: {0}, len("段错误 (核心已转储)\n".encode()): {1}}


def test_conditionals_are_unsupported():
    with pytest.raises(Unsupported):
        translate(r"(a)?(?(1)b|c)", ASCII)


def test_patterns_matching_everything_are_unsupported():
    with pytest.raises(Unsupported):
        translate(r"x*", ASCII)


@pytest.mark.parametrize("pattern,line", [
    (r"(?:Error|Exception)(?:: (?P<msg>.*)|:\s*$|$)", "x Error: a long message " + "y" * 100),
    (r"failed(?: with (?P<detail>.*)|\.)", "step failed with reason " + "z" * 100),
    (r"killed(?: by signal (?P<sig>\d+))?", "killed by signal 9"),  # an optional tail goes whole
])
def test_tails_that_only_extend_a_match_are_left_to_the_confirmation(pattern, line):
    """Hyperscan reports every end of a match: `: (?P<msg>.*)` on a 100-character line is 100
    reports for one candidate line. The translation ends where the match is certain; the line is
    still a candidate, and the confirmation reads the whole pattern."""
    hyperscan = pytest.importorskip("hyperscan")
    text, _ = translate(pattern, ASCII)
    assert re.search(text, line) and re.search(pattern, line)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=[text.encode()], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_MULTILINE])
    ends = []
    database.scan(line.encode(), match_event_handler=lambda *report: ends.append(report[2]))
    assert 1 <= len(ends) <= 2  # a few reports, not one per character
