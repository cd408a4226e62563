"""A Ray Train job (TorchTrainer, CPU workers, Gloo): the driver's console holds every worker's lines."""
import argparse, logging, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5); p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=24); p.add_argument("--sleep", type=float, default=90)
p.add_argument("--timeout", type=float, default=30)
args = p.parse_args()


def train_loop(config):
    import faults
    import ray.train
    import ray.train.torch

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    rank = ray.train.get_context().get_world_rank()
    model = ray.train.torch.prepare_model(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        x = torch.randn(8, 16, generator=generator)
        y = x[:, :4].argmax(dim=1)
        logits, y = faults.in_step(args, rank, step, model(x), y)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad(); loss.backward(); optimizer.step()
        if step % 4 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
            ray.train.report({"loss": loss.item(), "step": step})
    if rank == 0:
        log.info("training finished")


if __name__ == "__main__":
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    ray.init(num_cpus=args.workers + 1, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.path.dirname(os.path.abspath(__file__))}})
    trainer = TorchTrainer(train_loop, scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=int(args.timeout)),
                           run_config=RunConfig(storage_path=os.path.abspath("ray_results"), name="job"))
    result = trainer.fit()
    print("result:", result.metrics)
