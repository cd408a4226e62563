"""The secret detectors are data: every detector's examples are masked (only their marked part),
its near-misses come out unchanged, and a broken catalogue is refused with file:line."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from firstfault.mask import load_masker
from firstfault.mask.catalogue import CATALOGUE, Masker, check_catalogue, example_problems, parse_catalogue, split_example

from .conftest import run_cli

MASKER = load_masker()
DETECTORS = MASKER.detectors
PLACEHOLDER = "(?:<[a-z0-9-]{2,40}>)+"


def test_the_shipped_catalogue_is_valid_and_every_example_holds():
    catalogue, problems = check_catalogue()
    assert not problems, "\n".join(map(str, problems))
    assert len(catalogue.detectors) >= 30


@pytest.mark.parametrize("detector", DETECTORS, ids=lambda d: d.spec.id)
def test_examples_are_masked_and_near_misses_kept(detector):
    for example in detector.spec.examples:
        line, outside, secrets = split_example(example)
        assert detector.apply(line) != line, f"{detector.spec.id} does nothing to {line!r}"
        masked = MASKER.mask(line)
        assert re.fullmatch(PLACEHOLDER.join(map(re.escape, outside)), masked, re.DOTALL), (example, masked)
        for secret in secrets:
            assert secret not in masked
    for near_miss in detector.spec.near_misses:
        assert MASKER.mask(near_miss) == near_miss


def test_kb_check_runs_the_secret_catalogue():
    result = run_cli("kb", "check")
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert re.search(r"\b\d{2,} secret detectors, \d+ examples checked", result.stdout.decode())


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = CATALOGUE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "detectors.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def test_an_unbounded_quantifier_is_refused_with_its_line(tmp_path):
    path = _broken(tmp_path, r"npm_[A-Za-z0-9]{36}", r"npm_[A-Za-z0-9]+")
    catalogue, problems = parse_catalogue(path)
    assert catalogue is None
    messages = [str(problem) for problem in problems]
    assert any("npm-token" in message and "unbounded quantifier" in message for message in messages), messages
    assert any(f":{_line_of(path, 'npm_[A-Za-z0-9]+')}:" in message for message in messages), messages


def test_an_example_without_marks_and_an_unknown_key_are_each_reported(tmp_path):
    path = _broken(tmp_path, "//registry.npmjs.org/:_authToken=«npm_", "//registry.npmjs.org/:_authToken=npm_")
    path.write_text(path.read_text().replace("npm_ooyitqKhtrNIS2pXFxF7w7B0IEMDF7QCmXnG»", "npm_ooyitqKhtrNIS2pXFxF7w7B0IEMDF7QCmXnG", 1)
                    .replace("    title: Databricks personal access tokens\n", "    title: Databricks personal access tokens\n    severity: high\n", 1))
    catalogue, problems = parse_catalogue(path)
    messages = [str(problem) for problem in problems]
    assert any("npm-token" in m and "«secret»" in m for m in messages), messages
    assert any("databricks-token" in m and "unknown key" in m and "severity" in m for m in messages), messages


def test_a_near_miss_the_masker_changes_is_a_problem(tmp_path):
    path = _broken(tmp_path, "      - 'npm_config_cache=/tmp/npm-cache'", "      - 'npm_config_cache=/home/alice/npm-cache'")
    catalogue, problems = parse_catalogue(path)
    assert not problems
    found = [str(problem) for problem in example_problems(Masker(catalogue))]
    assert any("npm-token" in message and "near-miss changed" in message for message in found), found


def test_diagnostic_text_is_not_masked():
    """What a diagnosis needs stays: ranks, hosts, error text, versions, sequence numbers, PCI
    bus ids, CUDA addresses, git SHAs and checkpoint hashes."""
    lines = [
        "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
        "gpu-node-07:2231:2231 [3] NCCL INFO NCCL version 2.18.1+cuda12.1",
        "[E1202 10:00:11.000000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4121, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds",
        "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        "CUDA error: misaligned address at 0x7f3a2c00f1e8 (busId 1b000, cudaDev 3)",
        "Loading checkpoint step-12000 sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "git commit 3f2a9c1e0b7d4e5f8a6b2c1d0e9f8a7b6c5d4e3f (HEAD -> main)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB",
        "Token indices sequence length is longer than the specified maximum sequence length (5471 > 4096)",
        "[2026-03-01 10:00:01,000] [INFO] [launch.py:256:main] process 4211 spawned with command: ['/usr/bin/python3', '-u', "
        "'train.py', '--local_rank=5', '--deepspeed_config', 'ds.json', '--max-tokens', '4096']",
        "wandb: 🚀 View run at https://wandb.ai/team/llm/runs/3xk2p9ab",
        "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout at ProcessGroupNCCL.cpp:632",
        "Epoch 3/10 | step 1200/5000 | loss 2.3187 | lr 3.0e-04 | grad_norm 0.9812",
    ]
    for line in lines:
        assert MASKER.mask(line) == line
