"""`fleet scan` on a real Dask LocalCluster into a real Parquet table, read back with pyarrow and DuckDB."""
from __future__ import annotations

import os
import shutil
import tarfile
from collections import Counter

import duckdb
import pyarrow.parquet as pq

from firstfault.fleet.scan import scan_fleet
from firstfault.fleet.table import TABLE_SCHEMA, parts, read_rows
from firstfault.pipeline import diagnose_paths
from firstfault.render.contract import to_contract

from .conftest import ENGINE_CLASS


def test_one_row_per_job_in_one_parquet_file(scanned):
    result, table, truth = scanned
    assert (result.found, result.diagnosed, result.unchanged, result.errors) == (len(truth["jobs"]), len(truth["jobs"]), 0, [])
    assert result.workers == 2
    files = parts(table)
    assert len(files) == 1  # the streamed parts were compacted
    data = pq.read_table(files[0])
    assert data.schema.metadata[b"schema"].decode() == TABLE_SCHEMA
    assert sorted(data.column("job_id").to_pylist()) == sorted(truth["jobs"])


def test_rows_hold_what_the_engine_says(scanned, rows):
    _, _, truth = scanned
    by_id = {row["job_id"]: row for row in rows}
    failing = [job_id for job_id, job in truth["jobs"].items() if job["hardware"]][:2]
    healthy = next(job_id for job_id, job in truth["jobs"].items() if job["outcome"] == "healthy")
    for job_id in failing + [healthy]:
        row = by_id[job_id]
        contract = to_contract(diagnose_paths([row["job_path"]]))
        primary = contract["primary"] or {}
        initiating = primary.get("initiating") or {}
        assert row["status"] == contract["status"]
        assert row["failure_id"] == primary.get("failure_id") and row["entry_id"] == primary.get("entry_id")
        assert row["initiating_host"] == initiating.get("host") and row["initiating_rank"] == initiating.get("rank")
        assert row["evidence_source"] == initiating.get("source") and row["evidence_line"] == initiating.get("line")
        assert row["action"] == contract.get("action")  # null until the contract carries it
        assert sorted(row["hosts"]) == sorted(truth["jobs"][job_id]["hosts"])
        assert row["input_files"] == len(os.listdir(row["job_path"]))
        assert row["input_bytes"] == sum(entry.stat().st_size for entry in os.scandir(row["job_path"]))
    for job_id in failing:
        assert by_id[job_id]["initiating_host"] == truth["jobs"][job_id]["initiating_host"]
        assert by_id[job_id]["fingerprint"] and by_id[job_id]["first_fault_time"]


def test_duckdb_reads_the_table_directly_and_through_fleet_sql(scanned):
    from firstfault.fleet.sql import run_query

    _, table, truth = scanned
    direct = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{table}/*.parquet')").fetchone()[0]
    assert direct == len(truth["jobs"])
    columns, found = run_query(table, "SELECT failure_id, count(*) AS jobs FROM jobs WHERE status = 'failure' GROUP BY 1")
    assert columns == ["failure_id", "jobs"]
    planted = Counter(ENGINE_CLASS.get(job["outcome"], job["outcome"]) for job in truth["jobs"].values() if job["outcome"] != "healthy")
    assert dict(found) == dict(planted)


def test_rescan_skips_unchanged_jobs_and_redoes_changed_ones(small_fleet, dask_client, tmp_path):
    root, truth = small_fleet
    jobs = tmp_path / "jobs"
    shutil.copytree(root / "jobs", jobs)
    table = str(tmp_path / "fleet.parquet")
    first = scan_fleet([str(jobs)], table, client=dask_client)
    assert first.diagnosed == len(truth["jobs"])
    again = scan_fleet([str(jobs)], table)  # nothing changed: no cluster is needed
    assert (again.diagnosed, again.unchanged, again.workers) == (0, len(truth["jobs"]), 0)
    healthy = next(job_id for job_id, job in truth["jobs"].items() if job["outcome"] == "healthy")
    log = jobs / healthy / "node0.log"
    log.write_text(log.read_text() + "[default0]:[rank0]: RuntimeError: CUDA error: out of memory\n")
    changed = scan_fleet([str(jobs)], table, client=dask_client)
    assert (changed.diagnosed, changed.unchanged) == (1, len(truth["jobs"]) - 1)
    rows = {row["job_id"]: row for row in read_rows(table)}
    assert len(rows) == len(truth["jobs"]) and len(parts(table)) == 1
    assert rows[healthy]["status"] == "failure" and rows[healthy]["failure_id"] == "cuda-oom"
    forced = scan_fleet([str(jobs)], table, client=dask_client, rescan=True)
    assert forced.diagnosed == len(truth["jobs"])
    assert len(read_rows(table)) == len(truth["jobs"])


def test_archives_are_jobs_and_bad_entries_are_reported(small_fleet, dask_client, tmp_path):
    root, truth = small_fleet
    hardware = next(job_id for job_id, job in truth["jobs"].items() if job["hardware"])
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    with tarfile.open(jobs / f"{hardware}.tar.gz", "w:gz") as archive:
        archive.add(root / "jobs" / hardware, arcname=hardware)
    (jobs / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    (jobs / "notes.txt").write_text("not a job\n")
    result = scan_fleet([str(jobs), str(tmp_path / "missing")], str(tmp_path / "fleet.parquet"), client=dask_client)
    assert result.diagnosed == 2
    assert {item.source for item in result.skipped} == {str(jobs / "notes.txt"), str(tmp_path / "missing")}
    rows = {row["job_id"]: row for row in read_rows(tmp_path / "fleet.parquet")}
    assert rows[hardware]["failure_id"] == ENGINE_CLASS.get(truth["jobs"][hardware]["outcome"], truth["jobs"][hardware]["outcome"])
    assert rows[hardware]["initiating_host"] == truth["jobs"][hardware]["initiating_host"]
    assert rows["broken"]["status"] == "error" and rows["broken"]["error"]
    assert [path for path, _ in result.errors] == [str(jobs / "broken.tar.gz")]


def test_scan_through_an_existing_scheduler(small_fleet, dask_client, tmp_path):
    root, truth = small_fleet
    some = sorted(truth["jobs"])[:4]
    jobs = tmp_path / "jobs"
    for job_id in some:
        shutil.copytree(root / "jobs" / job_id, jobs / job_id)
    result = scan_fleet([str(jobs)], str(tmp_path / "fleet.parquet"), scheduler=dask_client.scheduler.address)
    assert (result.diagnosed, result.workers) == (4, 2)
    assert sorted(row["job_id"] for row in read_rows(tmp_path / "fleet.parquet")) == some
