"""A tiny gloo job that hangs the way real jobs do: one rank stalls, the rest wait in all_reduce.

Run under torchrun by tests/dumps/capture.py. Environment:
  HANG_OUT     folder for pid files, stack files and flight-recorder dumps
  HANG_RANK    the rank that stalls (default 2)
  HANG_STEP    the step at which it stalls (default 3)
  HANG_SLEEP   how long it stalls, seconds (default 60)
  HANG_TIMEOUT the process-group timeout, seconds (default 30)
  HANG_MODE    what the odd rank does at HANG_STEP: "sleep" (a stalled data loader, the
               default), "op" (calls broadcast where the others all_reduce) or "size"
               (all_reduces a tensor of another shape)

Each rank writes its pid, registers faulthandler on SIGUSR1 (stacks to stack_rank<N>.txt)
and runs a thread that writes the flight-recorder dump (pickle and JSON) when the driver
creates HANG_OUT/DUMP: a dump on demand, since gloo has no dump-on-timeout.
"""
import datetime
import faulthandler
import os
import signal
import threading
import time

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d

OUT = os.environ["HANG_OUT"]
HANG_RANK = int(os.environ.get("HANG_RANK", "2"))
HANG_STEP = int(os.environ.get("HANG_STEP", "3"))
HANG_SLEEP = float(os.environ.get("HANG_SLEEP", "60"))
TIMEOUT = float(os.environ.get("HANG_TIMEOUT", "30"))
MODE = os.environ.get("HANG_MODE", "sleep")


def dump_when_asked(rank: int) -> None:
    trigger = os.path.join(OUT, "DUMP")
    while not os.path.exists(trigger):
        time.sleep(0.1)
    with open(os.path.join(OUT, f"fr_trace_rank_{rank}"), "wb") as sink:
        sink.write(c10d._dump_fr_trace())
    with open(os.path.join(OUT, f"fr_trace_rank_{rank}.json"), "wb") as sink:
        sink.write(c10d._dump_fr_trace_json())
    open(os.path.join(OUT, f"dumped_{rank}"), "w").close()


def load_batch(step: int, rank: int) -> torch.Tensor:
    odd = rank == HANG_RANK and step == HANG_STEP
    if odd and MODE == "sleep":
        time.sleep(HANG_SLEEP)  # the stalled data loader
    if odd and MODE == "size":
        return torch.full((4, 4), float(step))
    return torch.full((8, 4), float(step))


def sync(grads: torch.Tensor, step: int, rank: int) -> None:
    if rank == HANG_RANK and step == HANG_STEP and MODE == "op":
        dist.broadcast(grads, src=0)  # the wrong collective
    else:
        dist.all_reduce(grads)


def train() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    rank = dist.get_rank()
    stack_file = open(os.path.join(OUT, f"stack_rank{rank}.txt"), "w")
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    threading.Thread(target=dump_when_asked, args=(rank,), daemon=True).start()
    with open(os.path.join(OUT, f"pid_{rank}"), "w") as sink:
        sink.write(str(os.getpid()))
    for step in range(HANG_STEP + 2):
        grads = load_batch(step, rank)
        print(f"[rank{rank}] syncing step {step} ", flush=True)  # the driver waits for this line
        sync(grads, step, rank)
        print(f"[rank{rank}] step {step} loss {grads.sum().item():.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
