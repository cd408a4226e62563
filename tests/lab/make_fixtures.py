"""Regenerate tests/fixtures/real/: real lab runs kept as labelled cases for engine tests without torch.

    .venv/bin/python tests/lab/make_fixtures.py [NAME ...]     # needs torch; one run at a time

Each case is `<scenario>-<layout>-ws<N>`; an existing case folder is replaced.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from firstfault.lab.runner import run_scenario
from firstfault.lab.scenarios import get

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real"

# (scenario, layout, world size, rank): different classes and all four layouts.
CASES = [
    ("exc-missing-key", "logdir", 3, 1),
    ("exc-two-ranks", "plain", 4, 1),
    ("sigkill-rank", "tee", 2, 1),
    ("sigterm-handled", "twonode", 4, 1),
    ("collective-mismatch", "tee", 3, 1),
    ("uneven-batches", "plain", 3, 2),
    ("straggler", "twonode", 2, 1),
    ("port-in-use", "tee", 2, 1),
    ("ddp-unused-parameters", "logdir", 2, 1),
    ("autograd-inplace", "plain", 2, 0),
    ("disk-full", "tee", 2, 1),
    ("too-many-open-files", "logdir", 2, 1),
    ("checkpoint-truncated", "plain", 2, 0),
    ("healthy-noisy", "tee", 2, 1),
]


def main(names: list[str]) -> int:
    for name, layout, world_size, rank in CASES:
        if names and name not in names:
            continue
        out_dir = FIXTURES / f"{name}-{layout}-ws{world_size}"
        shutil.rmtree(out_dir, ignore_errors=True)
        run = run_scenario(get(name), out_dir=out_dir, layout=layout, world_size=world_size, rank=rank,
                           observer=lambda line: print(line, file=sys.stderr))
        size = sum(path.stat().st_size for path in out_dir.rglob("*") if path.is_file())
        print(f"{out_dir.name}: {size // 1024} KiB, exit codes {run.exit_codes}{' TIMED OUT' if run.timed_out else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
