"""The lab's parts outside the training job, on real processes and sockets (no torch needed):
Slurm's lines, srun's labelled forwarding, the OOM killer, the scheduler's cancel, the flaky mirror,
and the faults train.py plants (each dies or blocks for real)."""
from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from firstfault.lab import drivers, train_faults
from firstfault.lab.runner import LabError, choose, expected_truth
from firstfault.lab.scenarios import get
from firstfault.lab.slurm import JobOutput, SlurmJob, label_width

LAB_DIR = Path(train_faults.__file__).parent
JOB = SlurmJob(job_id=4242, node="gpu-node-07", kill_wait=1)


def test_cancel_lines_are_slurmstepd_s():
    when = datetime(2026, 3, 4, 5, 6, 7)
    assert JOB.cancel_lines("TIME LIMIT", when, srun_step=False) == [
        "slurmstepd: error: *** JOB 4242 ON gpu-node-07 CANCELLED AT 2026-03-04T05:06:07 DUE TO TIME LIMIT ***"]
    assert JOB.cancel_lines("PREEMPTION", when, srun_step=True) == [
        "slurmstepd: error: *** JOB 4242 ON gpu-node-07 CANCELLED AT 2026-03-04T05:06:07 DUE TO PREEMPTION ***",
        "slurmstepd: error: *** STEP 4242.0 ON gpu-node-07 CANCELLED AT 2026-03-04T05:06:07 DUE TO PREEMPTION ***",
        "srun: Job step aborted: Waiting up to 3 seconds for job step to finish."]
    with pytest.raises(ValueError):
        JOB.cancel_lines("BOREDOM", when, srun_step=False)


@pytest.mark.parametrize(("returncode", "cancelled", "line"), [
    (1, False, "srun: error: gpu-node-07: task 3: Exited with exit code 1"),
    (143, True, "srun: error: gpu-node-07: task 3: Exited with exit code 143"),
    (-11, False, "srun: error: gpu-node-07: task 3: Segmentation fault"),
    (-6, False, "srun: error: gpu-node-07: task 3: Aborted"),
    (-9, True, None),  # while the step is cancelled srun only reports signals at verbose level
    (0, False, None),
])
def test_task_exit_lines_are_srun_s(returncode, cancelled, line):
    assert JOB.task_exit_line(3, returncode, cancelled) == line


def test_label_width_is_that_of_the_largest_task_id():
    assert [label_width(n) for n in (1, 2, 10, 11, 101)] == [1, 1, 1, 2, 3]


def test_job_output_labels_every_line_of_every_task(tmp_path):
    output = JobOutput(tmp_path / "slurm-4242.out", ntasks=12)
    tasks = []
    for task in (3, 11):
        popen = subprocess.Popen([sys.executable, "-c", f"print('hello from {task}'); print('no newline', end='')"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output.attach(task, popen.stdout)
        tasks.append(popen)
    for popen in tasks:
        popen.wait()
    output.close()
    lines = (tmp_path / "slurm-4242.out").read_text().splitlines()
    assert sorted(lines) == sorted([" 3: hello from 3", " 3: no newline", "11: hello from 11", "11: no newline"])


def test_flaky_mirror_resets_twice_and_the_retry_loop_logs_both(caplog):
    mirror = drivers.FlakyMirror(drops=2)
    try:
        with caplog.at_level(logging.INFO, logger="lab-test"):
            body = train_faults.fetch_with_retry(mirror.url, logging.getLogger("lab-test"), delay=0.01)
    finally:
        mirror.close()
    assert json.loads(body)["labels"] == ["cat", "dog", "bird", "fish"]
    failures = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(failures) == 2 and all(record.exc_info for record in failures)
    assert "on attempt 3/5" in caplog.records[-1].getMessage()


def test_oom_kill_sigkills_the_rank_and_logs_the_kernel_line(tmp_path):
    victim = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
                              stdout=subprocess.PIPE)
    assert victim.stdout.readline() == b"ready\n"  # past exec: /proc shows the victim's own name
    command_name = Path(f"/proc/{victim.pid}/comm").read_text().strip()
    (tmp_path / "ranks").mkdir()
    (tmp_path / "ranks" / "2.json").write_text(json.dumps({"node": 0, "pid": victim.pid}))
    actions = []
    drivers.oom_kill(tmp_path / "ranks", 2, tmp_path / "logs" / "dmesg.txt", actions)
    assert victim.wait(timeout=10) == -signal.SIGKILL
    line = (tmp_path / "logs" / "dmesg.txt").read_text()
    assert re.fullmatch(rf"\[\w{{3}} \w{{3}} [ \d]\d \d\d:\d\d:\d\d \d{{4}}\] Out of memory: Killed process {victim.pid} "
                        rf"\({re.escape(command_name)}\) total-vm:\d+kB, anon-rss:\d+kB, file-rss:\d+kB, shmem-rss:\d+kB, UID:\d+ "
                        r"pgtables:\d+kB oom_score_adj:-?\d+\n", line), line
    assert f"pid {victim.pid}" in actions[0]


def test_cancel_job_terminates_then_kills_what_ignores_sigterm(tmp_path):
    polite = subprocess.Popen(["sleep", "30"], start_new_session=True)
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ready', flush=True); time.sleep(30)"],
                                stdout=subprocess.PIPE, start_new_session=True)
    assert stubborn.stdout.readline() == b"ready\n"
    output, actions = JobOutput(tmp_path / "slurm-4242.out"), []
    drivers.cancel_job(JOB, "TIME LIMIT", {"polite": polite, "stubborn": stubborn}, output, srun_step=False,
                       actions=actions)
    output.close()
    assert polite.wait(timeout=10) == -signal.SIGTERM
    assert stubborn.wait(timeout=10) == -signal.SIGKILL
    assert "DUE TO TIME LIMIT ***" in (tmp_path / "slurm-4242.out").read_text()
    assert "SIGKILL to stubborn" in actions[0]


def _plant(code: str, tmp_path: Path) -> subprocess.Popen:
    """A fresh interpreter running train_faults as train.py does (a sibling module, no torch)."""
    script = f"import sys; sys.path.insert(0, {str(LAB_DIR)!r}); import train_faults\n{code}"
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)


@pytest.mark.parametrize(("kind", "signum"), [
    ("segfault", signal.SIGSEGV), ("bus-error", signal.SIGBUS), ("abort", signal.SIGABRT),
    ("cxx-terminate", signal.SIGABRT), ("illegal-instruction", signal.SIGILL), ("fpe", signal.SIGFPE),
])
def test_native_crash_dies_by_its_signal_without_a_python_traceback(kind, signum, tmp_path):
    process = _plant(f"train_faults.crash_natively({kind!r}, {str(tmp_path)!r})", tmp_path)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == -signum, err
    assert b"Traceback" not in err
    if kind == "cxx-terminate":
        assert err.decode().startswith("terminate called after throwing an instance of 'std::runtime_error'\n"
                                        "  what():  shard reader: record 4096")


@pytest.mark.parametrize("code", [
    "train_faults.block_writing_shard(__import__('pathlib').Path('ckpt/epoch0-rank1.pt'))",
    "train_faults.wait_for_silent_service()",
    "import logging; train_faults.start_upload_thread(logging.getLogger()); raise IndexError('list index out of range')",
], ids=["checkpoint-shard", "scoring-service", "non-daemon-thread-after-raise"])
def test_hang_blocks_for_good(code, tmp_path):
    process = _plant(code, tmp_path)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=2)
    finally:
        process.kill()
    _out, err = process.communicate(timeout=10)
    if "IndexError" in code:
        assert b"IndexError: list index out of range" in err  # printed, and still the process did not end


def test_srun_layout_and_host_truth():
    assert choose(get("native-cxx-terminate"), "srun", 4, 3) == ("srun", 4, 3, None)
    truth = expected_truth(get("native-cxx-terminate"), world_size=4, rank=3, second_rank=None, fixed=False,
                           node_of_rank={}, host="gpu-node-07")
    assert truth["class"] == "collective-timeout-peer-crash" and truth["also_acceptable"] == ["native-crash"]
    assert truth["initiating_rank"] == 3 and truth["initiating_host"] == "gpu-node-07"
    preempted = expected_truth(get("preempted-slurm"), world_size=4, rank=0, second_rank=None, fixed=False,
                               node_of_rank={}, host="gpu-node-07")
    assert preempted["initiating_rank"] is None and preempted["initiating_host"] is None
    with pytest.raises(LabError):
        choose(get("sigterm-launcher"), "srun", 2, 0)


def test_time_limit_scenarios_wait_long_enough_to_be_a_hang():
    for name in ("hang-checkpoint-time-limit", "hang-eval-time-limit", "exc-then-time-limit"):
        scenario = get(name)
        assert scenario.driver == "time-limit"
        assert scenario.pg_timeout > 10 * scenario.cancel_after  # no rank can time out before the scheduler acts
        assert scenario.cancel_after + 2 * JOB.kill_wait < scenario.wall_timeout


def test_a_scenario_whose_fault_is_always_on_one_rank_refuses_another():
    # rank 0 alone loads the resume checkpoint: asked for rank 1, the lab would label a truth
    # the run cannot have (the fault still fires on rank 0)
    for name in ("checkpoint-truncated", "state-dict-mismatch"):
        scenario = get(name)
        assert scenario.rank_fixed and scenario.default_rank == 0
        assert choose(scenario, "tee", 3, 0)[2] == 0
        with pytest.raises(LabError, match="always fails on rank 0"):
            choose(scenario, "tee", 3, 1)
    assert not get("exc-index-error").rank_fixed  # its --inject names the rank
    assert choose(get("exc-index-error"), "tee", 3, 2)[2] == 2


def test_the_scheduler_s_sigterm_reaches_a_process_in_every_layout_its_scenarios_list(tmp_path):
    from firstfault.lab.layouts import plan_launch
    from firstfault.lab.runner import _sigterm_targets
    from firstfault.lab.scenarios import SCENARIOS

    for scenario in (s for s in SCENARIOS if s.driver == "sigterm-launcher"):
        for layout in scenario.layouts:
            plan = plan_launch(layout, world_size=4, script="train.py", script_args=[], logs_dir=tmp_path, port=1,
                               slurm_job=JOB)
            started = {process.name: object() for process in plan.processes}  # what the runner started, by name
            targets = _sigterm_targets(plan, started)
            assert targets, (scenario.name, layout)
            assert all(started[name] is popen for name, popen, _group in targets)


def test_the_fault_marker_appears_whole(tmp_path, monkeypatch):
    # the runner acts the moment the marker's name exists and reads the rank in it (the OOM
    # killer's victim): once it read an empty file the trainer had created and not yet written.
    # So the marker is never written in place: it appears by a rename, whole.
    import argparse

    pytest.importorskip("torch")
    from firstfault.lab import train

    marker = tmp_path / "reached-step"
    written, write_text = [], Path.write_text
    monkeypatch.setattr(Path, "write_text", lambda self, *a, **k: (written.append(self), write_text(self, *a, **k))[1])
    train.fire(argparse.Namespace(fault_marker=str(marker)), "oom-victim", 2)
    assert written and marker not in written
    assert marker.read_text() == "oom-victim 2"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["reached-step"]


def test_host_names_are_one_per_node_and_valid(monkeypatch):
    from firstfault.lab import runner

    monkeypatch.setattr(runner.os, "geteuid", lambda: 0)
    monkeypatch.setattr(runner.shutil, "which", lambda name: f"/usr/bin/{name}")
    runner.check_hosts("twonode", ["gpu-a100-017", "ip-10-0-3-17"])
    runner.check_hosts("tee", ["dgx-h100-04"])
    for layout, hosts, said in [("twonode", ["gpu-a100-017"], "give 2 name"), ("tee", ["a", "b"], "give 1 name"),
                                ("twonode", ["gpu a100", "b"], "not a host name"), ("srun", ["n1"], "names its node itself")]:
        with pytest.raises(LabError, match=said):
            runner.check_hosts(layout, hosts)
    monkeypatch.setattr(runner.os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="needs root"):
        runner.check_hosts("tee", ["dgx-h100-04"])


def test_each_node_runs_on_its_host_and_every_name_resolves(tmp_path):
    from firstfault.lab.layouts import on_hosts, plan_launch

    plan = plan_launch("twonode", world_size=4, script="train.py", script_args=[], logs_dir=tmp_path / "logs", port=29500)
    on_hosts(plan, ["gpu-a100-017", "ip-10-0-3-17"], tmp_path)
    (first, second) = plan.processes
    assert first.command[:3] == ["unshare", "--uts", "--mount"] and "gpu-a100-017" in first.command
    assert "ip-10-0-3-17" in second.command and "gpu-a100-017" not in second.command
    assert first.command[-1] == "train.py"  # (the command itself, last, unchanged)
    lines = (tmp_path / "hosts").read_text().splitlines()
    # each name on its own loopback address: an address looked up gives its name back
    assert "127.0.1.1 gpu-a100-017" in lines and "127.0.1.2 ip-10-0-3-17" in lines
