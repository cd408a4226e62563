"""A training job whose DataLoader workers hand batches over through /dev/shm (a maintainer's tool,
see README.md): run it in a mount namespace whose /dev/shm is a few MiB, as a container's 64 MiB
default is to a real batch, and it fails the way such jobs do."""
from __future__ import annotations

import argparse
import logging
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, count: int, mib: float) -> None:
        self.count, self.numel = count, int(mib * 1024 * 1024 / 4)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        return torch.randn(self.numel), index % 4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample-mib", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--strategy", default="")  # file_system | file_descriptor
    parser.add_argument("--pin-memory", action="store_true")
    parser.add_argument("--context", default="")  # spawn | forkserver
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s train: %(message)s")
    log = logging.getLogger("train")
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    if distributed:
        dist.init_process_group("gloo")
        log.info("rank %d/%d initialized process group (backend=gloo)", rank, dist.get_world_size())
    if args.strategy:
        torch.multiprocessing.set_sharing_strategy(args.strategy)
    model = torch.nn.Linear(int(args.sample_mib * 1024 * 1024 / 4), 4)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(args.steps * args.batch, args.sample_mib), batch_size=args.batch, num_workers=args.workers,
                        pin_memory=args.pin_memory, multiprocessing_context=args.context or None)
    log.info("rank %d: %d DataLoader workers, batches of %d x %.1f MiB", rank, args.workers, args.batch, args.sample_mib)
    for step, (features, labels) in enumerate(loader, start=1):
        loss = torch.nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.info("step %d/%d loss %.4f", step, args.steps, loss.item())
    log.info("training finished after %d steps", args.steps)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
