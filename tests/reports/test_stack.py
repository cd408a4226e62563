"""The stack the logs show (firstfault.stack) decides which fixes a report shows, the same in the
terminal, Markdown, JSON and the web page."""
from __future__ import annotations

import json
import re

import pytest

from firstfault.pipeline import diagnose_paths, diagnose_texts
from firstfault.stack import select_fixes

from .conftest import FIRST_USER, run_cli

OOM = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity "
       "of 79.15 GiB of which 1.06 GiB is free. Of the allocated memory 70.10 GiB is allocated by PyTorch, and 0.30 GiB "
       "is reserved by PyTorch but unallocated.")

# One line of each stack, in the formats those tools print (see each tool's own output).
STACK_LINES = {
    "torchrun": "W1105 08:00:01.100000 5511 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default",
    "deepspeed": "[2024-11-08 09:00:05,123] [INFO] [launch.py:256:main] process 7001 spawned with command: ['/usr/bin/python3', '-u', 'train.py', '--local_rank=0']",
    "hf-trainer": '  File "/home/u/.venv/lib/python3.11/site-packages/transformers/trainer.py", line 2123, in train',
    "accelerate": '  File "/home/u/.venv/lib/python3.11/site-packages/accelerate/accelerator.py", line 2151, in backward',
    "lightning": "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]",
    "vllm": "(VllmWorker rank=1 pid=788) INFO 03-15 17:24:17 [pynccl.py:69] vLLM is using nccl==2.25.1",
    "ray": "(RayTrainWorker pid=41233, ip=10.0.0.5) Setting up process group for: env:// [rank=1, world_size=4]",
    "kubernetes": "      Reason:       OOMKilled",
    "slurm": "slurmstepd: error: *** STEP 4182731.0 ON node017 CANCELLED AT 2024-11-05T14:00:03 DUE TO TIME LIMIT ***",
}


@pytest.mark.parametrize("stack_id", sorted(STACK_LINES))
def test_each_stack_is_recognised_from_its_own_line(stack_id):
    diagnosis = diagnose_texts([("console.log", STACK_LINES[stack_id] + "\n" + OOM + "\n")])
    assert [item.id for item in diagnosis.stack] == [stack_id]
    assert diagnosis.stack[0].line == 1


def test_a_plain_line_shows_no_stack():
    assert diagnose_texts([("console.log", OOM + "\n")]).stack == ()


def test_paths_show_a_stack(tmp_path):
    (tmp_path / "slurm-4182731.out").write_text(OOM + "\n")
    logs = tmp_path / "run" / "attempt_0" / "1"
    logs.mkdir(parents=True)
    (logs / "stderr.log").write_text(OOM + "\n")
    assert {item.id for item in diagnose_paths([str(tmp_path)]).stack} == {"slurm", "torchrun"}


def test_fixes_for_the_detected_stack_come_first_and_others_are_named():
    fixes = [{"stack": "general"}, {"stack": "hf-trainer"}, {"stack": "deepspeed"}, {"stack": "pytorch"},
             {"stack": "kubernetes"}, {"stack": "vllm"}]
    shown, left_out = select_fixes(fixes, ["torchrun"])
    assert [item["stack"] for item in shown] == ["general", "pytorch"]
    assert left_out == ["hf-trainer", "deepspeed", "kubernetes", "vllm"]
    shown, _ = select_fixes(fixes, ["deepspeed", "kubernetes"])
    assert [item["stack"] for item in shown] == ["deepspeed", "kubernetes", "general", "pytorch"]
    shown, left_out = select_fixes([{"stack": "vllm"}], ["torchrun"])  # nothing fits: all, rather than none
    assert shown == [{"stack": "vllm"}] and left_out == []


def _terminal_fix_stacks(text: str) -> list[str]:
    fix = text.split("\nFix\n", 1)[1].split("\nVerification\n", 1)[0]
    return re.findall(r"^  \d+\. .* \[([\w-]+)\]$", fix, re.M)


def test_a_plain_torchrun_oom_gets_no_other_stacks_fixes_in_any_report():
    log = str(FIRST_USER / "oom4" / "console.log")
    terminal = run_cli("diagnose", log).stdout.decode()
    stacks = _terminal_fix_stacks(terminal)
    assert stacks and set(stacks) <= {"general", "pytorch", "nccl"}, stacks
    assert "Stack in the logs: torchrun." in terminal
    markdown = run_cli("diagnose", log, "--format", "markdown").stdout.decode()
    assert re.findall(r"^#### \d+\. .* \(([\w-]+)\)$", markdown, re.M) == stacks
    contract = json.loads(run_cli("diagnose", log, "--format", "json").stdout)
    assert [item["id"] for item in contract["stack"]] == ["torchrun"]
    assert contract["stack"][0]["source"].endswith("console.log")


def test_a_deepspeed_job_gets_the_deepspeed_fix_first():
    terminal = run_cli("diagnose", str(FIRST_USER / "ds")).stdout.decode()
    assert "Stack in the logs: DeepSpeed." in terminal
    stacks = _terminal_fix_stacks(terminal)
    assert stacks[0] == "deepspeed" and not {"kubernetes", "slurm", "ray", "hf-trainer"} & set(stacks)


def test_the_web_page_shows_the_same_fixes_as_the_terminal():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from firstfault.web.app import create_app

    log = FIRST_USER / "oom4" / "console.log"
    terminal = run_cli("diagnose", str(log)).stdout.decode()
    titles = re.findall(r"^  \d+\. (.*) \[[\w-]+\]$", terminal.split("\nFix\n", 1)[1].split("\nVerification\n")[0], re.M)
    client = TestClient(create_app(history=False))
    page = client.post("/diagnose", files={"files": ("console.log", log.read_bytes())}, headers={"accept": "text/html"}).text
    fix_card = page.split('id="fix"', 1)[1].split("</section>", 1)[0]
    shown = re.findall(r"<h4>(.*?) <span class=\"pill\">", fix_card)
    assert shown == titles
    assert "Stack in the logs: torchrun." in fix_card
