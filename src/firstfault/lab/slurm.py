"""The lab's stand-in for Slurm: what srun and slurmstepd would print about a job, in their formats.

The lab has no Slurm, so it plays the scheduler's part itself (srun's I/O forwarding with `--label`,
the task-exit report, the time-limit or preemption cancel) and writes the lines Slurm writes. The
formats follow Slurm's source:

- `--label`: each line prefixed `"%*d: "` with the width of the largest task id
  (src/common/write_labelled_message.c);
- a task that ends badly: `srun: error: <node>: task <id>: Exited with exit code <n>`, or the
  signal's strsignal() text (`Segmentation fault`); signal reports are only shown while the step is
  not being cancelled (the srun launch plugin's `_task_finish`);
- a cancel: `slurmstepd: error: *** JOB <id> ON <node> CANCELLED AT <%Y-%m-%dT%H:%M:%S> DUE TO TIME
  LIMIT ***` (or `PREEMPTION`; `STEP <job>.<step>` for an srun step), then srun's `Job step aborted:
  Waiting up to <KillWait + 2> seconds for job step to finish.` (slurmstepd's req.c, srun).
"""
from __future__ import annotations

import random
import signal
import socket
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

CANCEL_REASONS = ("TIME LIMIT", "PREEMPTION")


@dataclass(frozen=True)
class SlurmJob:
    """One emulated job: its id, the node it ran on, how long it gives processes after SIGTERM."""

    job_id: int
    node: str
    step: int = 0
    kill_wait: int = 5  # KillWait: seconds between SIGTERM and SIGKILL (Slurm's default is 30)

    @classmethod
    def new(cls) -> SlurmJob:
        return cls(job_id=random.randint(100000, 999999), node=socket.gethostname().split(".")[0] or "localhost")

    @property
    def output_name(self) -> str:
        return f"slurm-{self.job_id}.out"  # sbatch's default --output

    def task_env(self, task: int, ntasks: int) -> dict:
        return {"SLURM_JOB_ID": str(self.job_id), "SLURM_STEP_ID": str(self.step), "SLURM_PROCID": str(task),
                "SLURM_LOCALID": str(task), "SLURM_NTASKS": str(ntasks), "SLURM_NODEID": "0",
                "SLURMD_NODENAME": self.node}

    def cancel_lines(self, reason: str, when: datetime, srun_step: bool) -> list[str]:
        if reason not in CANCEL_REASONS:
            raise ValueError(f"unknown cancel reason {reason!r}")
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S")
        lines = [f"slurmstepd: error: *** JOB {self.job_id} ON {self.node} CANCELLED AT {stamp} DUE TO {reason} ***"]
        if srun_step:
            lines.append(f"slurmstepd: error: *** STEP {self.job_id}.{self.step} ON {self.node} CANCELLED AT {stamp} "
                         f"DUE TO {reason} ***")
            lines.append(f"srun: Job step aborted: Waiting up to {self.kill_wait + 2} seconds for job step to finish.")
        return lines

    def task_exit_line(self, task: int, returncode: int, cancelled: bool) -> str | None:
        """srun's report of a task that ended badly (Popen's returncode: negative for a signal)."""
        if returncode > 0:
            return f"srun: error: {self.node}: task {task}: Exited with exit code {returncode}"
        if returncode < 0 and not cancelled:
            return f"srun: error: {self.node}: task {task}: {signal.strsignal(-returncode)}"
        return None


def label_width(ntasks: int) -> int:
    return len(str(max(ntasks - 1, 0)))


@dataclass
class JobOutput:
    """The job's output file (slurm-<id>.out): srun --label lines of every task, and Slurm's own lines."""

    path: Path
    ntasks: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _readers: dict = field(default_factory=dict)

    def __post_init__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "ab")

    def write_line(self, text: str) -> None:
        with self._lock:
            self._handle.write(text.encode() + b"\n")
            self._handle.flush()

    def attach(self, task: int, stream) -> None:
        """Forward a task's output, each line labelled with its task id."""
        label = f"{task:>{label_width(self.ntasks)}}: ".encode()

        def forward():
            for line in iter(stream.readline, b""):
                with self._lock:
                    self._handle.write(label + line + (b"" if line.endswith(b"\n") else b"\n"))
                    self._handle.flush()
            stream.close()

        reader = threading.Thread(target=forward, name=f"srun-io-{task}", daemon=True)
        reader.start()
        self._readers[task] = reader

    def drain(self, task: int, timeout: float = 5.0) -> None:
        """Wait until a finished task's last lines are in the file (srun reports its exit after them)."""
        reader = self._readers.get(task)
        if reader is not None:
            reader.join(timeout)

    def close(self) -> None:
        for reader in self._readers.values():
            reader.join(5.0)
        self._handle.close()  # closing twice is harmless
