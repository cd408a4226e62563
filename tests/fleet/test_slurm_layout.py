"""The fleet on plain Slurm output: per-node `slurm-<jobid>-<node>.out` and `dmesg-<node>.log`
files, no host in the lines of healthy jobs, and file times the day the logs were copied (not when
the jobs ran). Hosts come from the file names, kept whole; every job is dated by its logs."""
from __future__ import annotations

from collections import defaultdict

import pytest

from firstfault.fleet.report import build_report, week_of

from .conftest import SMALL_FLEET, SMALL_RATES


@pytest.fixture(scope="module")
def slurm_scan(dask_client, tmp_path_factory):
    from firstfault.fleet.scan import scan_fleet
    from firstfault.fleet.synthetic import Rates, make_fleet
    from firstfault.fleet.table import read_rows

    root = tmp_path_factory.mktemp("slurm-fleet")
    truth = make_fleet(root, **SMALL_FLEET, rates=Rates(**SMALL_RATES), layout="slurm")
    table = tmp_path_factory.mktemp("slurm-tables") / "fleet.parquet"
    scan_fleet([str(root / "jobs")], str(table), client=dask_client)
    return truth, read_rows(table)


def test_the_layout_is_plain_slurm_output(tmp_path):
    from firstfault.fleet.synthetic import make_fleet

    truth = make_fleet(tmp_path, jobs=3, hosts=6, bad_hosts=1, layout="slurm")
    job = next((tmp_path / "jobs").iterdir())
    names = sorted(path.name for path in job.iterdir())
    hosts = truth["jobs"][job.name]["hosts"]
    assert names == sorted([f"dmesg-{host}.log" for host in hosts] + [f"slurm-{job.name.split('-')[1]}-{host}.out" for host in hosts])
    text = "".join(path.read_text() for path in job.iterdir() if path.suffix == ".out")
    if truth["jobs"][job.name]["outcome"] == "healthy":
        assert not any(host in text for host in hosts)
    modified = {path.stat().st_mtime for path in job.iterdir()}
    assert len(modified) == 1 and modified.pop() > truth["jobs"][job.name]["ended"] + 86400


def test_every_job_names_its_hosts_whole_healthy_or_not(slurm_scan):
    truth, rows = slurm_scan
    by_id = {row["job_id"]: row for row in rows}
    for job_id, job in truth["jobs"].items():
        assert set(by_id[job_id]["hosts"]) == set(job["hosts"]), job_id


def test_suspect_hosts_are_the_planted_bad_hosts(slurm_scan):
    truth, rows = slurm_scan
    report = build_report(rows)
    assert {entry["host"] for entry in report["suspect_hosts"]} == set(truth["bad_hosts"])
    assert report["hosts_seen"] == len(truth["hosts"])


def test_jobs_are_dated_by_their_logs_not_their_files(slurm_scan):
    truth, rows = slurm_scan
    report = build_report(rows)
    assert report["dated_by_file_time"] == 0
    weeks = defaultdict(lambda: [0, 0])
    for job in truth["jobs"].values():
        week = weeks[week_of(job["fault_at"] or job["ended"])]
        week[0] += 1
        week[1] += job["outcome"] != "healthy"
    assert {week["week"]: [week["jobs"], week["failed"]] for week in report["by_week"]} == dict(weeks)
