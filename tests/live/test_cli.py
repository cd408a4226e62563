"""`firstfault watch` and `firstfault run` end to end, without torch: a test writes the logs."""
from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.request

from .http_receiver import Receiver
from .procs import FIRSTFAULT
from .sample_logs import RANK0, RANK1


def _append(path, text: str) -> float:
    with open(path, "a") as handle:
        handle.write(text)
        handle.flush()
        return time.time()


def test_watch_folder_new_rank_file_alert_webhook_and_metrics(spawn, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    receiver = Receiver()
    try:
        watcher = spawn(FIRSTFAULT + ["watch", logs, "--format", "jsonl", "--poll", "0.1", "--webhook", receiver.url,
                                      "--metrics-port", "0", "--hang-after", "30"])
        watcher.wait_stderr("firstfault: watching", timeout=60)
        port = int(next(line for _, line in watcher.stderr_lines if "metrics on" in line).rsplit(":", 1)[1].split("/")[0])
        head0, tail0 = RANK0.split("[rank0]: Traceback", 1)
        _append(logs / "rank0.log", head0)
        lines1 = RANK1.splitlines(keepends=True)
        _append(logs / "rank1.log", "".join(lines1[:-1]))  # a rank file that appears after the watch began
        time.sleep(0.5)
        written = _append(logs / "rank1.log", lines1[-1])  # the fault line
        arrived, alert = watcher.next_json(lambda value: value.get("kind") == "failure", timeout=10)
        assert alert["failure_id"] == "user-code-exception" and alert["rank"] == 1
        assert arrived - written < 1.0
        _append(logs / "rank0.log", "[rank0]: Traceback" + tail0)  # collateral arrives later
        _, update = watcher.next_json(lambda value: value.get("kind") == "update", timeout=10)
        assert update["collateral"][0]["failure_id"] == "collective-timeout-peer-crash"
        assert update["collateral"][0]["ranks"] == [0]
        receiver.wait_for(2, timeout=10)
        assert [body["alert"]["kind"] for body in receiver.bodies] == ["failure", "update"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            page = response.read().decode()
        assert 'firstfault_failure{failure_id="user-code-exception",rank="1",role="primary"} 1' in page
        assert 'firstfault_seconds_since_progress{rank="1"}' in page
    finally:
        receiver.close()


def test_watch_hang_alert_from_files(spawn, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    watcher = spawn(FIRSTFAULT + ["watch", logs, "--format", "jsonl", "--poll", "0.1", "--hang-after", "1.5"])
    watcher.wait_stderr("firstfault: watching", timeout=60)
    for step in range(4):
        for rank in range(3):
            if rank == 2 and step == 3:
                continue  # rank 2 stops before step 3; ranks 0 and 1 reach it and wait
            _append(logs / f"rank{rank}.log", f"2026-12-02 17:00:0{step},000 INFO step {step} loss 1.0\n")
        time.sleep(0.2)
    _, alert = watcher.next_json(lambda value: value.get("kind") == "hang", timeout=10)
    assert alert["ranks"] == [2]
    _append(logs / "rank2.log", "2026-12-02 17:00:09,000 INFO step 3 loss 1.0\n")
    for rank in range(3):
        _append(logs / f"rank{rank}.log", "2026-12-02 17:00:09,000 INFO step 4 loss 1.0\n")
    _, resolved = watcher.next_json(lambda value: value.get("kind") == "resolved", timeout=10)
    assert resolved["failure_id"] == "hang"


def test_run_passes_output_through_and_exits_with_the_commands_status(spawn, tmp_path):
    script = "import sys; print('step 1 loss 2.0', flush=True); sys.stderr.write(%r); sys.exit(3)" % RANK1
    proc = spawn(FIRSTFAULT + ["run", "--log-dir", tmp_path / "logs", "--format", "jsonl", "--", sys.executable, "-c", script])
    assert proc.wait(timeout=60) == 3
    kinds = [json.loads(line).get("kind") or json.loads(line).get("schema") for _, line in proc.stdout_lines]
    assert kinds == ["failure", "firstfault.diagnosis/1"]
    assert "step 1 loss 2.0" in proc.stderr_text()  # with --format jsonl the job's stdout goes to stderr
    assert "IndexError" in (tmp_path / "logs" / "console.log").read_text()


def test_run_terminal_format_and_healthy_command(spawn, tmp_path):
    proc = spawn(FIRSTFAULT + ["run", "--log-dir", tmp_path / "logs", "--", sys.executable, "-c", "print('hello')"])
    assert proc.wait(timeout=60) == 0
    assert "hello" in proc.stdout_text()


def test_bad_webhook_url_is_a_tool_error(spawn, tmp_path):
    proc = spawn(FIRSTFAULT + ["watch", tmp_path, "--webhook", "ftp://x"])
    assert proc.wait(timeout=60) == 2
    assert "hint:" in proc.stderr_text() and "Traceback" not in proc.stderr_text()


def test_watch_on_an_old_finished_run_raises_no_hang(spawn, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for rank in range(2):
        _append(logs / f"rank{rank}.log", "".join(f"step {step} loss 1.0\n" for step in range(10)))
    proc = spawn(FIRSTFAULT + ["watch", logs, "--format", "jsonl", "--hang-after", "0.5", "--duration", "2"])
    assert proc.wait(timeout=60) == 0
    assert proc.stdout_text() == ""


def test_run_refuses_a_log_dir_that_holds_an_earlier_run(spawn, tmp_path):
    (tmp_path / "rank0.log").write_text("old\n")
    proc = spawn(FIRSTFAULT + ["run", "--log-dir", tmp_path, "--", sys.executable, "-c", "print(1)"])
    assert proc.wait(timeout=60) == 2
    assert "not empty" in proc.stderr_text()


def test_run_forwards_sigterm_to_the_job(spawn, tmp_path):
    script = ("import signal, sys, time\n"
              "signal.signal(signal.SIGTERM, lambda *a: (print('job got SIGTERM', flush=True), sys.exit(7)))\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    proc = spawn(FIRSTFAULT + ["run", "--log-dir", tmp_path / "logs", "--", sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while "ready" not in proc.stdout_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.process.pid, signal.SIGTERM)  # firstfault only, not its process group
    assert proc.wait(timeout=30) == 7
    assert "job got SIGTERM" in proc.stdout_text()


def test_run_unknown_command_is_a_tool_error(spawn, tmp_path):
    proc = spawn(FIRSTFAULT + ["run", "--log-dir", tmp_path / "logs", "--", "no-such-launcher-xyz"])
    assert proc.wait(timeout=60) == 2
    assert "cannot start no-such-launcher-xyz" in proc.stderr_text()


FIRST_USER_LIVE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "first-user", "live3")


def _live3_lines() -> dict[int, list[str]]:
    return {rank: open(os.path.join(FIRST_USER_LIVE, f"rank{rank}.log")).read().splitlines(keepends=True)
            for rank in range(4)}


def _hang_after_backlog(spawn, logs, write, backlog_lines: int):
    """The first `backlog_lines` of every rank are there before watching begins; then ranks 0, 1, 3
    go on while rank 2 writes what is left of its three progress lines, and stops."""
    lines = _live3_lines()
    for rank in range(4):
        write(rank, "".join(lines[rank][:backlog_lines]))
    watcher = spawn(FIRSTFAULT + ["watch", logs, "--format", "jsonl", "--poll", "0.1", "--hang-after", "1.5"])
    watcher.wait_stderr("firstfault: watching", timeout=60)
    for index in range(backlog_lines, 6):
        for rank in range(4):
            if index < len(lines[rank]):
                write(rank, lines[rank][index])
        time.sleep(0.3)
    _, alert = watcher.next_json(lambda value: value.get("kind") == "hang", timeout=15)
    return alert


def test_watch_names_the_rank_that_stopped_when_the_files_held_a_backlog(spawn, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    alert = _hang_after_backlog(spawn, logs, lambda rank, text: _append(logs / f"rank{rank}.log", text), 2)
    assert alert["ranks"] == [2], alert


def test_watch_names_the_rank_that_stopped_in_one_srun_label_file(spawn, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()

    def write(rank, text):
        _append(logs / "job.out", "".join(f"{rank}: {line}" for line in text.splitlines(keepends=True)))

    alert = _hang_after_backlog(spawn, logs, write, 2)
    assert alert["ranks"] == [2], alert


def test_watch_names_a_rank_that_had_stopped_before_watching_began(spawn, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    alert = _hang_after_backlog(spawn, logs, lambda rank, text: _append(logs / f"rank{rank}.log", text), 3)
    assert alert["ranks"] == [2], alert


def test_watch_does_not_follow_its_own_output_in_the_watched_folder(tmp_path):
    """`firstfault watch DIR > DIR/alerts.jsonl`: the alerts it writes are not logs to read back
    (they quote the failing line, which would raise the same alert again, for ever)."""
    import subprocess

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank1.log").write_text(RANK1)
    out = logs / "alerts.jsonl"
    with open(out, "w") as handle:
        done = subprocess.run(FIRSTFAULT + ["watch", str(logs), "--format", "jsonl", "--poll", "0.1", "--duration", "3"],
                              stdout=handle, stderr=subprocess.PIPE, timeout=120)
    alerts = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    failures = [alert for alert in alerts if alert.get("kind") == "failure"]
    assert len(failures) == 1, alerts
    assert all("alerts.jsonl" not in json.dumps(alert) for alert in alerts)
    assert done.returncode == 1


def test_run_stamps_the_lines_it_keeps_so_its_files_order_without_a_warning():
    from firstfault.watch.launch import stamped

    line = stamped(b"[default1]:step 3 loss 0.25\n", 1_764_842_400.5)
    assert line.startswith(b"[default1]:") and b",500 step 3 loss 0.25" in line
    for kept in (b"[default1]:[rank1]: Traceback (most recent call last):\n", b"[default1]:  File \"job.py\", line 9, in <module>\n",
                 b"[default1]:[rank1]: IndexError: list index out of range\n", b"2026-12-04 10:00:00,000 INFO step 1\n", b"\n"):
        assert stamped(kept, 1_764_842_400.5) == kept  # a traceback keeps its shape; a timed line its time


def test_the_follower_never_reads_the_files_its_own_streams_write(tmp_path):
    from firstfault.watch.follower import Follower, own_outputs

    (tmp_path / "rank0.log").write_text("step 1 loss 2.0\n")
    with open(tmp_path / "out.txt", "w") as redirected:
        redirected.write("an alert quoting RuntimeError: CUDA error: device-side assert triggered\n")
        redirected.flush()
        ignored = own_outputs(redirected, sys.stdin)
        assert len(ignored) == 1
        chunks = Follower([str(tmp_path)], ignored=ignored).poll()
    assert {chunk.relative for chunk in chunks} == {"rank0.log"}
    assert {chunk.relative for chunk in Follower([str(tmp_path)]).poll()} == {"rank0.log", "out.txt"}
