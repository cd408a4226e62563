"""Realistic synthetic training logs with a planted failure cascade, for benchmarks and tests.

    python bench/make_corpus.py single OUT_DIR --size 1G        # one Slurm output, srun --label
    python bench/make_corpus.py ranks OUT_DIR --files 1024 --size 1M   # one file per rank
    python bench/make_corpus.py single OUT_DIR --size 1G --gzip

Lines: rank-prefixed training progress with timestamps, NCCL INFO noise, tqdm progress bars
('\\r' segments, Unicode blocks), Python warnings, and near the end a cascade: one rank hits an
illegal memory access (the root), the others time out in the NCCL watchdog 30 minutes later
(collateral), then the launcher reports failures. `OUT_DIR/manifest.json` records the planted
initiating rank and failure id. Deterministic for a given seed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path

WORLD = 1024
GPUS_PER_NODE = 8
START = time.mktime((2026, 12, 2, 8, 0, 0, 0, 0, 0)) - time.timezone
INITIATING_RANK = 517
FAILURE_ID = "cuda-illegal-memory-access"
LINES_PER_SECOND = 400  # of the whole job, spreads the timestamps over a realistic span

WARNINGS = (
    "/opt/conda/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have requires_grad=True. Gradients will be None",
    "/opt/conda/lib/python3.11/site-packages/torch/distributed/fsdp/_state_dict_utils.py:773: FutureWarning: FSDP.state_dict_type() and FSDP.set_state_dict_type() are being deprecated.",
    "/opt/conda/lib/python3.11/site-packages/transformers/modeling_utils.py:4713: FutureWarning: `_is_quantized_training_enabled` is going to be deprecated in transformers 4.39.0.",
)


def host_of(rank: int) -> str:
    return f"gpu-node-{rank // GPUS_PER_NODE:03d}"


def stamp(seconds: float) -> str:
    whole = int(seconds)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole)) + f",{int((seconds - whole) * 1000):03d}"


def glog_stamp(seconds: float) -> str:
    whole = int(seconds)
    return time.strftime("%m%d %H:%M:%S", time.gmtime(whole)) + f".{int((seconds - whole) * 1e9):09d}"


class Noise:
    """Normal lines of a healthy run, one rank at a time."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.step = 1000

    def line(self, rank: int, now: float) -> str:
        roll = self.rng.random()
        local = rank % GPUS_PER_NODE
        if roll < 0.62:
            self.step += rank == 0
            loss = 2.0 + self.rng.random()
            return (f"{stamp(now)} - INFO - megatron.training - [step {self.step}] loss={loss:.4f} lr=1.20e-04 "
                    f"grad_norm={0.5 + self.rng.random():.3f} tokens_per_sec={self.rng.randint(90000, 130000)} "
                    f"mem_allocated_gb={60 + self.rng.random() * 10:.2f}")
        if roll < 0.86:
            channel = self.rng.randint(0, 31)
            return (f"{host_of(rank)}:{40000 + rank}:{41000 + rank} [{local}] NCCL INFO Channel {channel:02d}/32 : "
                    f"{rank} -> {(rank + 1) % WORLD} via NET/IB/{local}/GDRDMA comm 0x7f3a2c{rank:04x} nRanks {WORLD}")
        if roll < 0.93:
            return (f"{stamp(now)} - INFO - data.loader - worker {self.rng.randint(0, 7)} prefetched shard "
                    f"{self.rng.randint(0, 99999):05d} ({self.rng.randint(1000, 9999)} samples) from /datasets/pile/train")
        if roll < 0.97:
            return WARNINGS[self.rng.randint(0, len(WARNINGS) - 1)]
        done = self.rng.randint(0, 100)
        bar = "█" * (done // 10) + " " * (10 - done // 10)
        segments = [f"Epoch 3: {pct:3d}%|{bar}| {pct * 100}/10000 [12:34<15:20, 5.97it/s]" for pct in range(done, min(done + 6, 101))]
        return "\r".join(segments)


def cascade(failure_time: float, ranks: list[int]) -> dict[int, list[tuple[float, str]]]:
    """The failure lines per rank: the root on INITIATING_RANK, watchdog timeouts elsewhere."""
    lines: dict[int, list[tuple[float, str]]] = {rank: [] for rank in ranks}
    root = INITIATING_RANK
    t = failure_time
    root_lines = [
        f"[rank{root}]: Traceback (most recent call last):",
        f'[rank{root}]:   File "/workspace/megatron/training.py", line 812, in train_step',
        f"[rank{root}]:     loss.backward()",
        f"[rank{root}]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        f"[rank{root}]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        f"{host_of(root)}:{40000 + root}:{41000 + root} [{root % GPUS_PER_NODE}] misc/strongstream.cc:399 NCCL WARN Cuda failure 'an illegal memory access was encountered'",
    ]
    if root in lines:
        lines[root] = [(t + index * 0.001, text) for index, text in enumerate(root_lines)]
    timeout_at = t + 1800.02
    for rank in ranks:
        if rank == root:
            continue
        lines[rank].append((timeout_at, (
            f"[rank{rank}]:[E{glog_stamp(timeout_at)} ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum=6463, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
            f"ran for 1800017 milliseconds before timing out.")))
        lines[rank].append((timeout_at + 0.01, (
            f"[rank{rank}]:[E{glog_stamp(timeout_at + 0.01)} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {rank}] "
            f"Exception (either an error or timeout) detected by watchdog at work: 6463, last enqueued NCCL work: 6463, "
            f"last completed NCCL work: 6462.")))
    return lines


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def _open(path: Path, compress: bool):
    return gzip.open(path.with_name(path.name + ".gz"), "wt", compresslevel=1, encoding="utf-8") if compress \
        else open(path, "w", encoding="utf-8")


def write_single(out: Path, size: int, seed: int, compress: bool) -> tuple[list[str], int]:
    """One combined Slurm output (`srun --label`: the task id is the global rank); returns the
    file names and the byte offset (uncompressed) where the cascade starts. The cascade ends the
    file, as it ends a job: after every rank has failed or timed out nobody trains on (a healthy
    rank's progress after it would tell the engine the job outlived the error)."""
    rng = random.Random(seed)
    noise = Noise(rng)
    path = out / "slurm-4242.out"
    written, now, chunk = 0, START, []
    with _open(path, compress) as handle:
        while written < size:
            for _ in range(2000):
                rank = rng.randrange(WORLD)
                now += 1.0 / LINES_PER_SECOND
                chunk.append(f"{rank:4d}: {noise.line(rank, now)}\n")
            block = "".join(chunk)
            chunk.clear()
            handle.write(block)
            written += len(block.encode("utf-8"))
        planted_offset = written
        failure = cascade(now, list(range(WORLD)))
        handle.write("".join(f"{rank:4d}: {text}\n" for moment, rank, text
                             in sorted((m, r, t) for r, items in failure.items() for m, t in items)))
    return [path.name + (".gz" if compress else "")], planted_offset


def write_ranks(out: Path, files: int, size: int, seed: int, compress: bool) -> list[str]:
    """One file per rank (`rank0007.log`), no line prefixes; the cascade at each file's end."""
    names = []
    ranks = list(range(files)) if files > INITIATING_RANK else list(range(files - 1)) + [INITIATING_RANK]
    failure_time = START + size / 130 / 4  # about as long as the per-rank lines take
    failure = cascade(failure_time, ranks)
    for rank in ranks:
        rng = random.Random(seed * 100003 + rank)
        noise = Noise(rng)
        path = out / f"rank{rank:04d}.log"
        lines, written, now = [], 0, START
        step = (failure_time - START) / max(1, size // 130)
        while written < size:
            now += step
            line = noise.line(rank, now) + "\n"
            lines.append(line)
            written += len(line.encode("utf-8"))
        lines.extend(text.replace(f"[rank{rank}]: ", "").replace(f"[rank{rank}]:", "") + "\n" for _, text in failure[rank])
        with _open(path, compress) as handle:
            handle.write("".join(lines))
        names.append(path.name + (".gz" if compress else ""))
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layout", choices=("single", "ranks"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="1M", help="bytes of the file (single) or of each file (ranks): 1G, 1M, 64K")
    parser.add_argument("--files", type=int, default=1024, help="number of rank files (ranks layout)")
    parser.add_argument("--gzip", action="store_true", help="write .gz files")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    size = parse_size(args.size)
    if args.layout == "single":
        names, planted_offset = write_single(args.out, size, args.seed, args.gzip)
        planted_file = names[0]
    else:
        names = write_ranks(args.out, args.files, size, args.seed, args.gzip)
        planted_file = next(name for name in names if name.startswith(f"rank{INITIATING_RANK:04d}"))
        planted_offset = 0
    manifest = {"layout": args.layout, "files": names, "initiating_rank": INITIATING_RANK, "failure_id": FAILURE_ID,
                "planted_text": "CUDA error: an illegal memory access was encountered",
                "planted_file": planted_file, "planted_offset": planted_offset}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
