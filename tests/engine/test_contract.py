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


def test_terminal_and_markdown_lead_with_the_answer(assert_log_dir):
    terminal = run_cli("diagnose", str(assert_log_dir)).stdout.decode()
    markdown = run_cli("diagnose", str(assert_log_dir), "--format", "markdown").stdout.decode()
    assert "cuda-device-side-assert" in terminal.splitlines()[0]
    assert "started on rank 1" in terminal
    assert "Fix" in terminal and "Verification" in terminal
    assert markdown.startswith("## firstfault diagnosis")
    assert "`cuda-device-side-assert`" in markdown
