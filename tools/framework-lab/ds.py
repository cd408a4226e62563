"""A DeepSpeed job (ZeRO stage 1, CPU accelerator, Gloo), launched by `deepspeed` or torchrun."""
import argparse, logging, os, sys
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import deepspeed
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults

p = argparse.ArgumentParser()
p.add_argument("--local_rank", "--local-rank", type=int, default=-1)
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5); p.add_argument("--steps", type=int, default=24)
p.add_argument("--sleep", type=float, default=90); p.add_argument("--train-batch-size", type=int, default=0)
p.add_argument("--timeout", type=float, default=30)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")

deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=args.timeout))
rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "steps_per_print": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
          "zero_optimization": {"stage": 1}}
if args.train_batch_size:  # a global batch size written for another number of GPUs
    config["train_batch_size"] = args.train_batch_size
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
generator = torch.Generator().manual_seed(rank)
for step in range(args.steps):
    x = torch.randn(8, 16, generator=generator)
    y = (x[:, :4]).argmax(dim=1)
    logits = engine(x)
    logits, y = faults.in_step(args, rank, step, logits, y)
    loss = F.cross_entropy(logits, y)
    engine.backward(loss)
    engine.step()
    if step % 4 == 0:
        log.info("rank %d step %d loss %.4f", rank, step, loss.item())
if rank == 0:
    log.info("training finished")
