"""A training job that saves a checkpoint every epoch (a maintainer's tool, see README.md): run it
with its checkpoint folder on a tmpfs of a few MiB, or read-only, and the save fails as on a full or
read-only volume."""
from __future__ import annotations

import argparse
import logging
import os

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt-dir", default="/mnt/ckpt")
    parser.add_argument("--hidden", type=int, default=512)  # about 1 MiB of weights per 512
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--shards", action="store_true", help="every rank saves its own shard (else rank 0 saves)")
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
    model = torch.nn.Sequential(torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 4))
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        for step in range(1, args.steps + 1):
            loss = torch.nn.functional.cross_entropy(model(torch.randn(16, args.hidden)), torch.randint(0, 4, (16,)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log.info("epoch %d step %d/%d loss %.4f", epoch, step, args.steps, loss.item())
        if args.shards or rank == 0:
            name = f"epoch{epoch}-rank{rank}.pt" if args.shards else f"epoch{epoch}.pt"
            path = os.path.join(args.ckpt_dir, name)
            log.info("rank %d: saving checkpoint to %s", rank, path)
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
            log.info("rank %d: checkpoint saved", rank)
        if distributed:
            dist.barrier()
    log.info("training finished after %d epochs", args.epochs)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
