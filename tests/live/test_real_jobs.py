"""Real torchrun jobs (gloo, CPU) under `firstfault run` and `firstfault watch`.

Alert latency is measured from the fault's own write time: the job stamps the time just before it
raises (or falls asleep), the test stamps each alert line as it arrives; the difference bounds
the time from the fault line being written to the alert from above.
"""
from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from .procs import FIRSTFAULT, JOB, needs_torch, torchrun
from .http_receiver import Receiver

pytestmark = [needs_torch, pytest.mark.live_torch]

FAULT_RANK = 1
PG_TIMEOUT = 20.0
LATENCY_LIMIT = 1.0


def _stamp(path) -> float:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            return json.loads(path.read_text())["time"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
    raise AssertionError("the job wrote no fault stamp")


def _is_failure(alert) -> bool:
    return alert.get("kind") == "failure"


def test_run_alerts_on_injected_exception_within_a_second(spawn, tmp_path):
    stamp = tmp_path / "stamp.json"
    command = FIRSTFAULT + ["run", "--log-dir", tmp_path / "logs", "--format", "jsonl", "--poll", "0.1", "--"] + \
        torchrun() + ["--nproc-per-node", "2", "--standalone", JOB, "--steps", "40", "--step-time", "0.1",
                      "--fault-rank", FAULT_RANK, "--fault-step", "6", "--stamp", stamp, "--hook"]
    proc = spawn(command, cwd=tmp_path)
    arrived, alert = proc.next_json(_is_failure, timeout=150)
    latency = arrived - _stamp(stamp)
    print(f"firstfault run: alert {latency:.3f} s after the fault")
    assert alert["failure_id"] == "user-code-exception"
    assert alert["rank"] == FAULT_RANK
    assert latency < LATENCY_LIMIT
    code = proc.wait(timeout=120)
    assert code == 1  # the command's own status: torchrun exits 1 when a worker failed
    final = json.loads([line for _, line in proc.stdout_lines if '"firstfault.diagnosis/1"' in line][-1])
    assert final["primary"]["failure_id"] == "user-code-exception"
    assert final["primary"]["initiating"]["rank"] == FAULT_RANK
    logs = tmp_path / "logs"
    assert (logs / "rank0.log").exists() and (logs / "rank1.log").exists()
    assert "IndexError" in (logs / "rank1.log").read_text()
    record = json.loads((logs / "errors" / f"rank{FAULT_RANK}.json").read_text())  # firstfault.install()
    assert record["message"]["message"].startswith("IndexError")


def test_watch_alerts_on_injected_exception_within_a_second(spawn, tmp_path):
    logs, stamp = tmp_path / "logs", tmp_path / "stamp.json"
    watcher = spawn(FIRSTFAULT + ["watch", logs, "--format", "jsonl", "--poll", "0.1"], cwd=tmp_path)
    watcher.wait_stderr("firstfault: watching", timeout=60)
    job = spawn(torchrun() + ["--nproc-per-node", "2", "--standalone", "--log-dir", logs, "--redirects", "3",
                              JOB, "--steps", "40", "--step-time", "0.1", "--fault-rank", FAULT_RANK,
                              "--fault-step", "6", "--stamp", stamp], cwd=tmp_path)
    arrived, alert = watcher.next_json(_is_failure, timeout=150)
    latency = arrived - _stamp(stamp)
    print(f"firstfault watch: alert {latency:.3f} s after the fault")
    assert alert["failure_id"] == "user-code-exception"
    assert alert["rank"] == FAULT_RANK
    assert latency < LATENCY_LIMIT
    # the collateral (rank 0's "Connection closed by peer") is in this alert or arrives as an update
    while not any(0 in item["ranks"] for item in alert["collateral"]):
        _, alert = watcher.next_json(lambda value: value.get("kind") == "update", timeout=60)
    assert alert["failure_id"] == "user-code-exception" and alert["rank"] == FAULT_RANK
    job.wait(timeout=120)


def test_watch_names_the_hanging_rank_before_the_process_group_timeout(spawn, tmp_path):
    logs, stamp = tmp_path / "logs", tmp_path / "stamp.json"
    hang_after = 3.0
    receiver = Receiver()
    try:
        watcher = spawn(FIRSTFAULT + ["watch", logs, "--format", "jsonl", "--hang-after", hang_after,
                                      "--webhook", receiver.url, "--metrics-port", "0"], cwd=tmp_path)
        watcher.wait_stderr("firstfault: watching", timeout=60)
        port = int(next(line for _, line in watcher.stderr_lines if "metrics on" in line).rsplit(":", 1)[1].split("/")[0])
        spawn(torchrun() + ["--nproc-per-node", "3", "--standalone", "--log-dir", logs, "--redirects", "3", JOB,
                            "--steps", "60", "--step-time", "0.2", "--hang-rank", FAULT_RANK, "--hang-step", "6",
                            "--hang-seconds", "120", "--pg-timeout", PG_TIMEOUT, "--stamp", stamp], cwd=tmp_path)
        arrived, alert = watcher.next_json(lambda value: value.get("kind") in ("hang", "failure"), timeout=180)
        since_sleep = arrived - _stamp(stamp)
        print(f"firstfault watch: hang alert {since_sleep:.2f} s after rank {FAULT_RANK} fell asleep "
              f"(process-group timeout {PG_TIMEOUT:g} s)")
        assert alert["kind"] == "hang", alert
        assert alert["ranks"] == [FAULT_RANK]
        assert since_sleep < PG_TIMEOUT
        receiver.wait_for(1, timeout=10)
        assert receiver.bodies[0]["alert"]["kind"] == "hang" and f"rank {FAULT_RANK}" in receiver.bodies[0]["text"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            page = response.read().decode()
        assert f'firstfault_hang{{rank="{FAULT_RANK}"}} 1' in page
        silent = float(re.search(rf'firstfault_seconds_since_progress{{rank="{FAULT_RANK}"}} ([\d.]+)', page).group(1))
        assert silent >= hang_after
    finally:
        receiver.close()
