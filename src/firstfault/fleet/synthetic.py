"""A synthetic fleet: N jobs over H hosts, with planted faulty hosts and the truth beside them.

    truth = make_fleet("/tmp/fleet", jobs=200, hosts=40, bad_hosts=2)

writes `jobs/job-<id>/node<K>.log` (each node's torchrun console) and `dmesg-<host>.txt` (each
node's kernel log) for every job, and `truth.json`: which hosts were planted bad and how, and for
every job what happened and on which host it started. The jobs are ordinary: most are healthy,
some fail in code or data (out of memory, a device-side assert, an exception, a NaN loss, a
missing package); a few fail on hardware somewhere at random (a one-off GPU or link fault). The
planted bad hosts fail a share of the jobs that land on them after their onset: a GPU that falls
off the bus now and then, a flapping InfiniBand port, a GPU with uncorrectable ECC errors. One
more host, the decoy, runs rank 0 of a team whose code keeps failing: it starts many failures,
none of them its fault, and must never be blamed.

Deterministic for a given seed; every file's modification time is the job's end.

`layout="slurm"` writes what a plain Slurm cluster leaves instead: each node's console as
`slurm-<jobid>-<node>.out` (`#SBATCH --output=slurm-%j-%N.out`), its kernel log as
`dmesg-<node>.log`, no NCCL INFO lines (so healthy jobs name their hosts only in file names), and
every file's modification time the day the logs were copied, not the job's end.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from .synthetic_logs import (Fault, Node, NodeLog, boot_lines, code_failure, gpu_fault, ib_peer_errors,
                             ib_port_error, import_failure)

BAD_HOST_KINDS = ("gpu-fallen-off-bus", "nccl-ib-async-error", "gpu-ecc-error")
HARDWARE_KINDS = BAD_HOST_KINDS
CODE_KINDS = ("user-code-exception", "cuda-oom", "cuda-device-side-assert", "loss-nan", "python-import-error")
START = 1_772_323_200.0  # 2026-03-01 00:00 UTC, a Sunday
WEEK = 7 * 86400.0


@dataclass(frozen=True)
class Rates:
    """How often things go wrong (per job)."""

    bad_host_fault: float = 0.35  # a planted bad host, after its onset, fails a job it is in
    random_hardware: float = 0.01  # a one-off hardware fault on any host
    code: float = 0.12  # a code or data failure
    decoy_share: float = 0.08  # jobs whose rank 0 runs on the decoy host
    decoy_code: float = 0.6  # those jobs fail in code this often


def host_names(count: int) -> list[str]:
    """`gpu-r01-n01` ... : 16 nodes per rack."""
    return [f"gpu-r{index // 16 + 1:02d}-n{index % 16 + 1:02d}" for index in range(count)]


def host_ip(host: str) -> str:
    rack, slot = host.split("-")[1:]
    return f"10.12.{int(rack[1:])}.{int(slot[1:])}"


LAYOUTS = ("demo", "slurm")
COPIED_AFTER = 10 * 86400.0  # slurm layout: the logs were copied to the shared folder this long after the last week


def make_fleet(out: str | Path, jobs: int = 200, hosts: int = 40, bad_hosts: int = 2, seed: int = 13,
               weeks: int = 6, rates: Rates = Rates(), layout: str = "demo") -> dict:
    """Write the fleet under `out` and return its truth (also written to out/truth.json)."""
    if hosts < bad_hosts + 2:
        raise ValueError(f"{hosts} hosts cannot hold {bad_hosts} bad hosts and a decoy")
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
    copied_at = START + weeks * WEEK + COPIED_AFTER
    chooser = random.Random(seed)
    names = host_names(hosts)
    decoy = names[0]
    planted = chooser.sample(names[1:], bad_hosts)
    bad = {host: {"kind": BAD_HOST_KINDS[index % len(BAD_HOST_KINDS)],
                  "onset": START + chooser.uniform(0, weeks * WEEK / 3)} for index, host in enumerate(planted)}
    root = Path(out)
    (root / "jobs").mkdir(parents=True, exist_ok=True)
    truth_jobs = {}
    for number in range(jobs):
        job_id = f"job-{412000 + number}"
        plan = _plan_job(chooser, names, decoy, bad, weeks, rates)
        _write_job(root / "jobs" / job_id, plan, chooser, layout, copied_at)
        truth_jobs[job_id] = {
            "outcome": plan.outcome, "hosts": plan.hosts, "hardware": plan.outcome in HARDWARE_KINDS,
            "initiating_host": plan.hosts[plan.fault.node] if plan.fault and plan.outcome != "python-import-error" else None,
            "started": plan.started, "ended": plan.ended, "fault_at": plan.fault.at if plan.fault else None,
        }
    truth = {"seed": seed, "layout": layout, "hosts": names, "decoy_host": decoy,
             "bad_hosts": {host: {"kind": value["kind"], "onset": value["onset"]} for host, value in bad.items()},
             "jobs": truth_jobs}
    (root / "truth.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return truth


@dataclass(frozen=True)
class JobPlan:
    hosts: list[str]
    gpus: int
    started: float
    ended: float
    outcome: str  # "healthy", a CODE_KINDS or a HARDWARE_KINDS name
    fault: Fault | None


def _plan_job(chooser: random.Random, names: list[str], decoy: str, bad: dict, weeks: int, rates: Rates) -> JobPlan:
    count = min(chooser.choices((1, 2, 4, 8), weights=(15, 35, 35, 15))[0], len(names))
    decoy_job = chooser.random() < rates.decoy_share
    others = [name for name in names if name != decoy] if decoy_job else names
    hosts = chooser.sample(others, count - 1 if decoy_job else count)
    if decoy_job:
        hosts.insert(0, decoy)
    gpus = 8 if chooser.random() < 0.8 else 4
    started = START + chooser.uniform(0, weeks * WEEK)
    ended = started + chooser.uniform(1, 10) * 3600
    at = chooser.uniform(started + 600, ended)
    for index, host in enumerate(hosts):
        if host in bad and started >= bad[host]["onset"] and chooser.random() < rates.bad_host_fault:
            kind = bad[host]["kind"]
            if kind == "nccl-ib-async-error" and count == 1:
                continue  # one node talks over NVLink: a bad IB port does not show
            return JobPlan(hosts, gpus, started, at + 700, kind, Fault(kind, index, chooser.randrange(gpus), at))
    if chooser.random() < rates.random_hardware:
        kinds = [kind for kind in HARDWARE_KINDS if count > 1 or kind != "nccl-ib-async-error"]
        kind = chooser.choice(kinds)
        return JobPlan(hosts, gpus, started, at + 700, kind, Fault(kind, chooser.randrange(count), chooser.randrange(gpus), at))
    if decoy_job and chooser.random() < rates.decoy_code:
        kind = chooser.choice(CODE_KINDS[:4])
        return JobPlan(hosts, gpus, started, at + 700, kind, Fault(kind, 0, 0, at))
    if chooser.random() < rates.code:
        kind = chooser.choice(CODE_KINDS)
        if kind == "python-import-error":
            return JobPlan(hosts, gpus, started, started + 20, kind, Fault(kind, 0, 0, started + 5))
        return JobPlan(hosts, gpus, started, at + 700, kind, Fault(kind, chooser.randrange(count), chooser.randrange(gpus), at))
    return JobPlan(hosts, gpus, started, ended, "healthy", None)


def _write_job(folder: Path, plan: JobPlan, chooser: random.Random, layout: str = "demo",
               copied_at: float | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    world = len(plan.hosts) * plan.gpus
    comm_id = f"{chooser.getrandbits(64):016x}"
    nodes = [Node(host, host_ip(host), rank, plan.gpus, chooser.randrange(20_000, 90_000)) for rank, host in enumerate(plan.hosts)]
    logs = [NodeLog(node, world, nccl_info=layout == "demo") for node in nodes]
    dmesg = {node.host: boot_lines(node.host, plan.started - chooser.uniform(1, 30) * 86400) for node in nodes}
    for log in logs:
        log.start(plan.started, comm_id)
    fault = plan.fault
    until = fault.at if fault else plan.ended
    for log in logs:
        log.progress(plan.started, until)
    if fault is None:
        for log in logs:
            log.finished(plan.ended, 20000)
    elif fault.kind == "python-import-error":
        for log in logs:
            import_failure(log, fault.at)
            log.launcher_failure(fault.at + 1, 0, 1)
    else:
        _fail(logs, dmesg, fault, chooser)
    slurm = layout == "slurm"
    job_number = folder.name.rsplit("-", 1)[-1]
    for log in logs:
        name = f"slurm-{job_number}-{log.node.host}.out" if slurm else f"node{log.node.node_rank}.log"
        (folder / name).write_text(log.text(), encoding="utf-8")
    for host, lines in dmesg.items():
        (folder / (f"dmesg-{host}.log" if slurm else f"dmesg-{host}.txt")).write_text("\n".join(lines) + "\n", encoding="utf-8")
    stamp = copied_at if slurm and copied_at is not None else plan.ended
    for path in folder.iterdir():
        os.utime(path, (stamp, stamp))


def _fail(logs: list[NodeLog], dmesg: dict, fault: Fault, chooser: random.Random) -> None:
    """The failing rank first, then what its peers print: the job's collateral."""
    faulty = logs[fault.node]
    seq = chooser.randrange(1000, 90_000)
    if fault.kind == "nccl-ib-async-error":
        peer = logs[(fault.node + 1) % len(logs)].node.ip
        ib_port_error(faulty, fault.local_rank, fault.at, peer)
        for log in logs:
            if log is not faulty:
                ib_peer_errors(log, fault.at + 1.5, faulty.node.ip)
        faulty.launcher_failure(fault.at + 3, fault.local_rank, 1)
        stopped_at = fault.at + 3.5
    else:
        if fault.kind in HARDWARE_KINDS:
            exitcode = gpu_fault(faulty, dmesg[faulty.node.host], fault.kind, fault.local_rank, fault.at)
        else:
            exitcode = code_failure(faulty, fault.kind, fault.local_rank, fault.at)
        signal_name = "SIGABRT" if exitcode == -6 else ""
        faulty.launcher_failure(fault.at + 2, fault.local_rank, exitcode, signal_name)
        stopped_at = fault.at + WATCHDOG_SECONDS
        for log in logs:
            if log is not faulty:
                log.watchdog_timeouts(stopped_at, seq)
    for log in logs:
        if log is not faulty:
            log.launcher_failure(stopped_at + 1, 0, -6, "SIGABRT")


WATCHDOG_SECONDS = 600
