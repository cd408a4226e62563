"""Suspect hosts: hosts that start host-level failures in more jobs than the fleet's base rate explains.

    ranking = rank_hosts(rows, min_jobs=3, alpha=0.01)

The test, per host h:
- n_h: the jobs whose logs show h (any outcome);
- w_h: the weighted count of jobs whose failure started on h and is the host's doing
  (hardware.host_fault_weight, from the knowledge base's `action`: hardware 1, transient
  device/network faults 0.5; code, data and framework failures 0: never against a host);
- base rate p_h: the weighted failures per job-host of the ordinary hosts, (W' + 0.5) / (N' + 1)
  over every host but h and the suspects found so far, so that neither h nor other bad hosts
  raise its bar (the 0.5 keeps p_h above 0 in a fleet with no other host faults); the test is
  repeated with the new suspects left out until the set of suspects stops changing;
- p-value: P(X >= w_h) for X ~ Binomial(n_h, p_h), the chance an ordinary host in as many jobs
  starts that many failures;
- h is a suspect when it started such failures in at least `min_jobs` distinct jobs and its
  p-value is below alpha / H (Bonferroni over the H hosts tested). Score = -log10(p-value).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .hardware import host_fault_weight
from .host_commands import host_commands
from .stats import binomial_upper_tail, surprise

DEFAULT_MIN_JOBS = 3
DEFAULT_ALPHA = 0.01
SMOOTHING = 0.5
MAX_ROUNDS = 10


@dataclass
class HostRecord:
    host: str
    jobs_seen: int = 0
    weighted: float = 0.0
    evidence: list[dict] = field(default_factory=list)

    @property
    def classes(self) -> dict[str, int]:
        return dict(Counter(item["failure_id"] for item in self.evidence))


@dataclass(frozen=True)
class Ranking:
    suspects: list[dict]
    watch: list[dict]  # hosts with host-level failures in 2+ jobs that do not pass the test
    hosts_tested: int
    fleet_rate: float  # weighted host-level failures per job-host over the whole fleet
    min_jobs: int
    alpha: float
    threshold: float  # the p-value a suspect must be below (alpha / hosts_tested)


def job_time(row: dict) -> float | None:
    """When the job ran, by its logs' own times, failed and healthy alike (a failed job at its first
    fault, any job at its last timed line); the files' modification time only for a job whose
    logs carry no time (the report counts those)."""
    return row.get("first_fault_time") or row.get("log_time") or row.get("modified_at")


def dated_by_file(row: dict) -> bool:
    return not (row.get("log_time") or row.get("first_fault_time"))


def host_records(rows: list[dict]) -> dict[str, HostRecord]:
    records: dict[str, HostRecord] = {}

    def record(host: str) -> HostRecord:
        if host not in records:
            records[host] = HostRecord(host)
        return records[host]

    for row in rows:
        hosts = set(row.get("hosts") or [])
        initiating = row.get("initiating_host")
        weight = host_fault_weight(row.get("failure_id"), row.get("entry_id")) if row.get("status") == "failure" else 0.0
        if initiating and weight > 0:
            hosts.add(initiating)
            found = record(initiating)
            found.weighted += weight
            found.evidence.append({
                "job_id": row.get("job_id"), "job_path": row.get("job_path"), "failure_id": row.get("failure_id"),
                "entry_id": row.get("entry_id"), "weight": weight, "time": job_time(row),
                "source": row.get("evidence_source"), "line": row.get("evidence_line"), "summary": row.get("summary"),
            })
        for host in hosts:
            record(host).jobs_seen += 1
    return records


def rank_hosts(rows: list[dict], min_jobs: int = DEFAULT_MIN_JOBS, alpha: float = DEFAULT_ALPHA) -> Ranking:
    records = host_records(rows)
    tested = max(1, len(records))
    threshold = alpha / tested
    flagged: set[str] = set()
    for _ in range(MAX_ROUNDS):  # until the suspects (left out of the base rate) stop changing
        entries = {item.host: _test(item, records, flagged) for item in records.values() if item.evidence}
        suspects = {host for host, entry in entries.items()
                    if len(records[host].evidence) >= min_jobs and entry["p_value"] < threshold}
        if suspects == flagged:
            break
        flagged = suspects
    order = lambda entry: (-entry["score"], entry["host"])  # noqa: E731
    suspect_entries = sorted((entries[host] for host in flagged), key=order)
    watch = sorted((entry for host, entry in entries.items() if host not in flagged and len(records[host].evidence) >= 2), key=order)
    total_weight = sum(item.weighted for item in records.values())
    total_seen = sum(item.jobs_seen for item in records.values())
    return Ranking(suspect_entries, watch[:10], len(records), total_weight / total_seen if total_seen else 0.0,
                   min_jobs, alpha, threshold)


def _test(item: HostRecord, records: dict[str, HostRecord], flagged: set[str]) -> dict:
    """The host against the ordinary hosts: every host but itself and the suspects found so far."""
    others = [other for other in records.values() if other.host != item.host and other.host not in flagged]
    rate = (sum(other.weighted for other in others) + SMOOTHING) / (sum(other.jobs_seen for other in others) + 1)
    trials = max(item.jobs_seen, len(item.evidence))
    return _describe(item, rate, binomial_upper_tail(item.weighted, trials, min(rate, 1.0)))


def _describe(item: HostRecord, rate: float, p_value: float) -> dict:
    evidence = sorted(item.evidence, key=lambda entry: (entry["time"] or 0, entry["job_id"] or ""))
    times = [entry["time"] for entry in evidence if entry["time"] is not None]
    classes = item.classes
    return {
        "host": item.host,
        "jobs": [entry["job_id"] for entry in evidence],
        "classes": classes,
        "score": surprise(p_value),
        "p_value": p_value,
        "weighted_failures": item.weighted,
        "jobs_seen": item.jobs_seen,
        "base_rate": rate,
        "expected": round(rate * item.jobs_seen, 3),
        "first_seen": min(times) if times else None,
        "last_seen": max(times) if times else None,
        "evidence": evidence,
        "commands": host_commands(item.host, classes),
    }
