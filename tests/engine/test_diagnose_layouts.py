"""The same failure gives the same answer whatever the capture layout."""
from __future__ import annotations

import gzip
import json

from firstfault.pipeline import diagnose_paths, diagnose_texts

from .conftest import RANK_LINES, combined_console, per_rank_files, run_cli


def _answer(diagnosis):
    return (diagnosis.status, diagnosis.primary.failure_id, diagnosis.initiating.rank)


def test_per_rank_files_name_the_asserting_rank(assert_log_dir):
    diagnosis = diagnose_paths([str(assert_log_dir)])
    assert _answer(diagnosis) == ("failure", "cuda-device-side-assert", 1)
    collateral = {finding.failure_id: finding for finding in diagnosis.collateral}
    assert collateral["collective-timeout-peer-crash"].ranks == (0, 2)


def test_combined_console_gives_the_same_answer(tmp_path, assert_log_dir):
    console = tmp_path / "console.log"
    console.write_text(combined_console())
    assert _answer(diagnose_paths([str(console)])) == _answer(diagnose_paths([str(assert_log_dir)]))


def test_gzipped_files_give_the_same_answer(tmp_path, assert_log_dir):
    zipped = tmp_path / "zipped"
    zipped.mkdir()
    for path in assert_log_dir.iterdir():
        (zipped / (path.name + ".gz")).write_bytes(gzip.compress(path.read_bytes()))
    assert _answer(diagnose_paths([str(zipped)])) == ("failure", "cuda-device-side-assert", 1)


def test_glob_and_several_paths(assert_log_dir):
    by_glob = diagnose_paths([str(assert_log_dir / "rank*.log")])
    by_list = diagnose_paths([str(assert_log_dir / f"rank{r}.log") for r in RANK_LINES])
    assert _answer(by_glob) == _answer(by_list) == ("failure", "cuda-device-side-assert", 1)


def test_in_memory_texts_match_files():
    named = [(f"rank{rank}.log", "\n".join(lines) + "\n") for rank, lines in RANK_LINES.items()]
    assert _answer(diagnose_texts(named)) == ("failure", "cuda-device-side-assert", 1)


def test_stdin_is_read(assert_log_dir):
    result = run_cli("diagnose", "-", "--format", "json", stdin=combined_console().encode())
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"
    assert report["primary"]["initiating"]["rank"] == 1


def test_earliest_fault_wins_over_the_louder_later_one(tmp_path):
    # rank 2's OOM comes first by time, rank 0's assert is later: the OOM is the first fault
    (tmp_path / "rank0.log").write_text(
        "2026-03-01 10:00:09,000 INFO x\nRuntimeError: CUDA error: device-side assert triggered\n")
    (tmp_path / "rank2.log").write_text(
        "2026-03-01 10:00:02,000 INFO x\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert _answer(diagnosis) == ("failure", "cuda-oom", 2)


def test_files_without_times_say_the_order_is_uncertain(tmp_path):
    (tmp_path / "rank0.log").write_text("RuntimeError: CUDA error: device-side assert triggered\n")
    (tmp_path / "rank1.log").write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.status == "failure"
    assert any("uncertain" in note for note in diagnosis.notes)
