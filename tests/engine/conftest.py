"""Shared logs for the engine tests, in the real message formats PyTorch, torchrun and NCCL print."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# A 3-rank job: rank 1 hits a device-side assert; ranks 0 and 2 time out in the next all-reduce.
RANK_LINES = {
    0: [
        "2026-03-01 10:00:00,100 INFO train: step 10 loss 2.31",
        "2026-03-01 10:00:05,100 INFO train: step 20 loss 2.10",
        "[E0301 10:10:05.500000 4001 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
    ],
    1: [
        "2026-03-01 10:00:00,101 INFO train: step 10 loss 2.30",
        "2026-03-01 10:00:05,102 INFO train: step 20 loss 2.12",
        "../aten/src/ATen/native/cuda/Indexing.cu:1237: indexSelectSmallIndex: block: [18,0,0], thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
        "2026-03-01 10:00:06,300 ERROR train: step 21 failed",
        "Traceback (most recent call last):",
        '  File "train.py", line 88, in <module>',
        "RuntimeError: CUDA error: device-side assert triggered",
    ],
    2: [
        "2026-03-01 10:00:00,102 INFO train: step 10 loss 2.33",
        "2026-03-01 10:00:05,104 INFO train: step 20 loss 2.08",
        "[E0301 10:10:05.600000 4003 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
    ],
}


def combined_console(rank_lines=RANK_LINES) -> str:
    """One console with torchrun's `[rankN]:` prefixes, interleaved by step like real output."""
    lines = []
    longest = max(len(v) for v in rank_lines.values())
    for index in range(longest):
        for rank, own in rank_lines.items():
            if index < len(own):
                lines.append(f"[rank{rank}]:{own[index]}")
    return "\n".join(lines) + "\n"


def per_rank_files(folder: Path, rank_lines=RANK_LINES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank, own in rank_lines.items():
        (folder / f"rank{rank}.log").write_text("\n".join(own) + "\n")
    return folder


def run_cli(*args: str, stdin: bytes | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """The installed CLI, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "firstfault.cli", *args], input=stdin, capture_output=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture
def assert_log_dir(tmp_path: Path) -> Path:
    return per_rank_files(tmp_path / "logs")
