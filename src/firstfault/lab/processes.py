"""Starting, signalling and killing the lab's processes and everything below them.

torchrun starts its workers in sessions of their own, so a process group is not enough: the tree is
found through /proc (as a scheduler's cgroup would hold every process of the job).
"""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from .layouts import Process
from .slurm import JobOutput


def start(process: Process, env: dict, work: Path, job_output: JobOutput | None) -> subprocess.Popen:
    """Start one process in its own session; its console goes to its log file or through srun's forwarding."""
    environment = {**env, **process.env}
    if process.srun_task:
        if job_output is None:
            raise ValueError("an srun task needs the job's output file")
        popen = subprocess.Popen(process.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=environment, cwd=work, start_new_session=True)
        job_output.attach(process.rank, popen.stdout)
        return popen
    process.log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(process.log_file, "wb") as console:
        return subprocess.Popen(process.command, stdout=console, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=environment, cwd=work, start_new_session=True)


def signal_group(popen: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(popen.pid, signum)
    except ProcessLookupError:
        pass


def descendants(root_pid: int) -> list[int]:
    """Every process below `root_pid`."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [root_pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def signal_tree(popen: subprocess.Popen, signum: int) -> None:
    """`signum` once to the process and to every process below it (as a scheduler signals a job's cgroup)."""
    for pid in [popen.pid, *descendants(popen.pid)]:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def kill_tree(popen: subprocess.Popen) -> None:
    signal_tree(popen, signal.SIGKILL)
    signal_group(popen, signal.SIGKILL)  # and anything of its group that left the tree
