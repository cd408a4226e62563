"""The parts of fleet mode that need no cluster: the hardware list against the knowledge base, the
binomial tail, fingerprints, job discovery and stamps, the table's parts and compaction, the host test."""
from __future__ import annotations

import math
import os
from fractions import Fraction

import pytest

from firstfault.errors import UsageError
from firstfault.fleet.fingerprint import fingerprint
from firstfault.fleet.hardware import HARDWARE, host_fault_weight, host_fault_weights
from firstfault.fleet.hosts import rank_hosts
from firstfault.fleet.jobs import find_jobs
from firstfault.fleet.stats import binomial_upper_tail
from firstfault.fleet.table import TableWriter, check_table_path, job_key, parts, read_rows, write_part
from firstfault.kb import load_knowledge_base

from .rows import fleet_rows

NEVER_BLAMED_CATEGORIES = {"framework", "data", "numerics", "serving", "environment", "memory"}


def test_host_faults_come_from_the_knowledge_base_s_actions():
    kb = load_knowledge_base()
    weights = host_fault_weights(kb)
    for entry_id in ("gpu-fallen-off-bus", "gpu-ecc-error", "nvlink-error", "nccl-ib-async-error"):
        assert weights[entry_id] == HARDWARE, entry_id  # the host's hardware: exclude it
    assert weights["nccl-ib-timeout"] == 0.5  # retries exhausted: transient, a pattern when it recurs on one host
    for entry_id, weight in weights.items():
        assert kb.get(entry_id).category in ("device", "network"), entry_id
    for entry in kb.entries:
        if entry.category in NEVER_BLAMED_CATEGORIES:
            assert host_fault_weight(entry.id, entry.id) == 0, entry.id
    assert host_fault_weight("preempted-sigterm", "preempted-sigterm") == 0  # restart, but nobody's host


def test_weights_follow_the_entry_then_its_core_class():
    assert host_fault_weight("gpu-fallen-off-bus", "gpu-fallen-off-bus") == 1.0
    assert host_fault_weight("nccl-ib-timeout", "nccl-ib-async-error") == 1.0
    assert host_fault_weight("gpu-ecc-error", "an-entry-since-removed") == 1.0
    assert host_fault_weight("cuda-launch-failure", None) == 0
    for code in ("user-code-exception", "cuda-oom", "cuda-device-side-assert", "loss-nan", "cuda-illegal-memory-access"):
        assert host_fault_weight(code, code) == 0


@pytest.mark.parametrize("trials,probability", [(10, 0.1), (40, 0.01), (200, 0.003), (7, 0.5)])
def test_binomial_tail_equals_the_exact_sum(trials, probability):
    exact_p = Fraction(probability).limit_denominator(10**9)
    for successes in range(0, trials + 1):
        exact = sum(Fraction(math.comb(trials, k)) * exact_p**k * (1 - exact_p)**(trials - k) for k in range(successes, trials + 1))
        assert binomial_upper_tail(successes, trials, float(exact_p)) == pytest.approx(float(exact), rel=1e-9, abs=1e-300)


def test_binomial_tail_of_a_weighted_count_lies_between_its_neighbours():
    low, middle, high = (binomial_upper_tail(k, 30, 0.02) for k in (2, 2.5, 3))
    assert low > middle > high
    assert binomial_upper_tail(31, 30, 0.5) == 0 and binomial_upper_tail(0, 30, 0.5) == 1


def test_fingerprint_ignores_rank_host_time_and_sizes():
    first = fingerprint("cuda-oom", "[default1]:[rank9]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1", ["gpu-a01"])
    second = fingerprint("cuda-oom", "[default6]:[rank62]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 386.00 MiB. GPU 6", ["gpu-b07"])
    assert first[0] != second[0]  # GiB vs MiB: a different line
    third = fingerprint("cuda-oom", "[default3]:[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3", ["gpu-c02"])
    assert first == third
    xid = "[Tue Mar  3 10:05:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    later = xid.replace("Tue Mar  3 10:05:00", "Fri Apr 10 22:41:07").replace("3b", "9a")
    assert fingerprint("gpu-fallen-off-bus", xid)[0] == fingerprint("gpu-fallen-off-bus", later)[0]
    nccl = "[default5]:gpu-a01:45571:45651 [5] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.1.0.3<33092> with error 12"
    assert fingerprint("nccl-ib-timeout", nccl, ["gpu-a01"])[1].startswith("transport/net_ib.cc:<num> NCCL WARN")
    assert fingerprint("a", "same line")[0] != fingerprint("b", "same line")[0]


def test_jobs_are_folders_and_archives_and_stamps_follow_changes(tmp_path):
    (tmp_path / "job-1").mkdir()
    (tmp_path / "job-1" / "rank0.log").write_text("hello\n")
    (tmp_path / "job-2.tar.gz").write_bytes(b"x")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "README").write_text("not a job")
    jobs, skipped = find_jobs([str(tmp_path), str(tmp_path / "job-2.tar.gz"), str(tmp_path / "nope")])
    assert [(job.job_id, job.is_archive) for job in jobs] == [("job-1", False), ("job-2", True)]  # the archive once
    assert {(os.path.basename(item.source), item.reason.split(":")[0]) for item in skipped} == {
        ("README", "not a job"), ("nope", "no such file or directory")}
    before = jobs[0].stamp
    os.utime(tmp_path / "job-1" / "rank0.log", (1_700_000_000, 1_700_000_000))
    touched = find_jobs([str(tmp_path)])[0][0].stamp
    assert touched.digest != before.digest and touched.bytes == before.bytes and touched.modified == 1_700_000_000
    (tmp_path / "job-1" / "rank0.log").write_text("hello again\n")
    assert find_jobs([str(tmp_path)])[0][0].stamp.bytes == len("hello again\n")


def _row(job: str, scanned_at: float, **fields) -> dict:
    return {"job_path": f"/jobs/{job}", "job_key": job_key(f"/jobs/{job}"), "job_id": job, "scanned_at": scanned_at, "status": "healthy",
            "hosts": ["h-1"], **fields}


def test_parts_stream_and_compact_to_the_latest_row_per_job(tmp_path):
    table = tmp_path / "fleet.parquet"
    writer = TableWriter(table, batch_rows=2)
    for index in range(5):
        writer.add(_row(f"job-{index}", 100.0))
    assert len(parts(table)) == 2 and writer.written == 4  # two full batches on disk before close
    writer.add(_row("job-0", 200.0, status="failure", failure_id="cuda-oom"))
    writer.close()
    assert len(parts(table)) == 1
    rows = {row["job_id"]: row for row in read_rows(table)}
    assert len(rows) == 5 and rows["job-0"]["status"] == "failure" and rows["job-0"]["scanned_at"] == 200.0
    write_part(table, [_row("job-1", 300.0, status="error", error="boom")])  # an interrupted scan's part
    assert {row["job_id"]: row["status"] for row in read_rows(table)}["job-1"] == "error"


def test_a_table_path_that_is_a_file_or_another_parquet_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "file.parquet").write_text("x")
    with pytest.raises(UsageError):
        check_table_path(tmp_path / "file.parquet")
    other = tmp_path / "other.parquet"
    other.mkdir()
    pq.write_table(pa.table({"a": [1]}), other / "x.parquet")
    with pytest.raises(UsageError, match="not a firstfault fleet table"):
        read_rows(other)


def test_code_failures_never_make_a_suspect_however_many():
    ranking = rank_hosts(fleet_rows({"gpu-00": ("user-code-exception", 12), "gpu-02": ("gpu-fallen-off-bus", 5)}))
    assert [entry["host"] for entry in ranking.suspects] == ["gpu-02"]
    assert "gpu-00" not in {entry["host"] for entry in ranking.watch}


def test_min_jobs_and_the_node_condition_weight():
    three = rank_hosts(fleet_rows({"gpu-02": ("gpu-ecc-error", 3)}))
    assert [entry["host"] for entry in three.suspects] == ["gpu-02"]
    assert rank_hosts(fleet_rows({"gpu-02": ("gpu-ecc-error", 3)}), min_jobs=4).suspects == []
    half = rank_hosts(fleet_rows({"gpu-02": ("nccl-ib-timeout", 3)}))
    assert half.suspects == [] or half.suspects[0]["score"] < three.suspects[0]["score"]
    assert (half.suspects or half.watch)[0]["weighted_failures"] == 1.5


def test_other_bad_hosts_do_not_raise_a_host_s_bar():
    crowded = rank_hosts(fleet_rows({"gpu-02": ("gpu-ecc-error", 4), "gpu-04": ("gpu-fallen-off-bus", 14), "gpu-06": ("nccl-ib-timeout", 14)}))
    assert {entry["host"] for entry in crowded.suspects} == {"gpu-02", "gpu-04", "gpu-06"}
    entry = {item["host"]: item for item in crowded.suspects}["gpu-02"]
    # its base rate is that of the 17 ordinary hosts (no host faults in 30 jobs each), smoothed
    assert entry["jobs_seen"] == 30 and entry["base_rate"] == pytest.approx(0.5 / (17 * 30 + 1))
    assert entry["p_value"] == pytest.approx(binomial_upper_tail(4, 30, 0.5 / (17 * 30 + 1)))
