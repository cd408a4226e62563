"""A small, realistic DDP training job (gloo, CPU) with faults injected by flags.

torchrun (or a per-rank shell line) runs this file as a script; nothing in it knows about
firstfault. `--inject KIND:RANK[:STEP[:ARG]]` plants one fault; the runner decides which and
records the truth in case.yaml. Everything else is what an ordinary training script does:
logging, a sharded dataset, DDP, all_reduce of metrics, checkpoints, evaluation.

Importing this module has no side effects (the runner imports `write_checkpoint`). Faults that take
more than a line (native crashes, hangs, a retried download) live in train_faults.py.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import signal
import sys
import tempfile
import threading
import time
import warnings
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, Dataset, DistributedSampler

if __package__:  # imported by the lab (the runner needs write_checkpoint)
    from . import train_faults
else:  # run as a script by torchrun: this folder is sys.path[0]
    import train_faults

log = logging.getLogger("train")

FEATURES, CLASSES = 16, 4
LABEL_NAMES = ["cat", "dog", "bird", "fish"]


class Injections:
    """The parsed `--inject KIND:RANK[:STEP[:ARG]]` flags, looked up by the loop."""

    def __init__(self, specs: list[str]):
        self.faults: list[tuple[str, int, int, str]] = []
        for spec in specs:
            kind, rank, *rest = spec.split(":")
            step = int(rest[0]) if rest else 0
            arg = rest[1] if len(rest) > 1 else ""
            self.faults.append((kind, int(rank), step, arg))

    def get(self, kind: str, rank: int) -> tuple[int, str] | None:
        for fault_kind, fault_rank, step, arg in self.faults:
            if fault_kind == kind and fault_rank == rank:
                return step, arg
        return None

    def at(self, kind: str, rank: int, step: int) -> str | None:
        found = self.get(kind, rank)
        return found[1] if found and found[0] == step else None


class ToyNet(nn.Module):
    def __init__(self, hidden: int = 64, aux_head: bool = False):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU())
        self.block = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, CLASSES)
        # A second head for an auxiliary loss that can be switched off in the config.
        self.aux_head = nn.Linear(hidden, CLASSES) if aux_head else None
        self.use_checkpointing = False
        self.reentrant = True
        self.inplace_gate = False

    def forward(self, features):
        hidden = self.stem(features)
        if self.use_checkpointing:
            # The block runs twice (weight sharing across two "layers") under activation checkpointing.
            hidden = checkpoint(self.block, hidden, use_reentrant=self.reentrant)
            hidden = checkpoint(self.block, hidden, use_reentrant=self.reentrant)
        else:
            hidden = hidden + self.block(hidden)
        gate = torch.sigmoid(hidden)
        if self.inplace_gate:
            gate.mul_(0.5)  # saves memory, but sigmoid's backward needs its output unchanged
        else:
            gate = gate * 0.5
        return self.head(hidden * gate)


class ShardDataset(Dataset):
    """Synthetic labelled records; each rank reads its own shard of `length` records."""

    def __init__(self, length: int, seed: int, bad_index: int | None = None, bad_label_index: int | None = None,
                 kill_index: int | None = None, kill_delay: float = 0.0):
        generator = torch.Generator().manual_seed(seed)
        self.features = torch.randn(length, FEATURES, generator=generator)
        weights = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(7))
        self.labels = (self.features @ weights).argmax(dim=1)
        self.bad_index = bad_index
        self.bad_label_index = bad_label_index
        self.kill_index = kill_index  # the record whose decoding the kernel kills the worker over
        self.kill_delay = kill_delay  # seconds after that record: the batches it made are then in flight

    def __len__(self):
        return len(self.features)

    def record(self, index):
        rec = {"x": self.features[index], "label": LABEL_NAMES[int(self.labels[index])]}
        if index == self.bad_index:
            del rec["label"]  # a record written by an older exporter
        if index == self.bad_label_index:
            rec["label"] = "horse"
        return rec

    def __getitem__(self, index):
        if index == self.kill_index and torch.utils.data.get_worker_info() is not None:
            if self.kill_delay:  # the kill lands while the main process may be taking a batch from it
                threading.Timer(self.kill_delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
            else:
                os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does to a worker that grew too big
        rec = self.record(index)
        label = rec["label"]
        return rec["x"], LABEL_NAMES.index(label) if label in LABEL_NAMES else len(LABEL_NAMES)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="toy DDP classifier")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples-per-rank", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--step-time", type=float, default=0.0, help="extra seconds per step (simulated compute)")
    parser.add_argument("--pg-timeout", type=float, default=30.0, help="process-group timeout in seconds")
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--ckpt-dir", default="")
    parser.add_argument("--sharded-ckpt", action="store_true", help="every rank saves its own shard")
    parser.add_argument("--resume", default="", help="checkpoint to load on rank 0 and broadcast")
    parser.add_argument("--aux-head", action="store_true")
    parser.add_argument("--activation-checkpointing", action="store_true")
    parser.add_argument("--find-unused-parameters", action="store_true")
    parser.add_argument("--manual-grad-sync", action="store_true", help="no DDP: all_reduce each gradient after backward")
    parser.add_argument("--no-reentrant", action="store_true", help="checkpoint(..., use_reentrant=False)")
    parser.add_argument("--out-of-place", action="store_true", help="never modify activations in place")
    parser.add_argument("--drop-last", action="store_true", help="DistributedSampler(drop_last=True) over one dataset")
    parser.add_argument("--worker-context", default="", help="DataLoader workers' start method (spawn, forkserver)")
    parser.add_argument("--collate-lambda", action="store_true", help="collate batches with a lambda")
    parser.add_argument("--metrics-dir", default="")
    parser.add_argument("--sigterm-handler", action="store_true")
    parser.add_argument("--marker", default="", help="file rank 0 creates when it reaches --marker-step")
    parser.add_argument("--marker-step", type=int, default=5)
    parser.add_argument("--fault-marker", default="", help="file created when an injected fault fires")
    parser.add_argument("--scratch-dir", default="", help="where injected faults keep their files")
    parser.add_argument("--upload-thread", action="store_true", help="upload checkpoints from a (non-daemon) thread")
    parser.add_argument("--boundary-exchange", action="store_true",
                        help="exchange boundary embeddings with the partner rank (send/recv) after each epoch")
    parser.add_argument("--download-url", default="", help="vocabulary rank 0 downloads before training")
    parser.add_argument("--backend", default="gloo", help="the process group's backend")
    parser.add_argument("--domains", type=int, default=0,
                        help="add a fixed domain embedding (one row per data source) to each record's features")
    parser.add_argument("--clip-grad-norm", type=float, default=0.0,
                        help="clip_grad_norm_(..., error_if_nonfinite=True) to this norm after backward")
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--model-dtype", default="float32", choices=("float32", "bfloat16"),
                        help="cast the model's weights (not the batches) to this dtype")
    parser.add_argument("--fp16-weights", action="store_true",
                        help="train a float16 copy of the model with a GradScaler that unscales before clipping")
    parser.add_argument("--noise", action="append", default=[], help="benign warnings to emit")
    parser.add_argument("--inject", action="append", default=[], metavar="KIND:RANK[:STEP[:ARG]]")
    return parser.parse_args(argv)


def _launcher_variable(*names: str) -> str | None:
    """The first of these variables that is set: torchrun's, Slurm's, then Open MPI's name for it."""
    return next((os.environ[name] for name in names if name in os.environ), None)


def setup_logging():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def init_distributed(args):
    # torchrun sets RANK/WORLD_SIZE/LOCAL_RANK; under srun the task's SLURM_* variables say the same, under
    # Open MPI's mpirun its OMPI_COMM_WORLD_* ones
    rank = int(_launcher_variable("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK") or 0)
    world_size = int(_launcher_variable("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE") or 1)
    local_rank = int(_launcher_variable("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK") or rank)
    dist.init_process_group(args.backend, rank=rank, world_size=world_size, timeout=timedelta(seconds=args.pg_timeout))
    log.info("rank %d/%d (local rank %d, pid %d) initialized process group (backend=%s)",
             rank, world_size, local_rank, os.getpid(), dist.get_backend())
    if os.environ.get("RANK_INFO_DIR"):  # lets a driver know which node ran which rank
        # (the node the rendezvous numbered, and the launcher whose console holds this rank's lines)
        info = {"node": int(os.environ.get("GROUP_RANK", "0")), "pid": os.getpid(), "parent": os.getppid()}
        Path(os.environ["RANK_INFO_DIR"], f"{rank}.json").write_text(json.dumps(info))
    return rank, world_size, local_rank


def make_loader(args, rank, world_size, faults, epoch):
    if args.drop_last:
        # One dataset, split evenly by the sampler: every rank gets the same number of batches.
        total = args.samples_per_rank * world_size - args.batch_size * world_size // 2
        dataset = ShardDataset(total, seed=100 + epoch)
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, drop_last=True)
        sampler.set_epoch(epoch)
        return DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers, drop_last=True)
    if faults.get("missing-library", rank) and epoch == 0:
        train_faults.load_jpeg_decoder()  # this node's image lacks the GPU JPEG decoder's library
    length = args.samples_per_rank
    short = faults.get("short-shard", rank)
    if short and epoch == short[0]:
        length -= args.batch_size * int(short[1] or 2)  # this rank's shard file is shorter
    bad_key = faults.get("missing-key", rank)
    bad_label = faults.get("unknown-label", rank)
    killed = faults.get("worker-killed", rank)
    dataset = ShardDataset(
        length, seed=1000 * epoch + rank,
        bad_index=bad_key[0] * args.batch_size + 3 if bad_key and epoch == 0 else None,
        bad_label_index=bad_label[0] * args.batch_size + 5 if bad_label and epoch == 0 else None,
        kill_index=killed[0] * args.batch_size + 2 if killed and epoch == 0 else None,
        kill_delay=float(killed[1]) / 1000 if killed and killed[1] else 0.0,
    )
    log.info("epoch %d: rank %d shard has %d samples -> %d steps", epoch, rank, len(dataset), len(dataset) // args.batch_size)
    collate = (lambda batch: torch.utils.data.default_collate(batch)) if args.collate_lambda else None
    return DataLoader(dataset, batch_size=args.batch_size, shuffle=False, num_workers=args.num_workers, drop_last=True,
                      collate_fn=collate, multiprocessing_context=args.worker_context or None)


def plain_loss(logits, labels, label_smoothing):
    return F.cross_entropy(logits.float(), labels, label_smoothing=label_smoothing)


def guarded_loss(logits, labels, label_smoothing):
    """The loss with a divergence guard: a branch on a tensor's value, which one graph cannot hold."""
    loss = F.cross_entropy(logits.float(), labels, label_smoothing=label_smoothing)
    if loss.item() > 1e4:
        raise FloatingPointError(f"loss {loss.item():.1f} diverged")
    return loss


def emit_noise(args, rank):
    if "deprecation" in args.noise:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning)
    if "apex-probe" in args.noise and rank == 0:
        try:
            import apex  # noqa: F401
        except ImportError:
            log.info("apex not available, using native fused optimizer fallback", exc_info=True)
    if "retry" in args.noise and rank == 0:
        log.warning("metrics upload failed: Connection reset by peer; retrying in 0.1s (attempt 1/3)")
        time.sleep(0.1)
        log.info("metrics upload succeeded on attempt 2/3")
    if "dist-deprecations" in args.noise:
        # old spellings from an older codebase: torch.distributed warns and carries on
        probe = torch.ones(2)
        dist.all_reduce(probe, op=dist.reduce_op.SUM)
        gathered = torch.empty(2 * dist.get_world_size())
        dist._all_gather_base(gathered, probe)
    if "skip-corrupt" in args.noise and rank == 0:
        for index, line in enumerate(['{"id": 1, "label": "cat"}', '{"id": 2, "label": "dog"', '{"id": 3, "label": "fish"}']):
            try:
                json.loads(line)
            except json.JSONDecodeError:
                log.exception("metadata record %d is corrupt, skipping it", index)


def fire(args, kind, rank):
    """An injected fault is about to happen: tell the lab (its scheduler may act on it)."""
    if args.fault_marker:
        # written whole, then renamed: the lab acts as soon as the name exists and reads the rank in it
        marker = Path(args.fault_marker)
        partial = marker.with_name(f".{marker.name}.{os.getpid()}")
        partial.write_text(f"{kind} {rank}")
        partial.replace(marker)


def save_checkpoint(args, model, optimizer, epoch, rank, faults):
    ckpt_dir = Path(args.ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    if args.sharded_ckpt:
        path = ckpt_dir / f"epoch{epoch}-rank{rank}.pt"
    elif rank == 0:
        path = ckpt_dir / f"checkpoint_epoch{epoch}.pt"
    else:
        return
    if faults.get("disk-full", rank) and epoch == faults.get("disk-full", rank)[0]:
        path.unlink(missing_ok=True)
        path.symlink_to("/dev/full")  # the volume behind this path is full
    log.info("saving checkpoint to %s", path)
    if faults.get("ckpt-denied", rank) and epoch == faults.get("ckpt-denied", rank)[0]:
        train_faults.lose_write_permission(path)  # this node mounts the checkpoint volume for another user
    if faults.get("stuck-ckpt", rank) and epoch == faults.get("stuck-ckpt", rank)[0]:
        fire(args, "stuck-ckpt", rank)
        train_faults.block_writing_shard(path)  # the mount behind this path hangs
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
    with open(path, "wb") as handle:
        torch.save(state, handle)
        handle.flush()  # a full volume reports ENOSPC here at the latest
    log.info("checkpoint saved (%d bytes)", path.stat().st_size)
    return path


def resume(args, model, rank):
    if rank == 0:
        log.info("resuming from %s", args.resume)
        state = torch.load(args.resume, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        log.info("loaded checkpoint from epoch %s", state.get("epoch"))
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, src=0)


def write_checkpoint(path: str, hidden: int = 64, truncate_to: float = 1.0, with_config: bool = False) -> None:
    """A checkpoint as an earlier run would have left it (the lab's preparation step). `with_config`: the
    run's argparse namespace is pickled into it too, as many training scripts do."""
    torch.manual_seed(0)
    model = ToyNet(hidden=hidden)
    state = model.state_dict()
    ema = {key: value.clone() for key, value in state.items()}
    momentum = {key: torch.zeros_like(value) for key, value in state.items()}
    checkpoint = {"model": state, "ema": ema, "momentum": momentum, "epoch": 3}
    if with_config:
        checkpoint["args"] = argparse.Namespace(lr=0.05, hidden=hidden, epochs=4)
    torch.save(checkpoint, path)
    if truncate_to < 1.0:
        size = os.path.getsize(path)
        with open(path, "r+b") as handle:
            handle.truncate(int(size * truncate_to))


def train(args):
    faults = Injections(args.inject)
    rank, world_size, local_rank = init_distributed(args)
    torch.manual_seed(1234)
    if rank == 0:
        log.info("config: epochs=%d samples_per_rank=%d batch_size=%d lr=%s hidden=%d workers=%d pg_timeout=%ss",
                 args.epochs, args.samples_per_rank, args.batch_size, args.lr, args.hidden, args.num_workers, args.pg_timeout)
    fd_limit = faults.get("fd-limit", rank)
    if fd_limit:
        open_now = len(os.listdir("/proc/self/fd"))
        limit = open_now + int(fd_limit[1] or 24)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    device = torch.device(f"cuda:{local_rank}" if args.device == "cuda" else "cpu")
    model = ToyNet(hidden=args.hidden, aux_head=args.aux_head).to(device)
    if args.model_dtype != "float32":
        log.info("casting the model to %s (--model-dtype)", args.model_dtype)
        model = model.to(getattr(torch, args.model_dtype))  # the weights only: the batches stay float32
    if args.fp16_weights:
        model = model.half()  # the weights themselves in float16, no float32 master copy
    scaler = torch.amp.GradScaler(device.type) if args.fp16_weights else None
    # which data source a record came from, as a fixed embedding row added to its features
    domain_table = nn.Embedding(args.domains, FEATURES).requires_grad_(False) if args.domains else None
    model.attention_kernel = fused_attention_kernel(faults, rank)
    model.use_checkpointing = args.activation_checkpointing
    model.reentrant = not args.no_reentrant
    if args.resume:
        resume(args, model, rank)
    if args.manual_grad_sync:
        ddp_model = model
    else:
        ddp_model = DDP(model, find_unused_parameters=args.find_unused_parameters)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=args.lr, momentum=0.9)
    emit_noise(args, rank)
    if args.download_url and rank == 0:
        vocab = json.loads(train_faults.fetch_with_retry(args.download_url, log))
        log.info("vocabulary has %d labels", len(vocab["labels"]))
    uploads = train_faults.start_upload_thread(log) if args.upload_thread else None
    loss_fn = plain_loss
    if faults.get("compile-guard", rank):
        log.info("compiling the loss (fullgraph=True)")
        loss_fn = torch.compile(guarded_loss, fullgraph=True, backend="eager")  # this node's image sets it on
    open_metric_files = []  # the metrics writer keeps its handles (a leak nobody noticed)
    global_step = 0
    carried_logits = None  # backward-twice: last step's logits, kept for a consistency term
    for epoch in range(args.epochs):
        loader = make_loader(args, rank, world_size, faults, epoch)
        steps = len(loader)
        for step_in_epoch, (features, labels) in enumerate(loader):
            step = global_step
            for kind in train_faults.NATIVE_CRASHES:
                if faults.at(kind, rank, step) is not None:
                    train_faults.crash_natively(kind, args.scratch_dir or tempfile.gettempdir())
            if faults.at("oom-victim", rank, step) is not None:
                _prefetch_cache = torch.ones(64 << 20)  # 256 MiB of decoded samples nobody evicts
                fire(args, "oom-victim", rank)
                time.sleep(60)  # still holding it when the host runs out of memory
            if faults.at("index-error", rank, step) is not None:
                fire(args, "index-error", rank)
                vocab = {name: index for index, name in enumerate(LABEL_NAMES)}
                reverse = [vocab[name] for name in LABEL_NAMES]
                labels = torch.tensor([reverse[int(label) + 4] for label in labels])
            if faults.at("batch-mismatch", rank, step) is not None:
                labels = labels[:-1]  # a collate bug drops the last label
            if faults.at("nan-input", rank, step) is not None:
                features = features.clone()
                features[2, 5] = float("inf")  # a corrupt record from the feature store
            if faults.at("sigkill", rank, step) is not None:
                log.info("rank %d: step %d", rank, step)
                os.kill(os.getpid(), signal.SIGKILL)
            if faults.at("straggle", rank, step) is not None:
                log.info("rank %d: syncing checkpoint to remote storage", rank)
                time.sleep(float(faults.at("straggle", rank, step)))
                log.info("rank %d: sync done", rank)
            if domain_table is not None:
                domains = torch.arange(len(features)) % args.domains
                if faults.at("new-domain", rank, step) is not None:
                    domains[-1] = args.domains  # a record of a source added after the table was sized
                features = features + domain_table(domains)
            if faults.at("unscaled-record", rank, step) is not None:
                features = features.clone()
                features[3] *= 1e25  # a record in raw sensor units, never normalised: the loss stays finite
            if args.fp16_weights:
                features = features.half()
            if faults.at("double-input", rank, step) is not None:
                features = features.double()  # records from a new exporter decode as float64
            if faults.at("alloc-limit", rank, step) is not None:
                fire(args, "alloc-limit", rank)
                train_faults.limit_address_space(512 << 20)  # this rank's container: ulimit -v
                _pairwise = torch.empty(1 << 30)  # a batch-wide similarity buffer of 4 GiB
            model.inplace_gate = faults.at("inplace", rank, step) is not None and not args.out_of_place
            features, labels = features.to(device), labels.to(device)
            if faults.at("no-grad", rank, step) is not None:
                with torch.no_grad():  # a probe path that reuses the evaluation helper's no_grad
                    logits = ddp_model(features)
            else:
                logits = ddp_model(features)
            loss = loss_fn(logits, labels, args.label_smoothing)
            twice = faults.get("backward-twice", rank)
            if twice and step >= twice[0] - 1:
                if carried_logits is not None:  # its graph was freed by the last step's backward
                    loss = loss + 0.1 * F.mse_loss(logits, carried_logits)
                carried_logits = logits  # never detached
            if not torch.isfinite(loss):
                log.error("non-finite loss %s at step %d on rank %d", loss.item(), step, rank)
                raise FloatingPointError(f"Loss became infinite or NaN at iteration={step}!")
            optimizer.zero_grad(set_to_none=True)
            (scaler.scale(loss) if scaler else loss).backward()
            if args.manual_grad_sync:
                for param in model.parameters():
                    if param.grad is not None:
                        dist.all_reduce(param.grad)
                        param.grad /= world_size
            if scaler:
                scaler.unscale_(optimizer)  # so that clipping sees the true gradients
            if args.clip_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm, error_if_nonfinite=True)
            if scaler:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            if args.step_time:
                time.sleep(args.step_time)
            if args.metrics_dir:
                metrics_path = Path(args.metrics_dir) / f"rank{rank}" / f"step_{step:05d}.json"
                metrics_path.parent.mkdir(parents=True, exist_ok=True)
                handle = open(metrics_path, "w")
                handle.write(json.dumps({"step": step, "loss": loss.item()}))
                handle.flush()
                open_metric_files.append(handle)
            correct = (logits.argmax(dim=1) == labels).sum().item()
            metrics = [loss.item() * len(labels), float(correct), float(len(labels))]
            if faults.at("metric-extra", rank, step) is not None:
                metrics.append(float(step))  # grad-norm added on this rank only
            metrics = torch.tensor(metrics)
            dist.all_reduce(metrics)
            if rank == 0 and (step_in_epoch % 4 == 0 or step_in_epoch == steps - 1):
                log.info("epoch %d step %d/%d loss %.4f acc %.3f", epoch, step_in_epoch + 1, steps,
                         metrics[0] / metrics[2], metrics[1] / metrics[2])
            if faults.at("slow-fetch", rank, step + 1) is not None:
                log.info("rank %d: fetching remote blob for step %d", rank, step + 1)
                time.sleep(float(faults.at("slow-fetch", rank, step + 1) or 2))
            if args.marker and rank == 0 and step == args.marker_step:
                Path(args.marker).touch()
            global_step += 1
        if faults.get("zero-division", rank) and faults.get("zero-division", rank)[0] == epoch:
            evaluated = 0
            log.info("eval epoch %d: accuracy %.3f", epoch, correct / evaluated)
        if args.ckpt_dir:
            path = save_checkpoint(args, model, optimizer, epoch, rank, faults)
            if uploads is not None and path:
                uploads.put(path)
        end_of_epoch(args, rank, world_size, epoch, faults, model)
        dist.barrier()
        if rank == 0:
            log.info("epoch %d done", epoch)
    dist.barrier()
    if rank == 0:
        log.info("training finished after %d steps", global_step)
    if faults.get("final-collective", rank):
        log.info("rank %d: gathering final metrics from every rank", rank)
        dist.all_reduce(torch.ones(1))  # under `if rank == ...:` only: the others have left
    dist.destroy_process_group()


def fused_attention_kernel(faults, rank):
    """The fused attention kernel, where this node's image has it (a `missing-module` rank's does not)."""
    if faults.get("missing-module", rank):
        from flash_attn import flash_attn_func
        return flash_attn_func
    return None


def end_of_epoch(args, rank, world_size, epoch, faults, model):
    """Evaluation, metrics and the boundary exchange between epochs (where some faults live)."""
    if faults.get("stuck-eval", rank) and faults.get("stuck-eval", rank)[0] == epoch:
        log.info("rank %d: evaluating epoch %d on the held-out set", rank, epoch)
        fire(args, "stuck-eval", rank)
        train_faults.wait_for_silent_service()
    if faults.get("half-eval", rank) and faults.get("half-eval", rank)[0] == epoch:
        log.info("rank %d: embedding health check of epoch %d (float16 embeddings)", rank, epoch)
        with torch.no_grad():
            embeddings = model.stem(torch.randn(256, FEATURES)).half()  # half the memory of float32
            covariance = embeddings.T @ embeddings / len(embeddings)
            spectrum = torch.linalg.eigvalsh(covariance)  # CPU has no float16 kernel for eigh
            log.info("rank %d: embedding effective rank %.1f", rank, spectrum.sum() ** 2 / (spectrum ** 2).sum())
    if faults.get("extra-barrier", rank) and faults.get("extra-barrier", rank)[0] == epoch:
        log.info("rank %d: waiting for the metrics writer to flush epoch %d", rank, epoch)
        dist.barrier()  # called under `if rank == ...:` only: the other ranks never join it
    if args.boundary_exchange and rank ^ 1 < world_size:
        partner = rank ^ 1
        outgoing, incoming = torch.full((1 << 20,), float(rank)), torch.empty(1 << 20)  # 4 MiB each way
        flipped = faults.get("p2p-order", rank) is not None and faults.get("p2p-order", rank)[0] == epoch
        if (rank < partner) != flipped:  # the lower rank of a pair sends first, the higher one receives first
            dist.send(outgoing, partner)
            dist.recv(incoming, partner)
        else:
            dist.recv(incoming, partner)
            dist.send(outgoing, partner)
        log.info("rank %d: exchanged boundary embeddings with rank %d", rank, partner)


def install_sigterm_handler(rank_hint: str):
    def on_sigterm(signum, frame):
        log.warning("rank %s: received SIGTERM, stopping", rank_hint)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)


def install_traceback_renderer() -> None:
    """Print an uncaught exception as the renderer the runner chose (LAB_TRACEBACKS): rich's
    handler, as a script that calls `rich.traceback.install()` or a typer CLI does. Installed
    before the process group, whose own hook (the `[rankN]:` prefix) wraps it, as in a real job."""
    if os.environ.get("LAB_TRACEBACKS") == "rich":
        from rich.traceback import install

        install()


def main(argv=None):
    args = parse_args(argv)
    setup_logging()
    install_traceback_renderer()
    if args.sigterm_handler:
        install_sigterm_handler(_launcher_variable("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK") or "?")
    train(args)


def recorded(entry):
    """The entry point decorated with torch's `@record` when the runner asks (LAB_RECORD=1), as the
    elastic docs advise: a worker's exception goes to its error file, and torchrun's failure table
    shows its traceback instead of `To enable traceback see ...`."""
    if os.environ.get("LAB_RECORD") != "1":
        return entry
    from torch.distributed.elastic.multiprocessing.errors import record

    return record(entry)


if __name__ == "__main__":
    recorded(main)()
    # A rank that finished leaves without the interpreter's teardown: gloo's threads, destroyed
    # there while a peer still talks to this process (a rank that calls a collective after the
    # others finished), abort it now and then ("terminate called without an active exception",
    # SIGABRT), and a run's truth must be the fault the lab injected, not that race.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
