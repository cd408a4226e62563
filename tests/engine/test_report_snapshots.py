"""Snapshots of exactly what users read, from one canned diagnosis (the bundled example).
Regenerate with FIRSTFAULT_UPDATE_SNAPSHOTS=1 after an intended change, and read the diff."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from firstfault.commands.diagnose import render
from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_paths

from .conftest import REPO

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(scope="module")
def canned():
    cwd = os.getcwd()
    os.chdir(REPO)  # sources are shown as given: keep them repository-relative
    try:
        return diagnose_paths(["examples/nccl-timeouts-after-assert"])
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("output_format, suffix", [("terminal", "txt"), ("markdown", "md"), ("json", "json")])
def test_report_snapshot(canned, output_format, suffix):
    text = render(canned, load_knowledge_base(), output_format, color=False)
    snapshot = SNAPSHOTS / f"example-report.{suffix}"
    if os.environ.get("FIRSTFAULT_UPDATE_SNAPSHOTS") == "1" or not snapshot.exists():
        snapshot.write_text(text)
    assert text == snapshot.read_text()
