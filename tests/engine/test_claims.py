"""What the Why section says about ranks agrees with the rank table, on every labelled case.

A sentence that quantifies over ranks ("every rank timed out", "all 4 ranks", "ranks 0-3 did",
"rank 5 ...") is checked against `diagnosis.ranks`: every rank it names is a rank of the job, and
a claim that every (or all N) rank(s) timed out holds for the table's rows.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest


from .conftest import REPO

SETS = ("dev", "upstream", "real")
CASES = sorted(case for name in SETS for case in (REPO / "tests" / "fixtures" / name).glob("*/case.yaml"))
WAITING = ("timed out", "lost a peer")
_RANK = re.compile(r"\brank (\d{1,6})\b")
_RANK_LIST = re.compile(r"\branks \[?([\d, -]+)\]?")
_EVERY = re.compile(r"\bevery rank timed out\b")
_ALL_N = re.compile(r"\ball (\d+) ranks timed out\b")


def _listed(text: str) -> set[int]:
    ranks = set()
    for part in re.split(r"[, ]+", text.strip()):
        if "-" in part:
            first, _, last = part.partition("-")
            if first.isdigit() and last.isdigit():
                ranks.update(range(int(first), int(last) + 1))
        elif part.isdigit():
            ranks.add(int(part))
    return ranks


def claim_problems(diagnosis) -> list[str]:
    table = {row.rank: row for row in diagnosis.ranks}
    known = set(table) | set(diagnosis.inputs.ranks)
    problems = []
    for step in diagnosis.because:
        text = step.text
        named = {int(rank) for rank in _RANK.findall(text)}
        for found in _RANK_LIST.finditer(text):
            named |= _listed(found.group(1))
        unknown = sorted(named - known)
        if unknown and known:
            problems.append(f"{step.rule}: names rank(s) {unknown} the table does not have: {text}")
        if _EVERY.search(text) and any(row.ended not in WAITING for row in table.values()):
            others = sorted(rank for rank, row in table.items() if row.ended not in WAITING)
            problems.append(f"{step.rule}: says every rank timed out, but ranks {others} did not: {text}")
        counted = _ALL_N.search(text)
        if counted and sum(row.ended in WAITING for row in table.values()) != int(counted.group(1)):
            problems.append(f"{step.rule}: says all {counted.group(1)} ranks timed out: {text}")
    return problems


@pytest.mark.parametrize("case", CASES, ids=lambda path: f"{path.parent.parent.name}/{path.parent.name}")
def test_why_agrees_with_the_rank_table(case: Path, corpus_diagnosis):
    diagnosis = corpus_diagnosis(case.parent / "logs")
    assert claim_problems(diagnosis) == []


PLACING_RULES_WITHOUT_A_LINE = ()  # every rule that names where a failure started cites a line


@pytest.mark.parametrize("case", CASES, ids=lambda path: f"{path.parent.parent.name}/{path.parent.name}")
def test_every_named_rank_and_host_is_tied_to_a_line(case: Path, corpus_diagnosis):
    """Never invent: a rank or host the report names comes from the failing line itself, or a rule
    tied it to the failing line through lines it cites (the identity map's links)."""
    diagnosis = corpus_diagnosis(case.parent / "logs")
    where = diagnosis.initiating
    if where is None:
        return
    read = {source for source in diagnosis.inputs.files}
    for step in diagnosis.because:
        names_rank = where.rank is not None and re.search(rf"\brank {where.rank}\b", step.text)
        names_host = where.host is not None and where.host in step.text
        if (names_rank or names_host) and step.rule.startswith(("rank-", "host-", "hang-")):
            assert step.evidence, f"{step.rule} names where the failure started but cites no line: {step.text}"
            for source, line in step.evidence:
                assert source in read and line >= 1, f"{step.rule} cites {source}:{line}, not a line read"
