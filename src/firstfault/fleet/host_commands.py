"""The exact commands to take a suspect host out of service, for Slurm and Kubernetes.

Slurm: `scontrol update NodeName=... State=DRAIN Reason="..."` drains the node (running jobs
finish, no new ones start); `sbatch --exclude=...` keeps a resubmitted job off it.
Kubernetes: `kubectl cordon` stops new pods landing on the node; a `NoSchedule` taint says why
and stays until removed (`kubectl taint nodes NODE firstfault-suspect-`).
"""
from __future__ import annotations

import re
import shlex

TAINT_KEY = "firstfault-suspect"
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _name(host: str) -> str:
    return host if _SAFE.match(host) else shlex.quote(host)


def drain_reason(classes: dict[str, int]) -> str:
    """`firstfault: gpu-fallen-off-bus x4, gpu-ecc-error x1` (ids and counts only: safe in quotes)."""
    parts = [f"{failure} x{count}" for failure, count in sorted(classes.items(), key=lambda item: (-item[1], item[0]))]
    return "firstfault: " + ", ".join(parts)


def host_commands(host: str, classes: dict[str, int]) -> list[dict]:
    """Drain / exclude / cordon / taint one host, each as {system, action, command}."""
    name = _name(host)
    top = max(sorted(classes), key=lambda failure: classes[failure]) if classes else "host-fault"
    return [
        {"system": "slurm", "action": "drain",
         "command": f'scontrol update NodeName={name} State=DRAIN Reason="{drain_reason(classes)}"'},
        {"system": "slurm", "action": "exclude", "command": f"sbatch --exclude={name} job.sh"},
        {"system": "kubernetes", "action": "cordon", "command": f"kubectl cordon {name}"},
        {"system": "kubernetes", "action": "taint", "command": f"kubectl taint nodes {name} {TAINT_KEY}={top}:NoSchedule"},
    ]


def exclude_all(hosts: list[str]) -> list[dict]:
    """One command per system that keeps jobs off every suspect host at once."""
    if not hosts:
        return []
    names = [_name(host) for host in hosts]
    return [
        {"system": "slurm", "action": "exclude", "command": f"sbatch --exclude={','.join(names)} job.sh"},
        {"system": "kubernetes", "action": "cordon", "command": "kubectl cordon " + " ".join(names)},
    ]
