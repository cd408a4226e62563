"""The synthetic fleet is made of the project's real log formats, and the engine itself finds
the initiating host of every generated job (the fleet report builds on that, never on the truth)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from firstfault.fleet.synthetic import BAD_HOST_KINDS, CODE_KINDS
from firstfault.pipeline import diagnose_paths
from firstfault.render.contract import to_contract

from .conftest import ENGINE_CLASS

REAL_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def _shape(line: str) -> str:
    """A line with paths, numbers and times masked, to compare formats rather than values."""
    line = re.sub(r"(?:/[\w.<>-]+)+", "<path>", line)
    line = re.sub(r"\d{4}-\d\d-\d\d[_ ]\d\d:\d\d:\d\d(?:,\d+)?", "<time>", line)
    return re.sub(r"\d+", "<n>", line).rstrip()


def test_every_outcome_occurs_in_the_small_fleet(small_fleet):
    _, truth = small_fleet
    outcomes = Counter(job["outcome"] for job in truth["jobs"].values())
    assert set(outcomes) == {"healthy", *CODE_KINDS, *BAD_HOST_KINDS}


def test_the_engine_names_the_initiating_host_of_every_generated_job(small_fleet):
    root, truth = small_fleet
    for job_id, planted in truth["jobs"].items():
        contract = to_contract(diagnose_paths([str(root / "jobs" / job_id)]))
        if planted["outcome"] == "healthy":
            assert contract["status"] == "healthy", job_id
            continue
        primary = contract["primary"]
        assert contract["status"] == "failure", job_id
        assert primary["failure_id"] == ENGINE_CLASS.get(planted["outcome"], planted["outcome"]), job_id
        if planted["initiating_host"]:  # a missing package fails every rank at once: no one host
            assert primary["initiating"]["host"] == planted["initiating_host"], job_id
        assert set(contract["inputs"]["hosts"]) == set(planted["hosts"]), job_id


def test_launcher_lines_have_the_shape_of_the_lab_s_real_torchrun_runs(small_fleet):
    root, truth = small_fleet
    real = {_shape(line) for path in REAL_RUNS.glob("*/logs/*.log") for line in path.read_text(errors="replace").splitlines()}
    failed = next(job_id for job_id, job in truth["jobs"].items() if job["outcome"] == "user-code-exception")
    generated = [line for path in sorted((root / "jobs" / failed).glob("node*.log")) for line in path.read_text().splitlines()]
    launcher = [line for line in generated if not line.startswith("[default") and "*****" not in line]
    report_block = [line for line in launcher if line.startswith(("  time", "  rank", "  error_file", "Root Cause", "Failures:",
                                                                  "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"))]
    assert report_block, "the generated job has torchelastic's failure report"
    for line in report_block + [line for line in launcher if "failed (exitcode:" in line]:
        assert _shape(line) in real, line
    traceback = [line for line in generated if "Traceback (most recent call last)" in line]
    assert traceback and all(re.match(r"\[default\d+\]:\[rank\d+\]: Traceback", line) for line in traceback)


def test_generation_is_deterministic(tmp_path):
    from firstfault.fleet.synthetic import make_fleet

    first = make_fleet(tmp_path / "a", jobs=6, hosts=5, bad_hosts=1, seed=3)
    second = make_fleet(tmp_path / "b", jobs=6, hosts=5, bad_hosts=1, seed=3)
    assert first["jobs"] == second["jobs"] and first["bad_hosts"] == second["bad_hosts"]
    for path in sorted((tmp_path / "a" / "jobs").rglob("*.*")):
        twin = tmp_path / "b" / path.relative_to(tmp_path / "a")
        assert twin.read_bytes() == path.read_bytes()
        assert twin.stat().st_mtime == path.stat().st_mtime
