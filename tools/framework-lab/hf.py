import argparse, logging, os, sys, tempfile
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults

p = argparse.ArgumentParser()
p.add_argument("--once", action="store_true")  # the fault fires in the first attempt only
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5); p.add_argument("--timeout", type=int, default=30)
p.add_argument("--epochs", type=float, default=2); p.add_argument("--workers", type=int, default=0)
p.add_argument("--sleep", type=float, default=90); p.add_argument("--unused", action="store_true")
p.add_argument("--no-tqdm", action="store_true"); p.add_argument("--resume", default="")
p.add_argument("--save-truncated", default="")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
RANK = int(os.environ.get("RANK", 0))


class Records(Dataset):
    def __init__(self, n=256):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x @ torch.randn(16, 4, generator=torch.Generator().manual_seed(7))).argmax(1)
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        rec = {"x": self.x[i], "labels": int(self.y[i]), "text": " ".join(["a", "b"] * (1 + i % 3))}
        if args.fault == "dskey" and RANK == args.rank and i % 50 == 7:
            del rec["labels"]  # a record written by an older exporter
        return rec


def text_tokenizer():
    """A word-level tokenizer built for this run's captions, saved without a pad token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "b": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


TOKENIZER = text_tokenizer() if args.fault == "padtoken" else None


def collate(records):
    batch = {"x": torch.stack([r["x"] for r in records]), "labels": torch.tensor([r["labels"] for r in records])}
    if TOKENIZER is not None:  # captions as an auxiliary input, padded to the longest
        batch["text_ids"] = TOKENIZER([r["text"] for r in records], padding=True, return_tensors="pt")["input_ids"]
    return batch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64))
        self.head = nn.Linear(64, 4)
        self.aux = nn.Linear(64, 4) if args.unused else None
        self.step = 0
    def forward(self, x, labels=None, text_ids=None):
        logits = self.head(self.body(x))
        if self.training:
            logits, labels = faults.in_step(args, RANK, self.step, logits, labels)
            self.step += 1
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


if __name__ == "__main__":
    if args.save_truncated:  # a checkpoint folder whose weights file an interrupted copy cut short
        from safetensors.torch import save_file
        os.makedirs(args.save_truncated, exist_ok=True)
        path = os.path.join(args.save_truncated, "model.safetensors")
        save_file(Net().state_dict(), path)
        data = open(path, "rb").read()
        open(path, "wb").write(data[: int(len(data) * 0.6)])
        sys.exit(0)
    if args.fault == "hub":  # the config of the model this run starts from
        from transformers import AutoConfig
        AutoConfig.from_pretrained("bert-base-uncased")
    out = tempfile.mkdtemp(prefix="hf-out-")
    targs = TrainingArguments(output_dir=out, per_device_train_batch_size=16, num_train_epochs=args.epochs,
                              logging_steps=4, use_cpu=True, ddp_backend="gloo", report_to=[],
                              save_strategy="no", ddp_timeout=args.timeout, dataloader_num_workers=args.workers,
                              disable_tqdm=args.no_tqdm, learning_rate=0.05, seed=0,
                              remove_unused_columns=False)
    trainer = Trainer(model=Net(), args=targs, train_dataset=Records(), data_collator=collate)
    trainer.train(resume_from_checkpoint=args.resume or None)
    if RANK == 0:
        log.info("training finished")
