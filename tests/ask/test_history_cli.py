"""`firstfault diagnose --save`, `firstfault history` and `firstfault ask` as a user runs them:
one entry per distinct diagnosis, seen N times; "seen before" in every output format; each
listing filter; a question answered from the history; `forget` leaves no trace in the file."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "nccl-timeouts-after-assert"


def firstfault(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firstfault", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_save_history_ask_forget(tmp_path):
    db = tmp_path / "history.sqlite3"
    first = firstfault("diagnose", EXAMPLE, "--save", "--db", db)
    assert first.returncode == 1 and "History: the first time this failure is seen (saved as #1" in first.stdout
    again = firstfault("diagnose", EXAMPLE, "--save", "--db", db, "--format", "json")
    seen = json.loads(again.stdout)["history"]
    assert seen["id"] == 1 and seen["seen_before"]["times"] == 1
    assert seen["seen_before"]["sentence"] == "2nd time since " + seen["seen_before"]["sentence"].split("since ")[1]
    markdown = firstfault("diagnose", EXAMPLE, "--save", "--db", db, "--format", "markdown")
    assert "**History:** 3rd time since" in markdown.stdout and "on gpu-node-03" in markdown.stdout

    # the same failure in other logs (another job): a second entry with the same fingerprint
    other = tmp_path / "job2"
    shutil.copytree(EXAMPLE, other)
    with open(other / "console.log", "a") as log:
        log.write("2026-03-01 10:13:00,000 INFO launcher: job 2 cleanup done\n")
    moved = firstfault("diagnose", other, "--save", "--db", db)
    assert "4th time since" in moved.stdout and "(saved as #2" in moved.stdout

    listing = json.loads(firstfault("history", "--db", db, "--format", "json").stdout)
    assert [(entry["id"], entry["seen"]) for entry in listing] == [(2, 1), (1, 3)]
    assert all(entry["origin"] == "cli" and entry["hosts"] == ["gpu-node-03"] for entry in listing)
    assert "#1" in firstfault("history", "--db", db, "--host", "gpu-node-03").stdout
    assert "No diagnoses" in firstfault("history", "--db", db, "--host", "gpu-x99").stdout
    assert "#2" in firstfault("history", "--db", db, "--class", "cuda-device-side-assert").stdout
    assert "No diagnoses" in firstfault("history", "--db", db, "--class", "cuda-oom").stdout
    assert "No diagnoses" in firstfault("history", "--db", db, "--since", "2999-01-01").stdout
    assert "#1" in firstfault("history", "search", "indexSelect", "--db", db).stdout
    bad = firstfault("history", "--db", db, "--since", "yesterday")
    assert bad.returncode == 2 and "not a date" in bad.stderr and "Traceback" not in bad.stderr
    shown = firstfault("history", "show", "1", "--db", db)
    assert "seen 3 time(s)" in shown.stdout and "earliest-strong-root" in shown.stdout
    superscript = firstfault("history", "show", "\u00b9", "--db", db)  # isdigit() takes it, int() does not
    assert superscript.returncode == 2 and "is not an entry" in superscript.stderr and "Traceback" not in superscript.stderr

    asked = firstfault("ask", "1", "why not rank 0?", "--db", db)
    assert asked.returncode == 0 and "Rank 0's errors are collateral" in asked.stdout
    assert "console.log:29" in asked.stdout and "console.log:42" in asked.stdout  # the first fault, rank 0's own line
    last = json.loads(firstfault("ask", "has this happened before", "--db", db, "--format", "json").stdout)
    assert last["intent"] == "seen-before" and last["answer"][0].startswith("Yes: ")
    unknown = firstfault("ask", "last", "what's the weather", "--db", db)
    assert "It answers:" in unknown.stdout and "why not rank N" in unknown.stdout
    from_logs = firstfault("ask", EXAMPLE, "what did rank 3 do last")
    assert "Rank 3 (host gpu-node-03) last reached step 40" in from_logs.stdout

    marker = "indexSelectLargeIndex"
    gone = firstfault("history", "forget", "1", "--db", db)
    assert gone.returncode == 0 and "forgot #1" in gone.stderr
    gone = firstfault("history", "forget", "2", "--db", db)
    assert firstfault("history", "show", "1", "--db", db).returncode == 2
    assert marker.encode() not in db.read_bytes()  # rewritten: no page keeps the old document
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM diagnosis").fetchone()[0] == 0


def test_without_history_nothing_is_written_and_ask_says_how(tmp_path):
    plain = firstfault("diagnose", EXAMPLE, cwd=tmp_path)
    assert "History:" not in plain.stdout
    empty = firstfault("ask", "why", "--db", tmp_path / "none.sqlite3")
    assert empty.returncode == 2 and "no entry last" in empty.stderr and "Traceback" not in empty.stderr


def test_why_a_rank_is_ask_why_rank():
    collateral = firstfault("why", "0", EXAMPLE)
    assert collateral.returncode == 0 and "Rank 0's errors are collateral" in collateral.stdout
    first = firstfault("why", "2", EXAMPLE)
    assert "It is rank 2: the first fault is there." in first.stdout
    host = firstfault("why", "gpu-node-99", EXAMPLE)
    assert "No rank the logs show ran on gpu-node-99 (hosts seen: gpu-node-03)" in host.stdout


def test_what_changed_since_the_jobs_last_healthy_run(tmp_path):
    """The same job folder, healthy once, then failing with other ranks and without the trainer:
    `ask` lists what the two diagnoses record differently."""
    job = tmp_path / "runs" / "exp1"
    job.mkdir(parents=True)
    steps = "".join(f"[rank{rank}]: 2026-03-01 10:00:{step:02d},000 INFO step {step} loss 2.{step:02d}\n"
                    for step in range(30) for rank in range(2))
    (job / "train.log").write_text("torchrun --nproc_per_node 2 train.py\n" + steps + "[rank0]: Training completed. Do not forget to share your model\n"
                                   "{'train_runtime': 30.1, 'train_samples_per_second': 10.0, 'epoch': 1.0}\n")
    db = tmp_path / "h.sqlite3"
    healthy = firstfault("diagnose", job, "--save", "--db", db, "--format", "json")
    assert json.loads(healthy.stdout)["status"] == "healthy"
    (job / "train.log").write_text("torchrun --nproc_per_node 4 train.py\n" + steps.replace("[rank1]", "[rank3]")
                                   + "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    failed = firstfault("diagnose", job, "--save", "--db", db)
    assert failed.returncode == 1
    changed = firstfault("ask", "last", "what changed since the last healthy run?", "--db", db)
    assert "ranks: 0-1 in the healthy run, 0,3 now." in changed.stdout
    assert "stack: HF Trainer, torchrun in the healthy run, torchrun now." in changed.stdout
    assert "not kept in a diagnosis" in changed.stdout
    other = firstfault("ask", "1", "what changed since the last healthy run?", "--db", db)
    assert "No healthy run of this job" in other.stdout  # the healthy run itself has none before it
