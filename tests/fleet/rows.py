"""Fleet-table rows built by hand, for the tests of the host test and of the renderers."""
from __future__ import annotations

import hashlib

T0 = 1_772_400_000.0  # 2026-03-01 21:20 UTC


def job_row(job: str, hosts: list[str], status: str = "healthy", initiating: str | None = None, failure: str | None = None) -> dict:
    return {"job_id": job, "job_path": f"/j/{job}", "status": status, "hosts": hosts, "initiating_host": initiating,
            "failure_id": failure, "entry_id": failure, "first_fault_time": T0, "modified_at": T0}


def fleet_rows(bad: dict[str, tuple[str, int]], jobs_per_host: int = 30, hosts: int = 20) -> list[dict]:
    """Every host in `jobs_per_host` two-host jobs (an even-numbered host with an odd-numbered one);
    bad[host] = (failure, how many of its jobs it started), for even-numbered hosts."""
    names = [f"gpu-{index:02d}" for index in range(hosts)]
    rows, counter = [], 0
    for round_ in range(jobs_per_host):
        for index in range(0, hosts, 2):
            pair = [names[index], names[(index + 1 + 2 * round_) % hosts]]
            rows.append(job_row(f"job-{counter}", pair))
            counter += 1
    for host, (failure, count) in bad.items():
        mine = [row for row in rows if row["hosts"][0] == host and row["status"] == "healthy"][:count]
        for row in mine:
            row.update(status="failure", initiating_host=host, failure_id=failure, entry_id=failure)
    return rows


CANNED_LINES = {
    "gpu-fallen-off-bus": ("dmesg-{host}.txt", 6, "<time> NVRM: Xid (PCI:<pci>): <num>, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
    "gpu-ecc-error": ("dmesg-{host}.txt", 6, "<time> NVRM: Xid (PCI:<pci>): <num>, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition <num>, subpartition <num>."),
    "user-code-exception": ("node0.log", 41, "ValueError: Expected input batch_size (<num>) to match target batch_size (<num>)."),
}


def canned_rows() -> list[dict]:
    """One small fleet for the renderers' snapshots: a suspect host (Xid 79 in 5 jobs), a host to
    watch (ECC in 2), a code failure that recurs on one host (never blamed), jobs over three weeks,
    and one job that could not be diagnosed."""
    rows = fleet_rows({"gpu-02": ("gpu-fallen-off-bus", 5), "gpu-04": ("gpu-ecc-error", 2), "gpu-00": ("user-code-exception", 6)},
                      jobs_per_host=20, hosts=10)
    for index, row in enumerate(rows):
        row["first_fault_time"] = row["modified_at"] = T0 + index * 3 * 3600
        if row["status"] == "failure":
            name, line, text = CANNED_LINES[row["failure_id"]]
            row.update(evidence_source=f"/j/{row['job_id']}/" + name.format(host=row["initiating_host"]), evidence_line=line,
                       fingerprint=hashlib.sha1(text.encode()).hexdigest()[:16], fingerprint_text=text,
                       summary=f"{row['initiating_host']}: {row['failure_id']}")
        else:
            row["first_fault_time"] = None
            # healthy jobs are dated by their logs' last time; the last few carry no time at all
            row["log_time"] = T0 + index * 3 * 3600 if index < len(rows) - 3 else None
    rows.append({"job_id": "job-broken", "job_path": "/j/job-broken.tar.gz", "status": "error", "hosts": [],
                 "error": "job-broken.tar.gz: not a readable tar file (unexpected end of data)"})
    return rows
