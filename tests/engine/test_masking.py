"""No planted secret survives into any output; hosts are masked only when asked."""
from __future__ import annotations

import pytest

from firstfault.mask import mask_secrets

from .conftest import run_cli

SECRETS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYAA",
    "wandb": "0123456789abcdef0123456789abcdef01234567",
    "bearer": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9abcdef",
    "password": "hunter2-Sup3rSecret",
    "email": "alice.smith@example.com",
    "user": "alice",
}


def planted_log() -> str:
    return "\n".join([
        f"2026-03-01 10:00:00,000 INFO env HF_TOKEN={SECRETS['hf']} GITHUB_TOKEN={SECRETS['github']}",
        f"2026-03-01 10:00:00,001 INFO aws_access_key_id={SECRETS['aws']} aws_secret_access_key={SECRETS['aws_secret']}",
        f"2026-03-01 10:00:00,002 INFO wandb: WANDB_API_KEY={SECRETS['wandb']}",
        f"2026-03-01 10:00:00,003 INFO curl -H 'Authorization: Bearer {SECRETS['bearer']}' --password={SECRETS['password']}",
        f"2026-03-01 10:00:00,004 INFO contact {SECRETS['email']}",
        # the failure line itself carries secrets: it is what the report prints
        f'[rank1]: FileNotFoundError: /home/{SECRETS["user"]}/data token {SECRETS["hf"]} mail {SECRETS["email"]} password={SECRETS["password"]}',
        f'[rank1]:   File "/home/{SECRETS["user"]}/train.py", line 3, in <module>',
        "[rank1]: RuntimeError: CUDA error: device-side assert triggered",
    ]) + "\n"


@pytest.mark.parametrize("output_format", ["terminal", "json", "markdown"])
def test_no_planted_secret_reaches_any_output(tmp_path, output_format):
    log = tmp_path / "console.log"
    log.write_text(planted_log())
    result = run_cli("diagnose", str(log), "--format", output_format)
    assert result.returncode == 1, result.stderr
    output = result.stdout.decode() + result.stderr.decode()
    assert "device-side assert" in output or "cuda-device-side-assert" in output
    for name, secret in SECRETS.items():
        if name == "user":
            assert f"/home/{secret}/" not in output
        else:
            assert secret not in output, f"{name} leaked in {output_format}"


@pytest.mark.parametrize("text", [
    "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "tokenizer_config.json loaded, max_tokens=4096",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
])
def test_ordinary_lines_are_left_alone(text):
    assert mask_secrets(text) == text


def test_hosts_are_pseudonymised_only_with_mask_hosts(tmp_path):
    log = tmp_path / "dgx-a100-18" / "dmesg.txt"
    log.parent.mkdir()
    log.write_text("Dec  2 16:46:31 dgx-a100-18 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    plain = run_cli("diagnose", str(log.parent), "--format", "json").stdout.decode()
    masked = run_cli("diagnose", str(log.parent), "--format", "json", "--mask-hosts").stdout.decode()
    assert '"host": "dgx-a100-18"' in plain
    assert "dgx-a100-18" not in masked.replace(str(tmp_path), "")
    assert '"host": "host-' in masked


@pytest.mark.parametrize("fmt", ["json", "markdown", "terminal"])
def test_mask_hosts_leaves_no_host_in_any_output(tmp_path, fmt):
    """Hosts named in folder names, NCCL lines and launcher prefixes of a two-node job: with
    --mask-hosts none of them appears anywhere in a report (files, evidence, notes, candidates)."""
    hosts = ("gpu-node-a17", "gpu-node-b03")
    for node, host in enumerate(hosts):
        folder = tmp_path / host
        folder.mkdir()
        for local in range(2):
            rank = node * 2 + local
            lines = [f"{host}:{4100 + local}:{4100 + local} [{local}] NCCL INFO Bootstrap : Using eth0:10.1.{node}.7<0>"]
            if rank == 3:
                lines += [f"[rank{rank}]: RuntimeError: CUDA error: an illegal memory access was encountered"]
            else:
                lines += [f"[rank{rank}]:[E1202 10:00:{10 + rank}.000000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
                          f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
                          f"NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."]
            (folder / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    plain = run_cli("diagnose", str(tmp_path), "--format", fmt).stdout.decode()
    masked = run_cli("diagnose", str(tmp_path), "--format", fmt, "--mask-hosts").stdout.decode()
    assert any(host in plain for host in hosts)
    scrubbed = masked.replace(str(tmp_path), "")
    for leaked in hosts + ("10.1.0.7", "10.1.1.7"):
        assert leaked not in scrubbed, leaked
    assert "host-" in scrubbed


def test_a_secret_on_the_last_line_a_hang_verdict_quotes_is_masked():
    """A straggler's last line reaches the report through the rank's tail, not through a
    signature hit: it is masked all the same."""
    import json

    from firstfault.pipeline import diagnose_texts
    from firstfault.render.contract import render

    token = "hf_" + "Zq8" * 12
    lines = []
    for rank in range(3):
        lines.append(f"{rank}: [2024-11-05 10:00:0{rank}] INFO step 100 loss 2.1")
        lines.append(f"{rank}: [2024-11-05 10:00:1{rank}] INFO saving checkpoint HF_TOKEN={token}")
        if rank != 2:
            lines.append(f"{rank}: [2024-11-05 10:00:2{rank}] INFO checkpoint written")
    lines.append("slurmstepd: error: *** JOB 7 ON node017 CANCELLED AT 2024-11-05T14:00:03 DUE TO TIME LIMIT ***")
    document = json.loads(render(diagnose_texts([("slurm-7.out", "\n".join(lines) + "\n")])))
    assert document["primary"]["initiating"]["rank"] == 2
    assert token not in json.dumps(document)


def test_a_value_longer_than_the_bound_is_masked_whole():
    """Found by the fuzz test: a 3,000-character password kept its last 952 characters (the
    value pattern stops at 2,048), and masking the result again changed it."""
    for value in ("7" * 3000, "'" + "7" * 3000 + "'", '"' + "7" * 2100 + '"'):
        masked = mask_secrets(f"login refused: password={value} for user bob")
        assert "7" not in masked and masked.endswith(" for user bob"), masked[:80]
        assert mask_secrets(masked) == masked
    unclosed = mask_secrets("login refused: password='" + "7" * 3000 + " for user bob")  # to the end of the line
    assert unclosed == "login refused: password='<masked>" and mask_secrets(unclosed) == unclosed
