"""What the lab does around a run, playing the parts outside the job: an earlier run's checkpoint, a
stale store on the port, a flaky download mirror, the kernel's OOM killer, the scheduler's time limit.

Each part writes only what the real one would leave behind, in its format (cited where it is defined).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import socketserver
import struct
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path

from . import processes
from .slurm import JobOutput, SlurmJob


def prepare_checkpoint(driver: str, work: Path, actions: list) -> None:
    """The resume checkpoint an earlier run left: from a narrower model, cut short, or with a pickled config."""
    if driver not in ("stale-checkpoint", "truncated-checkpoint", "pickled-config-checkpoint"):
        return
    from . import train  # needs torch, like everything the lab runs

    (work / "checkpoints").mkdir()
    path = work / "checkpoints" / "last.pt"
    if driver == "stale-checkpoint":
        train.write_checkpoint(str(path), hidden=48)
        actions.append("wrote checkpoints/last.pt from a model with hidden size 48")
    elif driver == "pickled-config-checkpoint":
        train.write_checkpoint(str(path), with_config=True)
        actions.append("wrote checkpoints/last.pt with the run's argparse.Namespace pickled into it")
    else:
        train.write_checkpoint(str(path), truncate_to=0.8)
        actions.append("wrote checkpoints/last.pt and truncated it to 80% of its size")


def stale_store(port: int):
    """A TCPStore server holding `port`, as one left over from an earlier run of the job would."""
    from datetime import timedelta

    from torch.distributed import TCPStore

    return TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=5))


class FlakyMirror:
    """A download mirror that resets the first `drops` connections, then serves the vocabulary."""

    def __init__(self, drops: int = 2):
        body = json.dumps({"labels": ["cat", "dog", "bird", "fish"]}).encode()
        response = (b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body)
        self.requests = 0
        mirror = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.recv(65536)
                mirror.requests += 1
                if mirror.requests <= drops:
                    # SO_LINGER 0: close() sends a reset, as an overloaded proxy does
                    self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                self.request.sendall(response)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/vocab.json"
        self._thread = threading.Thread(target=self._server.serve_forever, name="flaky-mirror", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def rank_info(rank_info_dir: Path) -> dict[int, dict]:
    """What each rank wrote at start-up (train.py): its node and pid."""
    return {int(path.stem): json.loads(path.read_text()) for path in rank_info_dir.glob("*.json")}


def _status_kib(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            values[key] = int(rest.split()[0])
    return values


def oom_kill(rank_info_dir: Path, rank: int, dmesg: Path, actions: list) -> None:
    """SIGKILL the rank's process as the kernel's OOM killer does, and log the kernel's line about it.

    The line is mm/oom_kill.c's `__oom_kill_process` report, with the victim's real figures, as
    `dmesg -T` prints it."""
    pid = rank_info(rank_info_dir)[rank]["pid"]
    status = _status_kib(pid)
    command_name = Path(f"/proc/{pid}/comm").read_text().strip()
    uid = os.stat(f"/proc/{pid}").st_uid
    score_adj = int(Path(f"/proc/{pid}/oom_score_adj").read_text())
    os.kill(pid, signal.SIGKILL)
    stamp = datetime.now().strftime("%a %b %e %H:%M:%S %Y")
    line = (f"[{stamp}] Out of memory: Killed process {pid} ({command_name}) total-vm:{status.get('VmSize', 0)}kB, "
            f"anon-rss:{status.get('RssAnon', 0)}kB, file-rss:{status.get('RssFile', 0)}kB, "
            f"shmem-rss:{status.get('RssShmem', 0)}kB, UID:{uid} pgtables:{status.get('VmPTE', 0)}kB "
            f"oom_score_adj:{score_adj}")
    dmesg.parent.mkdir(parents=True, exist_ok=True)
    with open(dmesg, "a") as handle:
        handle.write(line + "\n")
    actions.append(f"killed rank {rank} (pid {pid}) with SIGKILL as the OOM killer, and wrote the kernel's "
                   f"report to logs/{dmesg.name}")


def cancel_job(job: SlurmJob, reason: str, started: dict[str, subprocess.Popen], job_output: JobOutput,
               srun_step: bool, actions: list) -> None:
    """Cancel the job as slurmstepd does: its message, SIGCONT and SIGTERM to every process of the job
    (the cgroup holds torchrun's workers too), SIGKILL to what is left after KillWait."""
    for line in job.cancel_lines(reason, datetime.now(), srun_step):
        job_output.write_line(line)
    for popen in started.values():
        if popen.poll() is None:
            processes.signal_tree(popen, signal.SIGCONT)
            processes.signal_tree(popen, signal.SIGTERM)
    deadline = time.monotonic() + job.kill_wait
    while time.monotonic() < deadline and any(popen.poll() is None for popen in started.values()):
        time.sleep(0.05)
    left = [name for name, popen in started.items() if popen.poll() is None]
    for name in left:
        processes.kill_tree(started[name])
    actions.append(f"cancelled the job DUE TO {reason}: SIGTERM to every process of the job"
                   + (f", SIGKILL to {', '.join(left)} after KillWait {job.kill_wait} s" if left else ""))
