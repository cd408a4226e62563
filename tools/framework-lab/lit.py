import argparse, logging, os, sys
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
import lightning as L
from lightning.pytorch.strategies import DDPStrategy
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults

p = argparse.ArgumentParser()
p.add_argument("--once", action="store_true")  # the fault fires in the first attempt only
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5); p.add_argument("--devices", type=int, default=2)
p.add_argument("--nodes", type=int, default=1); p.add_argument("--strategy", default="ddp")
p.add_argument("--timeout", type=float, default=30); p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0); p.add_argument("--sleep", type=float, default=90)
p.add_argument("--unused", action="store_true"); p.add_argument("--inplace", action="store_true")
p.add_argument("--barrier", action="store_true"); p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=64); p.add_argument("--save", default="")
p.add_argument("--finite-check", action="store_true"); p.add_argument("--bar", default="auto")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


class Records(Dataset):
    def __init__(self, n=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x @ torch.randn(16, 4, generator=torch.Generator().manual_seed(7))).argmax(1)
        self.bad = None
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        rec = {"x": self.x[i], "label": int(self.y[i])}
        if self.bad is not None and i % 50 == 7:
            del rec["label"]
        return rec["x"], rec["label"]


class Net(L.LightningModule):
    def __init__(self, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 4)
        self.aux = nn.Linear(hidden, 4) if args.unused else None
    def forward(self, x):
        h = self.body(x)
        g = torch.sigmoid(h)
        if args.inplace and self.global_rank == args.rank:
            g.mul_(0.5)
        else:
            g = g * 0.5
        return self.head(h * g)
    def training_step(self, batch, idx):
        x, y = batch
        logits = self(x)
        logits, y = faults.in_step(args, self.global_rank, self.global_step, logits, y)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, prog_bar=True, sync_dist=True, on_step=True, on_epoch=True)
        return loss
    def on_train_epoch_end(self):
        if args.barrier and self.global_rank == args.rank and self.current_epoch == 0:
            logging.getLogger("train").info("waiting for the metrics writer")
            torch.distributed.barrier()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Data(L.LightningDataModule):
    def train_dataloader(self):
        ds = Records()
        if args.fault == "dskey" and self.trainer.global_rank == args.rank:
            ds.bad = True
        return DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers)


if __name__ == "__main__":
    L.seed_everything(0)
    strategy = DDPStrategy(timeout=timedelta(seconds=args.timeout), start_method="spawn") if args.strategy == "ddp_spawn" \
        else DDPStrategy(timeout=timedelta(seconds=args.timeout))
    callbacks = []
    if args.bar == "tqdm":
        from lightning.pytorch.callbacks import TQDMProgressBar
        callbacks.append(TQDMProgressBar())
    if args.finite_check:
        from lightning.pytorch.callbacks import EarlyStopping
        callbacks.append(EarlyStopping(monitor="train_loss_epoch", check_finite=True, patience=100, mode="min"))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, num_nodes=args.nodes, strategy=strategy,
                        max_epochs=args.epochs, log_every_n_steps=2, enable_checkpointing=False,
                        logger=False, callbacks=callbacks)
    model = Net(args.hidden)
    if args.save:
        trainer_ckpt = {"state_dict": model.state_dict(), "epoch": 1, "global_step": 16,
                        "pytorch-lightning_version": L.__version__, "loops": None}
        torch.save(trainer_ckpt, args.save); sys.exit(0)
    trainer.fit(model, datamodule=Data(), ckpt_path=args.resume or None)
    if trainer.global_rank == 0:
        logging.getLogger("train").info("training finished")
