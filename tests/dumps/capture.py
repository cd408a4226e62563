"""Run tests/dumps/hang_job.py under torchrun, let it hang, and capture real evidence.

Captures, per rank: py-spy dump text (when py-spy is installed and allowed to ptrace),
faulthandler output (SIGUSR1) and the flight-recorder dump (pickle + JSON); plus the
torchrun log. Used by the live test and, by hand, to refresh tests/fixtures/dumps/:

    python tests/dumps/capture.py OUT_DIR [NPROC] [--wait-timeout] [--mode=sleep|op|size]

Every wait is bounded; the job's process group is always killed at the end.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

JOB = Path(__file__).with_name("hang_job.py")


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _start(out: Path, nproc: int, hang_rank: int, timeout_s: int, port: int,
           mode: str) -> subprocess.Popen:
    torchrun = Path(sys.executable).with_name("torchrun")
    env = dict(os.environ, HANG_OUT=str(out), HANG_RANK=str(hang_rank), HANG_MODE=mode,
               HANG_TIMEOUT=str(timeout_s), TORCH_FR_BUFFER_SIZE="200", OMP_NUM_THREADS="1")
    log = open(out / "torchrun.log", "wb")
    command = [str(torchrun), f"--nproc-per-node={nproc}", f"--master-port={port}", str(JOB)]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                            cwd=str(out), start_new_session=True)


def _all_waiting(out: Path, nproc: int, hang_rank: int) -> bool:
    """True once every healthy rank has said it is entering the stalled step's collective (on a
    loaded machine a fixed pause after the step before was not always enough: the dumps then
    showed no rank behind)."""
    log = (out / "torchrun.log").read_text(errors="replace")
    stalled_step = int(os.environ.get("HANG_STEP", "3"))
    healthy = [rank for rank in range(nproc) if rank != hang_rank]
    return all(f"[rank{rank}] syncing step {stalled_step} " in log for rank in healthy)


def _pids(out: Path, nproc: int) -> dict[int, int]:
    return {rank: int((out / f"pid_{rank}").read_text()) for rank in range(nproc)}


def _pyspy(out: Path, pids: dict[int, int]) -> bool:
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(pyspy).exists():
        return False
    for rank, pid in pids.items():
        done = subprocess.run([pyspy, "dump", "--pid", str(pid)], capture_output=True,
                              text=True, timeout=30)
        (out / f"pyspy_rank{rank}.txt").write_text(done.stdout + done.stderr)
    return all("Thread " in (out / f"pyspy_rank{rank}.txt").read_text() for rank in pids)


def _stop(process: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def capture(out: Path, nproc: int = 4, hang_rank: int = 2, timeout_s: int = 20,
            wait_timeout: bool = False, port: int = 29631, mode: str = "sleep") -> dict:
    """Run the job, capture stacks and dumps while it hangs; return what was captured."""
    out.mkdir(parents=True, exist_ok=True)
    process = _start(out, nproc, hang_rank, timeout_s, port, mode)
    found = {"pyspy": False, "faulthandler": False, "fr": False}
    try:
        if not _wait_for(lambda: _all_waiting(out, nproc, hang_rank), 90):
            raise RuntimeError("the job never reached the stall: " + str(out / "torchrun.log"))
        time.sleep(1.5)  # let the healthy ranks settle inside all_reduce
        pids = _pids(out, nproc)
        found["pyspy"] = _pyspy(out, pids)
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGUSR1)
            except ProcessLookupError:
                continue  # that rank has already died; its stack file stays empty
        found["faulthandler"] = _wait_for(
            lambda: all((out / f"stack_rank{r}.txt").stat().st_size > 0 for r in pids), 10)
        (out / "DUMP").touch()
        found["fr"] = _wait_for(lambda: all((out / f"dumped_{r}").exists() for r in pids), 45)
        if wait_timeout:
            process.wait(timeout=timeout_s + 60)
    finally:
        _stop(process)
    return found


if __name__ == "__main__":
    target = Path(sys.argv[1])
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 4
    modes = [arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("--mode=")]
    print(capture(target, nproc=ranks, wait_timeout="--wait-timeout" in sys.argv,
                  mode=modes[0] if modes else "sleep"))
