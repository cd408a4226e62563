"""`diagnose --format json` follows shared/CONTRACT.md; exit codes 0/1/2."""
from __future__ import annotations

import json

from .conftest import run_cli


def test_failure_report_fields(assert_log_dir):
    result = run_cli("diagnose", str(assert_log_dir), "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["schema"] == "firstfault.diagnosis/1"
    assert report["status"] == "failure"
    primary = report["primary"]
    assert isinstance(primary["failure_id"], str)
    assert 0 <= primary["confidence"] <= 1
    initiating = primary["initiating"]
    assert set(initiating) >= {"rank", "host", "source", "line", "time"}
    assert initiating["rank"] == 1 and initiating["line"] >= 1
    assert initiating["time"].startswith("2026-03-01T10:00:0")
    assert all(set(e) >= {"source", "line", "rank", "text"} for e in primary["evidence"])
    assert report["candidates"][0]["failure_id"] == primary["failure_id"]
    assert all(set(c) >= {"failure_id", "confidence"} for c in report["candidates"])
    for group in report["collateral"]:
        assert set(group) >= {"failure_id", "ranks", "count", "first"}
    assert set(report["inputs"]) >= {"files", "lines", "bytes", "ranks", "hosts"}
    assert report["inputs"]["ranks"] == [0, 1, 2]


def test_healthy_exit_zero(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("2026-03-01 10:00:00,000 INFO step 1 loss 2.0\n"
                   "/usr/lib/python3/site-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated.\n"
                   "2026-03-01 10:00:01,000 INFO training finished\n")
    result = run_cli("diagnose", str(log), "--format", "json")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["status"] == "healthy" and report["primary"] is None


def test_unknown_failure_lists_error_lines(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step 1\nthe trainer exited with exit code 3\n")
    result = run_cli("diagnose", str(log), "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["status"] == "unknown" and report["primary"] is None
    assert "exit code 3" in report["error_lines"][0]["text"]
    assert report["initiating"] is None  # no line names a rank


def test_unknown_failure_still_names_the_rank_that_failed_first(tmp_path):
    """No entry explains `trainlib.Abort`, but torchrun reported local rank 3 failing: say so."""
    (tmp_path / "console.log").write_text(
        "[default0]:step 5 loss 1.0\n[default3]:step 5 loss 1.0\n[default3]:Traceback (most recent call last):\n"
        '[default3]:  File "train.py", line 9, in <module>\n[default3]:    run()\n'
        "[default3]:trainlib.Abort: shard 17 checksum\n"
        "E1203 10:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
        "local_rank: 3 (pid: 4242) of binary: /usr/bin/python3\n")
    report = json.loads(run_cli("diagnose", str(tmp_path), "--format", "json").stdout)
    assert report["status"] == "unknown" and report["primary"] is None
    assert (report["initiating"]["rank"], report["initiating"]["line"]) == (3, 7)
    terminal = run_cli("diagnose", str(tmp_path), "--color", "never").stdout
    assert terminal.splitlines()[1].strip().startswith(b"started on rank 3")


def test_a_failure_every_rank_raised_alike_starts_on_every_rank_in_every_report(tmp_path):
    """No rank started it (every rank refused the nccl backend): the JSON names none, and the
    terminal and Markdown reports say every rank alike rather than a rank they do not know."""
    (tmp_path / "console.log").write_text("".join(
        f"[rank{rank}]: RuntimeError: Distributed package doesn't have NCCL built in\n" for rank in range(3)))
    report = json.loads(run_cli("diagnose", str(tmp_path), "--format", "json").stdout)
    assert report["primary"]["failure_id"] == "cuda-unavailable" and report["primary"]["initiating"]["rank"] is None
    terminal = run_cli("diagnose", str(tmp_path), "--color", "never").stdout.decode()
    markdown = run_cli("diagnose", str(tmp_path), "--format", "markdown").stdout.decode()
    assert terminal.splitlines()[1].strip().startswith("started on every rank alike")
    assert "started on every rank alike" in markdown and "rank unknown" not in terminal + markdown


def test_terminal_and_markdown_lead_with_the_answer(assert_log_dir):
    terminal = run_cli("diagnose", str(assert_log_dir)).stdout.decode()
    markdown = run_cli("diagnose", str(assert_log_dir), "--format", "markdown").stdout.decode()
    assert "cuda-device-side-assert" in terminal.splitlines()[0]
    assert "started on rank 1" in terminal
    assert "Fix" in terminal and "Verification" in terminal
    assert markdown.startswith("## firstfault diagnosis")
    assert "`cuda-device-side-assert`" in markdown
