"""A value the log did not give is left out of the sentence, never shown as `<name>` or `{name}`."""
from __future__ import annotations

import re

import pytest

from firstfault.placeholders import PLACEHOLDER, fill_placeholders
from firstfault.render.entry import render_entry
from firstfault.render.entry_sections import FIX, VERIFY, build_sections

from .conftest import FIRST_USER, run_cli

SENTINELS = re.compile(r"(?<![{$])\{[A-Za-z_][A-Za-z0-9_]*\}(?!\})|[\x00\x01]")
BROKEN = re.compile(r"  |\s[,;:.)]|\(\s|\(\)|[,;:]$")
DANGLING = re.compile(r"\b(?:a|an|the|of|on|to|in|at|for|with|and|or|vs)$")


def _messages(kb) -> list[str]:
    return sorted({s.message for s in kb.signatures if s.message and PLACEHOLDER.search(s.message)})


def _names(kb) -> set[str]:
    """Every placeholder name the knowledge base uses: `<name>` of one of them is a leak."""
    texts = [s.message for s in kb.signatures if s.message]
    return {name for text in texts for name in PLACEHOLDER.findall(text)} | {"rank", "host"}


def leaks(text: str, names: set[str]) -> list[str]:
    found = SENTINELS.findall(text or "")
    return found + [f"<{name}>" for name in names if f"<{name}>" in (text or "")]


def test_every_message_template_reads_without_its_values(kb):
    """Each template with no value known, and with each single value missing: no placeholder,
    no doubled space, no space before punctuation, no empty parentheses, no dangling word."""
    problems = []
    for template in _messages(kb):
        names = list(dict.fromkeys(PLACEHOLDER.findall(template)))
        cases = [{}] + [{name: f"v{index}" for index, name in enumerate(names) if name != missing} for missing in names]
        for values in cases:
            text = fill_placeholders(template, values)
            dangling = DANGLING.search(text) and not DANGLING.search(template)
            if leaks(text, _names(kb)) or BROKEN.search(text) or dangling or not text.strip():
                problems.append(f"{template!r} with {sorted(values)} -> {text!r}")
    assert not problems, "\n".join(problems)


def test_known_values_are_filled_as_before(kb):
    for template in _messages(kb):
        names = PLACEHOLDER.findall(template)
        values = {name: f"V{index}" for index, name in enumerate(names)}
        assert fill_placeholders(template, values) == PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


@pytest.mark.parametrize("template,values,expected", [
    ("rank {rank} raised {exc_type}", {"exc_type": "KeyError"}, "a rank raised KeyError"),
    ("torchrun on {host} is stopping worker {pid} ({signal}) after another worker failed", {},
     "torchrun is stopping a worker after another worker failed"),
    ("rank {rank}: tensors on different devices ({dev_a} {dev_b}{arg_dev} {other_dev})",
     {"rank": 0, "dev_a": "cuda:0", "dev_b": "cpu"}, "rank 0: tensors on different devices (cuda:0 cpu)"),
    ("rank {rank} timed out in {op} SeqNum={seq} after {timeout_ms} ms waiting for another rank",
     {"rank": 3, "op": "ALLREDUCE", "timeout_ms": 600000}, "rank 3 timed out in ALLREDUCE after 600000 ms waiting for another rank"),
    ("{host}: GPU {pci} fell off the bus", {"pci": "0000:3b:00.0"}, "GPU 0000:3b:00.0 fell off the bus"),
    ("local rank {local_rank} (pid {pid}) was SIGKILLed", {"local_rank": 1}, "local rank 1 was SIGKILLed"),
])
def test_left_out_values(template, values, expected):
    assert fill_placeholders(template, values) == expected


def test_commands_get_a_shell_variable_and_code_is_never_filled():
    assert fill_placeholders("ssh {host} nvidia-smi -q", {}, shell=True) == "ssh $HOST nvidia-smi -q"
    assert fill_placeholders("ssh {host} nvidia-smi -q", {"host": "node-3"}, shell=True) == "ssh node-3 nvidia-smi -q"


def test_every_fix_and_verification_text_of_every_entry_without_values(kb):
    """What a diagnosis shows of each entry when the log gave no value at all (every stack, so
    every fix is shown): prose and commands carry no placeholder; code is shown as written."""
    names = _names(kb)
    stacks = ["torchrun", "deepspeed", "hf-trainer", "accelerate", "megatron", "vllm", "ray", "kubernetes", "slurm", "docker"]
    for entry in kb.entries:
        for stack in (None, stacks):
            for section in build_sections(entry, {}, stack=stack):
                if section.heading not in (FIX, VERIFY):
                    continue
                for block in section.blocks:
                    texts = [getattr(block, name, "") for name in ("text", "title", "why", "command")]
                    texts += list(getattr(block, "steps", ()))
                    texts += [code.text for code in getattr(block, "blocks", ()) if code.language == "bash"]
                    for text in texts:
                        assert not leaks(text, names), f"{entry.id}: {text!r}"
        for item in entry.get("fix") or ():
            for key in ("code", "config"):
                if item.get(key):  # verbatim: an f-string's {step} is code, not a placeholder
                    assert str(item[key]).rstrip("\n") in render_entry(entry, "markdown")


def test_reports_never_show_placeholders_for_a_line_without_rank_or_host(tmp_path):
    """A bare traceback (no rank, no host on any line) in terminal, Markdown and JSON."""
    log = tmp_path / "train.log"
    log.write_text('Traceback (most recent call last):\n  File "train.py", line 8, in main\n'
                   '    x = batch["labels"]\nKeyError: \'labels\'\n')
    for fmt in ("terminal", "markdown", "json"):
        result = run_cli("diagnose", str(log), "--format", fmt)
        assert result.returncode == 1
        out = result.stdout.decode()
        assert "<rank>" not in out and "<host>" not in out and "{rank}" not in out, out
    assert "rank 0 raised KeyError" in run_cli("diagnose", str(log)).stdout.decode()


def test_the_first_user_leaks_are_gone():
    terminal = run_cli("diagnose", str(FIRST_USER / "single-gpu3.txt")).stdout.decode()
    assert "<arg_dev>" not in terminal and "(cuda:0 cpu)" in terminal
    oom = run_cli("diagnose", str(FIRST_USER / "oom4" / "console.log")).stdout.decode()
    assert "<host>" not in oom and "<" not in "".join(line for line in oom.splitlines() if "names rank" in line)
