"""Numeric signature conditions: sizes read as bytes, comparisons joined by `and`."""
from __future__ import annotations

import pytest

from firstfault.match.conditions import ConditionError, holds, names, size_in_bytes


@pytest.mark.parametrize("text, expected", [
    ("2.51 GiB", 2.51 * 2**30), ("283.44 MiB", 283.44 * 2**20), ("512 bytes", 512.0), ("1 KiB", 1024.0),
    ("7GB", 7e9), ("lots", None), ("", None),
])
def test_sizes(text, expected):
    assert size_in_bytes(text) == expected


def test_fragmentation_rule_on_real_numbers():
    rule = "reserved - allocated >= 2 * tried and reserved - allocated >= 1 GiB"
    # a 15.78 GiB GPU: 13.91 GiB reserved, 6.25 GiB allocated, 2.51 GiB refused -> 7.66 GiB cached
    assert holds(rule, {"tried": "2.51 GiB", "allocated": "6.25 GiB", "reserved": "13.91 GiB"})
    # a full GPU: 0.72 GiB cached, less than twice the 386 MiB asked for
    assert not holds(rule, {"tried": "386.00 MiB", "allocated": "38.02 GiB", "reserved": "38.74 GiB"})
    assert not holds(rule, {"tried": "2.51 GiB", "allocated": "6.25 GiB"})  # a capture missing
    assert names(rule) == {"reserved", "allocated", "tried"}


@pytest.mark.parametrize("bad", ["tried", "tried >> 2", "2 * * tried > 1", "a + b > c"])
def test_malformed_conditions_are_refused(bad):
    with pytest.raises(ConditionError):
        names(bad)


def test_kb_check_names_a_condition_on_an_uncaptured_value(tmp_path):
    from firstfault.kb.schema import check_signature

    signature = {"name": "x", "role": "root", "weight": 0.5, "pattern": "Tried to allocate (?P<tried>\\S+)",
                 "condition": "unallocated > tried", "examples": ["a"], "near_misses": ["b"]}
    problems = check_signature("entry.yaml", signature, 0, [signature])
    assert any("unallocated, which the pattern does not capture" in problem.message for problem in problems)
