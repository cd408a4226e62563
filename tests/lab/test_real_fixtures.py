"""The real lab cases kept under tests/fixtures/real/: well-formed, small, and diagnosed as injected.

No torch needed: the logs were produced once by tests/lab/make_fixtures.py. A case the engine knowingly
misses carries `known_miss:` (why) in its case.yaml; its diagnosis test is xfail(strict=False).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from firstfault.lab.runner import judge
from firstfault.render.contract import to_contract

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real"
CASES = sorted(path for path in FIXTURES.iterdir() if (path / "case.yaml").is_file()) if FIXTURES.is_dir() else []
EXPECT_KEYS = {"class", "also_acceptable", "initiating_rank", "initiating_host", "collateral_ranks"}


def _case(path: Path) -> dict:
    return yaml.safe_load((path / "case.yaml").read_text())


def test_there_are_real_fixtures():
    assert len(CASES) >= 12
    assert len({_case(path)["expect"]["class"] for path in CASES}) >= 10


@pytest.mark.parametrize("case_dir", CASES, ids=lambda path: path.name)
def test_fixture_is_a_well_formed_small_case(case_dir):
    case = _case(case_dir)
    assert case["id"] == case_dir.name
    assert case["provenance"] == "real-run"
    assert set(case["expect"]) == EXPECT_KEYS
    assert case["notes"].startswith("Injected:")
    logs = [path for path in (case_dir / "logs").rglob("*") if path.is_file()]
    assert logs
    assert sum(path.stat().st_size for path in case_dir.rglob("*") if path.is_file()) < 50_000


def _with_known_misses(cases):
    """A case the engine knowingly misses says why in its case.yaml (`known_miss:`): xfail, kept."""
    return [pytest.param(path, marks=pytest.mark.xfail(strict=False, reason=_case(path)["known_miss"]))
            if _case(path).get("known_miss") else path for path in cases]


@pytest.mark.parametrize("case_dir", _with_known_misses(CASES), ids=lambda path: path.name)
def test_fixture_is_diagnosed_as_injected(case_dir, corpus_diagnosis):
    expect = _case(case_dir)["expect"]
    contract = to_contract(corpus_diagnosis(case_dir / "logs"))  # (what `diagnose_case` gives, made once a session)
    assert judge(contract, expect) == [], contract.get("primary")
