"""Feeding a file chunk by chunk gives the diagnosis a single full scan gives."""
from __future__ import annotations

import random

import pytest

from firstfault.ingest.sources import InputFile
from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_scans, diagnose_texts, scanner_for
from firstfault.render.contract import to_contract
from firstfault.watch.incremental import IncrementalScan

from .sample_logs import LOGS


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def _incremental(kb, logs: dict, seed: int) -> dict:
    rng = random.Random(seed)
    scanner = scanner_for(kb)
    scans = []
    for name, text in logs.items():
        scan = IncrementalScan(scanner, InputFile(display=name, relative=name))
        lines = text.encode().splitlines(keepends=True)
        position = 0
        while position < len(lines):
            size = rng.randint(1, 4)
            scan.feed(b"".join(lines[position:position + size]))
            position += size
        scans.append(scan.scan)
    return to_contract(diagnose_scans(scans))


@pytest.mark.parametrize("seed", range(5))
def test_chunked_equals_full(kb, seed):
    full = to_contract(diagnose_texts(list(LOGS.items()), kb=kb))
    assert _incremental(kb, LOGS, seed) == full
    assert full["primary"]["failure_id"] == "user-code-exception"
    assert full["primary"]["initiating"]["rank"] == 1


def test_line_numbers_and_inherited_times_cross_chunks(kb):
    scan = IncrementalScan(scanner_for(kb), InputFile(display="rank1.log", relative="rank1.log"))
    lines = LOGS["rank1.log"].encode().splitlines(keepends=True)
    for line in lines:
        scan.feed(line)
    assert scan.scan.stats.lines == len(lines)
    exception = [hit for hit in scan.scan.hits if "IndexError" in hit.text]
    assert exception and exception[0].line == 7
    assert exception[0].time is not None and exception[0].time_inherited
