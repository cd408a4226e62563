"""Fixture entries (tests/encyclopedia/fixtures/entries) and exact-text snapshots.

Snapshots are what users read; regenerate them after an intended change with
`FIRSTFAULT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/encyclopedia`, then read the diff.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from firstfault.kb.loader import load_knowledge_base

HERE = Path(__file__).parent
FIXTURE_ENTRIES = HERE / "fixtures" / "entries"
SNAPSHOTS = HERE / "snapshots"


@pytest.fixture
def kb():
    return load_knowledge_base(FIXTURE_ENTRIES)


@pytest.fixture
def snapshot():
    """snapshot(name, text): the text must equal snapshots/<name> exactly."""

    def check(name: str, text: str) -> None:
        path = SNAPSHOTS / name
        if os.environ.get("FIRSTFAULT_UPDATE_SNAPSHOTS") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), f"no snapshot {path}; run with FIRSTFAULT_UPDATE_SNAPSHOTS=1 to create it"
        assert text == path.read_text(encoding="utf-8"), f"{name} differs from its snapshot"

    return check
