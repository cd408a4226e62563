"""A Ray Train job (TorchTrainer, CPU workers, Gloo) whose one worker caches its batches in memory (a
maintainer's tool, see README.md): in a memory cgroup, Ray's memory monitor or the kernel's OOM
killer ends it."""
from __future__ import annotations

import argparse
import logging

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=2)
parser.add_argument("--cache-rank", type=int, default=1)
parser.add_argument("--mib-per-step", type=int, default=64)
parser.add_argument("--steps", type=int, default=60)
args = parser.parse_args()


def train_loop(config):
    import ray.train
    import ray.train.torch

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s train: %(message)s")
    log = logging.getLogger("train")
    rank = ray.train.get_context().get_world_rank()
    model = ray.train.torch.prepare_model(torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    cache = []
    for step in range(1, args.steps + 1):
        if rank == args.cache_rank:
            cache.append(torch.ones(args.mib_per_step * 1024 * 1024 // 4))
        loss = torch.nn.functional.cross_entropy(model(torch.randn(16, 64)), torch.randint(0, 4, (16,)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.info("rank %d step %d/%d loss %.4f", rank, step, args.steps, loss.item())
    log.info("rank %d: training finished after %d steps", rank, args.steps)


if __name__ == "__main__":
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(train_loop, scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo"), run_config=RunConfig(storage_path="/tmp/ray-results"))
    trainer.fit()
