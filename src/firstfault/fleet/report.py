"""The fleet report: what recurs, which hosts start failures, how failure rates move by class and week.

    report = build_report(read_rows("fleet.parquet"), table="fleet.parquet")

A plain dict, the JSON document `firstfault fleet report --format json` prints (schema
`firstfault.fleet-report/1`, documented field by field in docs/fleet.md); the terminal, Markdown
and web renderers all read this one document.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict

from .hardware import host_fault_weight
from .host_commands import exclude_all
from .hosts import DEFAULT_ALPHA, DEFAULT_MIN_JOBS, dated_by_file, job_time, rank_hosts

REPORT_SCHEMA = "firstfault.fleet-report/1"
FAILED = ("failure", "unknown")
DAY = 86400.0


def iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def week_of(seconds: float) -> str:
    """The Monday (UTC) that starts the ISO week of a time, as YYYY-MM-DD."""
    day = int(seconds // DAY)
    monday = day - (day + 3) % 7  # 1970-01-01 was a Thursday
    return time.strftime("%Y-%m-%d", time.gmtime(monday * DAY))


def build_report(rows: list[dict], *, table: str | None = None, min_jobs: int = DEFAULT_MIN_JOBS,
                 alpha: float = DEFAULT_ALPHA, now: float | None = None) -> dict:
    statuses = Counter(row.get("status") for row in rows)
    times = [value for value in (job_time(row) for row in rows) if value is not None]
    ranking = rank_hosts(rows, min_jobs=min_jobs, alpha=alpha)
    for entry in ranking.suspects + ranking.watch:
        entry["first_seen"], entry["last_seen"] = iso(entry["first_seen"]), iso(entry["last_seen"])
        for evidence in entry["evidence"]:
            evidence["time"] = iso(evidence["time"])
    return {
        "schema": REPORT_SCHEMA,
        "table": table,
        "generated_at": iso(now if now is not None else time.time()),
        "jobs": {"total": len(rows), "healthy": statuses.get("healthy", 0), "failure": statuses.get("failure", 0),
                 "unknown": statuses.get("unknown", 0), "error": statuses.get("error", 0)},
        "span": {"first": iso(min(times)) if times else None, "last": iso(max(times)) if times else None},
        # jobs dated by their files' modification time: their logs carry no time of their own
        "dated_by_file_time": sum(1 for row in rows if row.get("status") != "error" and dated_by_file(row)),
        "hosts_seen": ranking.hosts_tested,
        "test": {
            "name": "binomial upper tail, Bonferroni-corrected",
            "min_jobs": ranking.min_jobs, "alpha": ranking.alpha, "p_value_below": ranking.threshold,
            "fleet_rate": ranking.fleet_rate,
            "weights": "exclude-host entries 1, transient device/network faults 0.5, code/data/configuration 0 (never blamed on a host)",
        },
        "suspect_hosts": ranking.suspects,
        "watch_hosts": ranking.watch,
        "exclude_all": exclude_all([entry["host"] for entry in ranking.suspects]),
        "by_class": by_class(rows),
        "by_week": by_week(rows),
        "recurring": recurring(rows),
        "errors": [{"job_id": row.get("job_id"), "job_path": row.get("job_path"), "error": row.get("error")}
                   for row in rows if row.get("status") == "error"],
    }


def by_class(rows: list[dict]) -> list[dict]:
    total = len(rows) or 1
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("status") == "failure" and row.get("failure_id"):
            groups[row["failure_id"]].append(row)
    result = []
    for failure_id, members in groups.items():
        times = [value for value in (job_time(row) for row in members) if value is not None]
        weight = max(host_fault_weight(row.get("failure_id"), row.get("entry_id")) for row in members)
        result.append({
            "failure_id": failure_id,
            "jobs": len(members),
            "share": round(len(members) / total, 4),
            "host_weight": weight,
            "hardware": weight >= 1.0,
            "entries": dict(Counter(row.get("entry_id") for row in members)),
            "initiating_hosts": len({row.get("initiating_host") for row in members if row.get("initiating_host")}),
            "first_seen": iso(min(times)) if times else None,
            "last_seen": iso(max(times)) if times else None,
        })
    return sorted(result, key=lambda entry: (-entry["jobs"], entry["failure_id"]))


def by_week(rows: list[dict]) -> list[dict]:
    weeks: dict[str, dict] = {}
    for row in rows:
        moment = job_time(row)
        if moment is None or row.get("status") == "error":
            continue
        week = weeks.setdefault(week_of(moment), {"jobs": 0, "failed": 0, "by_class": Counter()})
        week["jobs"] += 1
        if row.get("status") in FAILED:
            week["failed"] += 1
            week["by_class"][row.get("failure_id") or "unknown"] += 1
    return [{"week": name, "jobs": value["jobs"], "failed": value["failed"],
             "failure_rate": round(value["failed"] / value["jobs"], 4) if value["jobs"] else 0.0,
             "by_class": dict(value["by_class"].most_common())}
            for name, value in sorted(weeks.items())]


def recurring(rows: list[dict], min_jobs: int = 2) -> list[dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("status") in FAILED and row.get("fingerprint"):
            groups[row["fingerprint"]].append(row)
    result = []
    for fingerprint, members in groups.items():
        if len(members) < min_jobs:
            continue
        members.sort(key=lambda row: (job_time(row) or 0, row.get("job_id") or ""))
        first = members[0]
        times = [value for value in (job_time(row) for row in members) if value is not None]
        result.append({
            "fingerprint": fingerprint,
            "failure_id": first.get("failure_id") or "unknown",
            "entry_id": first.get("entry_id"),
            "text": first.get("fingerprint_text"),
            "jobs": len(members),
            "hosts": sorted({row.get("initiating_host") for row in members if row.get("initiating_host")}),
            "first_seen": iso(min(times)) if times else None,
            "last_seen": iso(max(times)) if times else None,
            "example": {"job_id": first.get("job_id"), "source": first.get("evidence_source"), "line": first.get("evidence_line")},
        })
    return sorted(result, key=lambda entry: (-entry["jobs"], entry["fingerprint"]))
