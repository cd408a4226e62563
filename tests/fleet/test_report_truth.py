"""The fleet report of a real scan, checked against the planted truth of the generator (never
against the report's own numbers)."""
from __future__ import annotations

import shlex
from collections import Counter, defaultdict

from firstfault.fleet.report import build_report, week_of

from .conftest import ENGINE_CLASS


def _report(rows):
    return build_report(rows, table="fleet.parquet")


def test_suspect_hosts_are_the_planted_bad_hosts(scanned, rows):
    _, _, truth = scanned
    report = _report(rows)
    assert {entry["host"] for entry in report["suspect_hosts"]} == set(truth["bad_hosts"])
    assert truth["decoy_host"] not in {entry["host"] for entry in report["watch_hosts"] + report["suspect_hosts"]}


def test_a_suspect_s_evidence_is_exactly_its_planted_hardware_faults(scanned, rows):
    _, _, truth = scanned
    for entry in _report(rows)["suspect_hosts"]:
        planted = {job_id for job_id, job in truth["jobs"].items() if job["hardware"] and job["initiating_host"] == entry["host"]}
        assert set(entry["jobs"]) == planted
        kind = ENGINE_CLASS.get(truth["bad_hosts"][entry["host"]]["kind"], truth["bad_hosts"][entry["host"]]["kind"])
        assert entry["classes"].get(kind, 0) >= 3
        assert entry["jobs_seen"] == sum(entry["host"] in job["hosts"] for job in truth["jobs"].values())


def test_no_host_is_blamed_for_code_failures(scanned, rows):
    _, _, truth = scanned
    report = _report(rows)
    code_jobs = {job_id for job_id, job in truth["jobs"].items() if job["outcome"] != "healthy" and not job["hardware"]}
    assert code_jobs
    for entry in report["suspect_hosts"] + report["watch_hosts"]:
        assert not code_jobs & set(entry["jobs"]), entry["host"]
    decoy_code = [job_id for job_id in code_jobs if truth["jobs"][job_id]["initiating_host"] == truth["decoy_host"]]
    assert len(decoy_code) >= 3  # the decoy started enough failures to be named, had they counted


def test_failures_by_class_and_by_week_match_the_truth(scanned, rows):
    _, _, truth = scanned
    report = _report(rows)
    planted = Counter(ENGINE_CLASS.get(job["outcome"], job["outcome"]) for job in truth["jobs"].values() if job["outcome"] != "healthy")
    assert {entry["failure_id"]: entry["jobs"] for entry in report["by_class"]} == dict(planted)
    hardware = {entry["failure_id"]: entry["entries"] for entry in report["by_class"] if entry["hardware"]}
    assert set(hardware) == {"gpu-fallen-off-bus", "gpu-ecc-error", "nccl-ib-timeout"}
    assert set(hardware["nccl-ib-timeout"]) == {"nccl-ib-async-error"}  # the port error, under its core class
    weeks = defaultdict(lambda: [0, 0])
    for job in truth["jobs"].values():
        week = weeks[week_of(job["fault_at"] or job["ended"])]
        week[0] += 1
        week[1] += job["outcome"] != "healthy"
    assert {week["week"]: [week["jobs"], week["failed"]] for week in report["by_week"]} == dict(weeks)
    assert report["jobs"]["total"] == len(truth["jobs"])
    assert report["jobs"]["healthy"] == sum(job["outcome"] == "healthy" for job in truth["jobs"].values())


def test_recurring_fingerprints_group_the_same_failure_across_jobs_ranks_and_hosts(scanned, rows):
    _, _, truth = scanned
    report = _report(rows)
    xid79 = [entry for entry in report["recurring"] if entry["failure_id"] == "gpu-fallen-off-bus"]
    planted = [job for job in truth["jobs"].values() if job["outcome"] == "gpu-fallen-off-bus"]
    assert len(xid79) == 1 and "GPU has fallen off the bus" in xid79[0]["text"]
    assert xid79[0]["jobs"] == len(planted)
    assert set(xid79[0]["hosts"]) == {job["initiating_host"] for job in planted}
    assert sum(entry["jobs"] for entry in report["recurring"]) <= report["jobs"]["failure"]


def test_commands_name_the_host_and_parse_as_shell(scanned, rows):
    report = _report(rows)
    for entry in report["suspect_hosts"]:
        commands = {(item["system"], item["action"]): shlex.split(item["command"]) for item in entry["commands"]}
        drain = commands[("slurm", "drain")]
        assert drain[:2] == ["scontrol", "update"] and f"NodeName={entry['host']}" in drain and "State=DRAIN" in drain
        assert any(word.startswith("Reason=firstfault: ") for word in drain)
        assert commands[("slurm", "exclude")] == ["sbatch", f"--exclude={entry['host']}", "job.sh"]
        assert commands[("kubernetes", "cordon")] == ["kubectl", "cordon", entry["host"]]
        assert commands[("kubernetes", "taint")][:4] == ["kubectl", "taint", "nodes", entry["host"]]
    hosts = sorted(entry["host"] for entry in report["suspect_hosts"])
    commands = {(item["system"], item["action"]): shlex.split(item["command"]) for item in report["exclude_all"]}
    assert sorted(commands[("slurm", "exclude")][1].split("=", 1)[1].split(",")) == hosts
    assert sorted(commands[("slurm", "drain")][2].split("=", 1)[1].split(",")) == hosts
