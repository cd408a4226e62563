"""Secrets planted on the very line a diagnosis quotes reach no output: terminal, JSON, Markdown
(in process and through the CLI), and the file names and notes around them. The forms are more
than the catalogue's examples: each is written the way a real tool prints it."""
from __future__ import annotations

import json

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_texts
from firstfault.render.contract import render as render_json
from firstfault.render.markdown import render as render_markdown
from firstfault.render.terminal import TerminalReport

from .conftest import REPO, run_cli

KB = load_knowledge_base()
FAULT = "[rank1]: RuntimeError: CUDA error: device-side assert triggered"
# {name, planted: the text planted after the fault, secret: what must not come out}; the web
# tests plant the same set (tests/web/test_planted_secrets_web.py)
PLANTED = [(row["name"], row["planted"], row["secret"])
           for row in json.loads((REPO / "tests" / "fixtures" / "planted_secrets.json").read_text(encoding="utf-8"))]


def _outputs(diagnosis) -> dict[str, str]:
    return {"terminal": TerminalReport(KB).render(diagnosis), "json": render_json(diagnosis),
            "markdown": render_markdown(diagnosis, KB)}


def _leaks(secret: str, text: str) -> bool:
    if secret in text:
        return True
    # a partial leak (a password cut at its first '/', a key minus its last characters)
    window = 10
    return len(secret) >= 16 and any(secret[start:start + window] in text for start in range(len(secret) - window + 1))


@pytest.mark.parametrize("name,planted,secret", PLANTED, ids=[item[0] for item in PLANTED])
def test_a_secret_on_the_quoted_line_reaches_no_output(name, planted, secret):
    line = f"{FAULT} ({planted})"
    diagnosis = diagnose_texts([("rank1.log", line + "\n")], kb=KB)
    assert diagnosis.primary is not None and diagnosis.primary.failure_id == "cuda-device-side-assert"
    quoted = diagnosis.initiating.text
    assert "device-side assert triggered" in quoted and quoted != line  # the line is quoted, masked
    for output_name, text in _outputs(diagnosis).items():
        check = text if name != "home-path" else text.replace("/home/<user>", "")
        if name == "home-path":
            assert "/home/alice" not in text, output_name
        else:
            assert not _leaks(secret, check), f"{name} leaked in {output_name}: {text[:2000]}"


def test_the_planted_set_through_the_cli_all_formats(tmp_path):
    """All forms in one job, one rank file each, read through the command line."""
    for index, (_, planted, _) in enumerate(PLANTED):
        (tmp_path / f"rank{index}.log").write_text(f"[rank{index}]: RuntimeError: CUDA error: device-side assert triggered ({planted})\n")
    for output_format in ("terminal", "json", "markdown"):
        result = run_cli("diagnose", str(tmp_path), "--format", output_format)
        assert result.returncode == 1, result.stderr.decode()
        output = result.stdout.decode() + result.stderr.decode()
        assert "device-side assert" in output
        for name, _, secret in PLANTED:
            if name == "home-path":
                assert "/home/alice" not in output
            else:
                assert not _leaks(secret, output), f"{name} leaked in {output_format}"


def test_the_paths_given_are_masked_too(tmp_path):
    """A log under /home/<name>/ is named without the name, in every format."""
    home = tmp_path / "home" / "carol" / "job"
    home.mkdir(parents=True)
    (home / "rank1.log").write_text(FAULT + "\n")
    for output_format in ("terminal", "json", "markdown"):
        output = run_cli("diagnose", str(home), "--format", output_format).stdout.decode()
        assert "home/<user>/job/rank1.log" in output.replace("&lt;", "<").replace("&gt;", ">")  # Markdown escapes it
        assert "/carol/" not in output


def test_mask_hosts_leaves_no_domain_suffix_unknown_name_or_ipv6(tmp_path):
    folder = tmp_path / "gpu-node-a17"
    folder.mkdir()
    (folder / "rank3.log").write_text(
        "gpu-node-a17:2231:2231 [3] NCCL INFO Bootstrap : Using eth0:10.1.0.7<0>\n"
        "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered "
        "(peer gpu-node-a17.cluster.example.com, then gpu-node-b09:29500 and login-3.hpc.example.org, "
        "via fd12:3456:789a::17 and [fe80::1ff:fe23:4567:890a])\n")
    for output_format in ("json", "terminal", "markdown"):
        masked = run_cli("diagnose", str(tmp_path), "--format", output_format, "--mask-hosts").stdout.decode()
        scrubbed = masked.replace(str(tmp_path), "")
        for leaked in ("gpu-node-a17", "cluster.example.com", "gpu-node-b09", "login-3", "hpc.example.org",
                       "fd12:3456:789a::17", "fe80::1ff:fe23:4567:890a", "10.1.0.7"):
            assert leaked not in scrubbed, (leaked, output_format)
        assert "illegal memory access" in scrubbed and "host-" in scrubbed


def test_json_output_stays_valid_json_with_every_form_masked(tmp_path):
    lines = "".join(f"[rank1]: RuntimeError: CUDA error: device-side assert triggered ({planted})\n" for _, planted, _ in PLANTED)
    (tmp_path / "rank1.log").write_text(lines)
    report = json.loads(run_cli("diagnose", str(tmp_path / "rank1.log"), "--format", "json").stdout)
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"


def test_stack_dump_frames_are_masked(tmp_path):
    """Stack dumps name source paths; the report quotes them without the user name (the dump
    files themselves lie under the user's home here, as they would)."""
    tmp_path = tmp_path / "home" / "alice" / "job"
    tmp_path.mkdir(parents=True)
    for rank in range(4):
        where = "load_batch (/home/alice/proj/data.py:88)" if rank == 2 else "all_reduce (/home/alice/venv/torch/distributed/c10d.py:2501)"
        (tmp_path / f"stacks_rank_{rank}.txt").write_text(
            f'Thread {4000 + rank} (idle): "MainThread"\n    {where}\n    train_step (/home/alice/proj/train.py:41)\n'
            f"    <module> (/home/alice/proj/train.py:90)\n")
        if rank != 2:
            (tmp_path / f"rank{rank}.log").write_text(
                f"[rank{rank}]:[E0301 10:10:05.500000 4001 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=9141, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                "600012 milliseconds before timing out.\n")
    for output_format in ("terminal", "json", "markdown"):
        output = run_cli("diagnose", str(tmp_path), "--format", output_format).stdout.decode()
        assert "load_batch" in output, output[:3000]
        assert "/home/alice" not in output and "alice" not in output
