"""Bad input gets a clear one-line message, the rest is still read, and nothing is lost silently."""
from __future__ import annotations

import gzip
import json
import os

from .conftest import run_cli

FAULT = "[rank0]: RuntimeError: CUDA error: device-side assert triggered\n"


def _diagnose_json(*paths):
    result = run_cli("diagnose", *map(str, paths), "--format", "json")
    assert "Traceback" not in result.stderr.decode(), result.stderr.decode()
    return result, (json.loads(result.stdout) if result.stdout else None)


def _skipped(report):
    return {os.path.basename(item["source"]): item["reason"] for item in report["inputs"]["skipped"]}


def test_each_bad_kind_is_skipped_with_a_reason_and_the_rest_is_read(tmp_path):
    (tmp_path / "good.log").write_text(FAULT)
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 40)
    noise = "".join(f"step {i} loss {i * 7919 % 1000 / 997:.6f} id {i * 104729:x}\n" for i in range(60000))
    (tmp_path / "truncated.log.gz").write_bytes(gzip.compress((FAULT + noise).encode())[:-4000])
    result, report = _diagnose_json(tmp_path, tmp_path / "missing.log")
    assert result.returncode == 1
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"
    assert sum(1 for e in report["primary"]["evidence"] if e["source"].endswith(".gz")) == 1  # read up to the damage
    skipped = _skipped(report)
    assert "empty" in skipped["empty.log"]
    assert "binary" in skipped["binary.bin"]
    assert "no such file" in skipped["missing.log"]
    assert "ends early" in skipped["truncated.log.gz"]
    stderr = result.stderr.decode().splitlines()
    assert any("skipped" in line and "missing.log" in line for line in stderr)


def test_invalid_utf8_is_read_and_reported_as_read_not_skipped(tmp_path):
    (tmp_path / "latin1.log").write_bytes("caf\xe9 step 1\n".encode("latin-1") + FAULT.encode())
    result, report = _diagnose_json(tmp_path / "latin1.log")
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"
    assert "latin1.log" not in _skipped(report)
    notes = {os.path.basename(item["source"]): item["note"] for item in report["inputs"]["read_notes"]}
    assert "UTF-8" in notes["latin1.log"] and notes["latin1.log"].startswith("read")
    stderr = result.stderr.decode()
    assert "skipped" not in stderr and "note:" in stderr and "latin1.log" in stderr


def test_megabyte_lines_are_cut_not_fatal(tmp_path):
    log = tmp_path / "huge.log"
    log.write_text("x" * (3 * 1024 * 1024) + "\n" + "y" * (20 * 1024 * 1024) + "\n" + FAULT)
    result, report = _diagnose_json(log)
    assert report["primary"]["initiating"]["line"] == 3
    assert "64 KiB" in _skipped(report)["huge.log"]


def test_no_readable_input_is_a_tool_error_with_a_hint(tmp_path):
    (tmp_path / "empty.log").write_text("")
    result = run_cli("diagnose", str(tmp_path / "empty.log"), str(tmp_path / "nope.log"))
    assert result.returncode == 2
    stderr = result.stderr.decode()
    assert stderr.startswith("firstfault: error: no readable input")
    assert "hint:" in stderr
    assert "Traceback" not in stderr


def test_glob_matching_nothing_is_reported(tmp_path):
    (tmp_path / "a.log").write_text(FAULT)
    result, report = _diagnose_json(tmp_path / "a.log", tmp_path / "rank*.log")
    assert "no file matches" in _skipped(report)["rank*.log"]


def test_fifo_is_skipped_not_blocking(tmp_path):
    (tmp_path / "good.log").write_text(FAULT)
    os.mkfifo(tmp_path / "pipe")
    result, report = _diagnose_json(tmp_path / "good.log", tmp_path / "pipe")
    assert "not a regular file" in _skipped(report)["pipe"]


def test_unknown_option_is_usage_error():
    assert run_cli("diagnose").returncode == 2


def test_stray_nuls_and_nul_holes_in_a_text_log_are_read_and_binary_bytes_are_not(tmp_path):
    """torch's DataLoader writes a NUL after its bus-error line (a real torch 2.8 run,
    tests/fixtures/real/shm-plain-torch28); a log copied and truncated while written starts with a
    hole of NULs. Both are text; random bytes (compressed data, a checkpoint) are not."""
    bus = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
           "\x00Traceback (most recent call last):\n"
           '  File "train.py", line 9, in <module>\n'
           "RuntimeError: DataLoader worker (pid 15450) is killed by signal: Bus error. It is possible that dataloader's "
           "workers are out of shared memory. Please try to raise your shared memory limit.\n")
    (tmp_path / "bus.log").write_bytes(bus.encode())
    (tmp_path / "hole.log").write_bytes(b"\x00" * 20000 + FAULT.encode())
    (tmp_path / "random.bin").write_bytes(os.urandom(20000).replace(b"\x00", b"\x01"))  # (no NUL at all)
    result, report = _diagnose_json(tmp_path)
    skipped = _skipped(report)
    assert "bus.log" not in skipped and "hole.log" not in skipped
    assert "binary" in skipped["random.bin"]
    found = {item["failure_id"] for item in [report["primary"], *report["collateral"]]} | {
        item["failure_id"] for item in report["candidates"]}
    assert {"dataloader-shm-exhausted", "cuda-device-side-assert"} <= found
