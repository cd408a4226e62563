"""The exact commands to take suspect hosts out of service, for Slurm and Kubernetes.

The commands are the engine's own (`correlate.rules.action.exclusion_commands`, the ones a
single diagnosis gives for `exclude-host-and-restart`), labelled here by system and action:
Slurm `scontrol update NodeName=... State=DRAIN Reason="..."` (running jobs finish, no new ones
start) and `sbatch --exclude=...`; Kubernetes `kubectl cordon` and a `NoSchedule` taint that
says why. A host name that is not a plain name (letters, digits, `.`, `_`, `-`) gets no command:
it would not be safe to paste into a shell.
"""
from __future__ import annotations

import re

from ..correlate.rules.action import exclusion_commands

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LABELS = (("scontrol ", "slurm", "drain"), ("sbatch ", "slurm", "exclude"),
           ("kubectl cordon ", "kubernetes", "cordon"), ("kubectl taint ", "kubernetes", "taint"))
ALL_SUSPECTS = "suspect-host"


def _labelled(commands: list[str]) -> list[dict]:
    labelled = []
    for command in commands:
        system, action = next(((system, action) for prefix, system, action in _LABELS if command.startswith(prefix)), ("shell", "other"))
        labelled.append({"system": system, "action": action, "command": command})
    return labelled


def host_commands(host: str, classes: dict[str, int]) -> list[dict]:
    """Drain / exclude / cordon / taint one host, each as {system, action, command}; the reason is
    the class it started most often."""
    if not _SAFE.match(host):
        return []
    top = min(classes, key=lambda failure: (-classes[failure], failure)) if classes else ALL_SUSPECTS
    return _labelled(exclusion_commands([host], top))


def exclude_all(hosts: list[str]) -> list[dict]:
    """The same for every suspect host at once."""
    safe = [host for host in hosts if _SAFE.match(host)]
    return _labelled(exclusion_commands(safe, ALL_SUSPECTS)) if safe else []
