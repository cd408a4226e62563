"""The knowledge-base cache: a second load comes from the cache; editing an entry invalidates it."""
from __future__ import annotations

import shutil

from firstfault.kb import cache
from firstfault.kb.loader import ENTRIES_DIR, check_entries


def test_cache_hit_and_invalidation(tmp_path, private_cache):
    root = tmp_path / "entries"
    shutil.copytree(ENTRIES_DIR, root)
    calls = []

    def counting(path):
        calls.append(path)
        return check_entries(path)

    first = cache.cached_check(root, counting)
    second = cache.cached_check(root, counting)
    assert len(calls) == 1
    assert [entry.id for entry in second[0]] == [entry.id for entry in first[0]]
    assert [s.pattern for e in second[0] for s in e.signatures] == [s.pattern for e in first[0] for s in e.signatures]
    entry = sorted(root.glob("*/*.yaml"))[0]
    entry.write_text(entry.read_text() + "\n")
    cache.cached_check(root, counting)
    assert len(calls) == 2


def test_cache_can_be_turned_off(tmp_path, private_cache, monkeypatch):
    monkeypatch.setenv(cache.DISABLE_VARIABLE, "1")
    calls = []
    cache.cached_check(ENTRIES_DIR, lambda path: calls.append(path) or ([], []))
    cache.cached_check(ENTRIES_DIR, lambda path: calls.append(path) or ([], []))
    assert len(calls) == 2
