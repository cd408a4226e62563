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


def test_editing_the_class_list_invalidates_the_cache(monkeypatch):
    """The check holds every entry to classes.yaml (a core class must be listed there): a new class
    added to it alone must not leave the cached problem that it was missing."""
    import os
    from pathlib import Path

    from firstfault.kb.classes import CLASSES_FILE

    before = cache.fingerprint(ENTRIES_DIR)
    real_stat = os.stat

    def edited(path, *args, **kwargs):
        info = real_stat(path, *args, **kwargs)
        if Path(path) == CLASSES_FILE:
            return os.stat_result((*info[:8], info.st_mtime + 1, info[9]))
        return info

    monkeypatch.setattr(cache.os, "stat", edited)
    assert cache.fingerprint(ENTRIES_DIR) != before
