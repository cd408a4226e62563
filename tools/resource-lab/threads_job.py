"""A training job that starts processes and threads as real ones do (a maintainer's tool, see
README.md): run it in a pids cgroup whose pids.max is small, as a container's or a Slurm step's
task limit is to a job with many ranks, DataLoader workers and OpenMP threads."""
from __future__ import annotations

import argparse
import logging
import os
import subprocess

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self) -> int:
        return 256

    def __getitem__(self, index: int):
        return torch.randn(32), index % 4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--numpy", action="store_true", help="import numpy (OpenBLAS starts its threads)")
    parser.add_argument("--subprocess", action="store_true", help="ask git for the commit, as trainers log it")
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s train: %(message)s")
    log = logging.getLogger("train")
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    if distributed:
        dist.init_process_group("gloo")
        log.info("rank %d/%d initialized process group (backend=gloo)", rank, dist.get_world_size())
    if args.numpy:
        import numpy

        log.info("numpy %s", numpy.__version__)
    if args.subprocess:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        log.info("code at commit %s", commit or "(not a git checkout)")
    model = torch.nn.Linear(32, 4)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Samples(), batch_size=16, num_workers=args.workers)
    log.info("rank %d: %d DataLoader workers", rank, args.workers)
    for step, (features, labels) in enumerate(loader, start=1):
        loss = torch.nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.info("step %d/%d loss %.4f", step, args.steps, loss.item())
        if step == args.steps:
            break
    log.info("training finished after %d steps", args.steps)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
