"""The "try one" logs: real runs from the labelled corpus, shipped as static files."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Sample:
    id: str
    title: str
    about: str
    files: tuple[tuple[str, str], ...]  # (name the pipeline sees, file in static/)

    def read(self) -> list[tuple[str, bytes]]:
        return [(name, (STATIC_DIR / static).read_bytes()) for name, static in self.files]


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "bad-batch",
        "Four ranks, one bad batch",
        "One log file per rank (real DDP run, gloo): one rank raises on a bad record, the others fail in all_reduce.",
        tuple((f"rank{rank}.log", f"sample-bad-batch-rank{rank}.log") for rank in range(4)),
    ),
    Sample(
        "straggler",
        "Checkpoint upload outlasts the timeout",
        "The combined torchrun --tee console of four ranks (real run): rank 0 is busy, the others time out in a barrier.",
        (("console.log", "sample-straggler-console.log"),),
    ),
    Sample(
        "fsdp-oom",
        "FSDP full state dict runs out of GPU memory",
        "One launcher log of a 4-GPU FSDP fine-tune (rebuilt from a public report): saving the model OOMs.",
        (("train_alpaca_7b.log", "sample-fsdp-oom-train.log"),),
    ),
)


def get(sample_id: str) -> Sample | None:
    return next((sample for sample in SAMPLES if sample.id == sample_id), None)
