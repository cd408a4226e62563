"""A small real gloo training job for the live tests, launched by torchrun.

Each step: a forward/backward of a tiny model, a gradient all_reduce, a logged line
"step N loss X". Faults, on one rank only:
  --fault-rank R --fault-step N   at step N rank R looks a label up past the end of its list
                                  (IndexError); the time just before the raise goes to --stamp
  --hang-rank R --hang-step N     at step N rank R sleeps (before logging the step and before the
                                  all_reduce) while the others log step N and wait in the collective
"""
from __future__ import annotations

import argparse
import json
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist

LABELS = ["cat", "dog", "bird", "fish"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-time", type=float, default=0.2)
    parser.add_argument("--fault-rank", type=int, default=-1)
    parser.add_argument("--fault-step", type=int, default=-1)
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=-1)
    parser.add_argument("--hang-seconds", type=float, default=120.0)
    parser.add_argument("--pg-timeout", type=float, default=20.0)
    parser.add_argument("--stamp", default="")
    parser.add_argument("--hook", action="store_true", help="call firstfault.install()")
    args = parser.parse_args()
    if args.hook:
        import firstfault

        firstfault.install()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s train: %(message)s")
    log = logging.getLogger("train")
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = torch.nn.Linear(8, len(LABELS))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    log.info("rank %d of %d started", rank, world)
    for step in range(args.steps):
        features = torch.randn(16, 8)
        targets = torch.randint(0, len(LABELS), (16,))
        names = [LABELS[int(index)] for index in targets]
        if rank == args.fault_rank and step == args.fault_step:
            if args.stamp:
                with open(args.stamp, "w") as handle:
                    json.dump({"time": time.time(), "rank": rank, "step": step}, handle)
            names.append(LABELS[len(LABELS)])  # an unknown label id: IndexError
        if rank == args.hang_rank and step == args.hang_step:
            if args.stamp:
                with open(args.stamp, "w") as handle:
                    json.dump({"time": time.time(), "rank": rank, "step": step}, handle)
            time.sleep(args.hang_seconds)
        loss = torch.nn.functional.cross_entropy(model(features), targets)
        log.info("step %d loss %.4f", step, loss.item())
        optimizer.zero_grad()
        loss.backward()
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)
            parameter.grad /= world
        optimizer.step()
        time.sleep(args.step_time)
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
