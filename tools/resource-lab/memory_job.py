"""A training job whose one rank caches its samples in memory (a maintainer's tool, see README.md):
run it in a memory cgroup whose limit is below what that rank grows to, and the kernel's OOM
killer ends it as a container's memory limit does."""
from __future__ import annotations

import argparse
import logging
import os

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-rank", type=int, default=0, help="the rank that keeps every batch it saw")
    parser.add_argument("--mib-per-step", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s train: %(message)s")
    log = logging.getLogger("train")
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    if distributed:
        from datetime import timedelta
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
        log.info("rank %d/%d initialized process group (backend=gloo)", rank, dist.get_world_size())
    model = torch.nn.Linear(64, 4)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    cache = []
    for step in range(1, args.steps + 1):
        if rank == args.cache_rank:
            cache.append(torch.ones(args.mib_per_step * 1024 * 1024 // 4))  # the "prefetch cache" that only grows
        loss = torch.nn.functional.cross_entropy(model(torch.randn(16, 64)), torch.randint(0, 4, (16,)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.info("step %d/%d loss %.4f", step, args.steps, loss.item())
    log.info("training finished after %d steps", args.steps)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
