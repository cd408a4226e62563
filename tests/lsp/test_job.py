"""A job still running: files that grow are re-read incrementally, and the answer equals a full
diagnosis of the files as they are (the contract compared whole); anything else is read again."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.lsp.folders import JobScope
from firstfault.lsp.job import Job
from firstfault.pipeline import diagnose_paths
from firstfault.render.contract import to_contract

REAL_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "real"


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def _halves(folder: Path) -> dict[Path, bytes]:
    """Cut every file of the folder at a third of its length (mid-line), keep the rest aside."""
    rest = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            cut = len(data) // 3
            path.write_bytes(data[:cut])
            rest[path] = data[cut:]
    return rest


def _full(folder: Path, kb) -> dict:
    return to_contract(diagnose_paths([str(folder)], kb=kb))


@pytest.mark.parametrize("name", ["exc-two-ranks-plain-ws4", "disk-full-tee-ws2", "straggler-twonode-ws2"])
def test_appended_lines_are_read_incrementally_and_agree_with_a_full_diagnosis(tmp_path, kb, name):
    folder = tmp_path / name
    shutil.copytree(REAL_RUNS / name / "logs", folder)
    rest = _halves(folder)
    job = Job(JobScope(folder, (str(folder),)), kb)
    job.diagnose()
    assert to_contract(job.diagnosis) == _full(folder, kb)
    # the rest arrives in three bursts, the last lines of a burst without their line end
    for part in range(3):
        for path, data in rest.items():
            piece = data[part * len(data) // 3:(part + 1) * len(data) // 3]
            with open(path, "ab") as handle:
                handle.write(piece)
        assert job.refresh() is True
        assert to_contract(job.diagnosis) == _full(folder, kb)
    assert job.incremental_updates == 3
    assert job.diagnosis.status == "failure"
    assert job.refresh() is False  # nothing changed since


def test_a_new_file_or_a_truncated_one_is_read_again_in_full(tmp_path, kb):
    folder = tmp_path / "run"
    shutil.copytree(REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs", folder)
    rank1 = (folder / "rank1.log").read_bytes()
    (folder / "rank1.log").unlink()
    job = Job(JobScope(folder, (str(folder),)), kb)
    job.diagnose()
    assert job.diagnosis.initiating.rank != 1
    (folder / "rank1.log").write_bytes(rank1)  # a file that appears
    assert job.refresh() and job.incremental_updates == 0
    assert job.diagnosis.initiating.rank == 1
    (folder / "rank1.log").write_bytes(rank1[:200])  # truncated in place
    assert job.refresh() and job.incremental_updates == 0
    assert to_contract(job.diagnosis) == _full(folder, kb)


def test_nothing_readable_is_a_problem_not_an_exception(tmp_path, kb):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "weights.log").write_bytes(b"\x00\x01\x02" * 1000)
    job = Job(JobScope(folder, (str(folder),)), kb)
    assert job.diagnose() is None
    assert "binary" in job.problem
    (folder / "rank0.log").write_bytes((REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs" / "rank1.log").read_bytes())
    assert job.refresh() is True
    assert job.diagnosis is not None and job.problem == ""
