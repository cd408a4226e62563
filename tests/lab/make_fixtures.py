"""Regenerate tests/fixtures/real/: real lab runs kept as labelled cases for engine tests without torch.

    .venv/bin/python tests/lab/make_fixtures.py [NAME ...]     # needs torch; one run at a time
        (NAME: a scenario, every case of it, or one case id such as native-abort-spawn-ws2)
    .venv/bin/python tests/lab/make_fixtures.py --known-misses  # only (re)write known_miss: in case.yaml

Each case is `<scenario>-<layout>-ws<N>`; an existing case folder is replaced. A case the engine
knowingly misses gets `known_miss:` (KNOWN_MISSES, why) in its case.yaml; its truth is never changed.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from firstfault.lab.runner import run_scenario
from firstfault.lab.scenarios import get

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real"

# (scenario, layout, world size, rank): different classes and every layout.
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
    # native crashes: one rank dies by a signal, no Python traceback
    ("native-segfault", "tee", 2, 1),
    ("native-segfault", "srun", 6, 4),
    ("native-bus-error", "plain", 3, 2),
    ("native-bus-error", "srun", 2, 1),
    ("native-abort", "logdir", 2, 0),
    ("native-abort", "srun", 3, 1),
    ("native-cxx-terminate", "srun", 4, 3),
    ("native-cxx-terminate", "tee", 2, 1),
    ("native-illegal-instruction", "twonode", 4, 2),
    ("native-illegal-instruction", "plain", 2, 1),
    ("native-fpe", "srun", 2, 1),
    ("native-fpe", "logdir", 3, 2),
    # torch.multiprocessing.spawn: the parent reports which process died, and how
    ("native-abort", "spawn", 2, 1),
    ("native-segfault", "spawn", 3, 2),
    ("exc-zero-division", "spawn", 3, 1),
    ("oom-killer", "tee", 3, 2),
    ("oom-killer", "srun", 2, 1),
    # hangs nobody timed out, ended by the scheduler's time limit
    ("hang-checkpoint-time-limit", "tee", 2, 1),
    ("hang-checkpoint-time-limit", "plain", 4, 3),
    ("hang-checkpoint-time-limit", "srun", 3, 1),
    ("hang-eval-time-limit", "srun", 3, 0),
    ("hang-eval-time-limit", "logdir", 2, 0),
    ("exc-then-time-limit", "logdir", 3, 1),
    ("exc-then-time-limit", "srun", 2, 1),
    ("exc-then-time-limit", "plain", 5, 3),
    # healthy runs stopped from outside
    ("time-limit-healthy", "logdir", 2, 0),
    ("time-limit-healthy", "plain", 3, 0),
    ("preempted-slurm", "srun", 4, 0),
    ("preempted-slurm", "twonode", 2, 0),
    ("sigterm-launcher", "tee", 2, 0),
    ("sigterm-launcher", "logdir", 3, 0),
    # errors the run outlived
    ("healthy-outlived-errors", "srun", 2, 0),
    ("healthy-outlived-errors", "tee", 3, 0),
    # collectives only some ranks call
    ("collective-mismatch-extra-barrier", "plain", 3, 0),
    ("collective-mismatch-extra-barrier", "srun", 2, 0),
    ("collective-mismatch-extra-barrier", "tee", 4, 2),
    ("p2p-deadlock", "twonode", 4, 1),
    ("p2p-deadlock", "tee", 2, 1),
]

# case id -> why the engine misses it today (what `firstfault eval tests/fixtures/real` says); the
# truth in case.yaml stays what the injection makes it.
KNOWN_MISSES: dict[str, str] = {
    'collective-mismatch-extra-barrier-plain-ws3':
        'engine says uneven-batches-hang (rank right): every rank had 8 batches; rank 0 alone called an '
        "extra barrier and was then one collective behind (barrier against the others' all_reduce)",
    'collective-mismatch-extra-barrier-srun-ws2':
        'engine says uneven-batches-hang (rank right): every rank had 8 batches; rank 0 alone called an '
        "extra barrier and was then one collective behind (barrier against the others' all_reduce)",
    'collective-mismatch-extra-barrier-tee-ws4':
        'engine says uneven-batches-hang (rank right): every rank had 8 batches; rank 2 alone called an '
        "extra barrier and was then one collective behind (barrier against the others' all_reduce)",
    'hang-checkpoint-time-limit-plain-ws4':
        'engine says preempted-sigterm (the Slurm time-limit line) with no rank: the time limit only '
        "ended a hang; rank 3 went silent (last line 'saving checkpoint to ...', no 'checkpoint saved') "
        'while the others waited in the epoch-end barrier',
    'hang-checkpoint-time-limit-srun-ws3':
        'engine says preempted-sigterm (the Slurm time-limit line) with no rank: the time limit only '
        "ended a hang; rank 1 went silent (last line 'saving checkpoint to ...', no 'checkpoint saved') "
        'while the others waited in the epoch-end barrier',
    'hang-checkpoint-time-limit-tee-ws2':
        'engine says preempted-sigterm (the Slurm time-limit line) with no rank: the time limit only '
        "ended a hang; rank 1 went silent (last line 'saving checkpoint to ...', no 'checkpoint saved') "
        'while the others waited in the epoch-end barrier',
    'hang-eval-time-limit-srun-ws3':
        'engine says preempted-sigterm (the Slurm time-limit line) with no rank: the time limit only '
        "ended a hang; rank 0 went silent (last line 'evaluating epoch 0 on the held-out set') while the "
        'others waited in the epoch-end barrier',
    'native-abort-logdir-ws2':
        'engine finds no failure (status unknown): the rank died by SIGABRT (exit code -6) with no Python'
        ' traceback',
    'native-bus-error-srun-ws2':
        "engine says native-crash (acceptable, host right) but no rank: srun's 'task N: Bus error' line "
        "and the task's 'N: ' label name it",
    'native-cxx-terminate-srun-ws4':
        "engine finds no failure (status unknown): libstdc++'s 'terminate called after throwing an "
        "instance of' and srun's 'task 3: Aborted' (SIGABRT, no Python traceback) and no host (Slurm's "
        'lines name node vm)',
    'native-cxx-terminate-tee-ws2':
        "engine finds no failure (status unknown): libstdc++'s 'terminate called after throwing an "
        "instance of' and torchrun's exitcode -6 (SIGABRT, no Python traceback)",
    'native-fpe-srun-ws2':
        "engine says native-crash (acceptable, host right) but no rank: srun's 'task N: Floating point "
        "exception' line and the task's 'N: ' label name it",
    'native-segfault-srun-ws6':
        "engine says native-crash (acceptable, host right) but no rank: srun's 'task N: Segmentation "
        "fault' line and the task's 'N: ' label name it",
    'p2p-deadlock-tee-ws2':
        "engine says collective-timeout-straggler on rank 0: ranks 0 and 1 were both in send ('Timed out "
        "waiting ... for send operation'); rank 1 took the wrong order",
    'p2p-deadlock-twonode-ws4':
        'engine says collective-mismatch (right) but names no rank: rank 1 took the other send/recv '
        "order, so it and rank 0 both waited in send ('Timed out waiting ... for send operation') while "
        'ranks 2 and 3 waited in the barrier',
}


def mark_known_miss(case_dir: Path) -> None:
    """Add, replace or drop the case's `known_miss:` line, leaving the rest of case.yaml as written."""
    path = case_dir / "case.yaml"
    lines = [line for line in path.read_text().splitlines() if not line.startswith("known_miss:")]
    reason = KNOWN_MISSES.get(case_dir.name)
    if reason:
        lines.append("known_miss: " + json.dumps(reason))  # a JSON string is a YAML string
    path.write_text("\n".join(lines) + "\n")


def main(args: list[str]) -> int:
    only_known_misses = "--known-misses" in args
    names = [arg for arg in args if not arg.startswith("--")]
    for name, layout, world_size, rank in CASES:
        out_dir = FIXTURES / f"{name}-{layout}-ws{world_size}"
        if names and name not in names and out_dir.name not in names:
            continue
        if not only_known_misses:
            shutil.rmtree(out_dir, ignore_errors=True)
            run = run_scenario(get(name), out_dir=out_dir, layout=layout, world_size=world_size, rank=rank,
                               observer=lambda line: print(line, file=sys.stderr))
            size = sum(path.stat().st_size for path in out_dir.rglob("*") if path.is_file())
            print(f"{out_dir.name}: {size // 1024} KiB, exit codes {run.exit_codes}{' TIMED OUT' if run.timed_out else ''}")
        if (out_dir / "case.yaml").is_file():
            mark_known_miss(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
