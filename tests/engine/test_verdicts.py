"""Ratchets, not thresholds: every labelled case's verdict (`id class rank host`) is committed in
tests/verdicts/<set>.txt and compared exactly, so a change shows which cases moved. A case the
engine knowingly misses says why in its case.yaml (`known_miss:`).

After an intended change: `firstfault eval tests/fixtures/<set> --write-verdicts tests/verdicts/<set>.txt`
and review the diff.
"""
from __future__ import annotations

import pytest

from firstfault.evaluation import evaluate, verdict_changes

from .conftest import REPO

SETS = ("dev", "upstream", "real")


@pytest.fixture(scope="module", params=SETS)
def scored(request, corpus_diagnosis):
    return request.param, evaluate([str(REPO / "tests" / "fixtures" / request.param)], diagnose=corpus_diagnosis)


def test_verdicts_are_exactly_the_committed_ones(scored):
    name, score = scored
    committed = (REPO / "tests" / "verdicts" / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    assert verdict_changes(committed, score.verdict_lines()) == []


def test_every_miss_is_a_known_one(scored):
    _name, score = scored
    assert [(miss.case_id, miss.verdict_line) for miss in score.unexpected_misses] == []


def test_no_healthy_run_is_called_failed(scored):
    _name, score = scored
    assert score.healthy_false_alarms == 0


def test_a_changed_verdict_is_reported_by_case():
    changes = verdict_changes(["a cuda-oom 1 -", "b healthy - -"], ["a cuda-oom 2 -", "b healthy - -", "c loss-nan - -"])
    assert changes == ["a: was 'a cuda-oom 1 -', now 'a cuda-oom 2 -'", "c: was '(no line)', now 'c loss-nan - -'"]
