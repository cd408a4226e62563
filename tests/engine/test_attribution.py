"""Rank, host and time from every launcher prefix and file-name convention."""
from __future__ import annotations

import pytest

from firstfault.ingest.attribution import device_mentioned, hints_from_path, parse_prefix
from firstfault.ingest.timestamps import Clock
from firstfault.pipeline import diagnose_paths

ASSERT = "RuntimeError: CUDA error: device-side assert triggered"


@pytest.mark.parametrize("line, rank, local, host", [
    ("[rank3]: Traceback (most recent call last):", 3, None, None),
    ("[default3]:[rank11]: RuntimeError: x", 11, 3, None),
    ("[default5]:loss 2.0", None, 5, None),
    ("[trainer2]:loss 2.0", None, 2, None),
    ("7: [rank7]: RuntimeError: x", 7, None, None),
    ("12: RuntimeError: x", 12, None, None),
    ("node-7: [rank3]: RuntimeError: x", 3, None, "node-7"),
    ("dgx-a100-18: [2023-08-29 22:28:13,030] [INFO] [launch.py:315:sigkill_handler] x", None, None, "dgx-a100-18"),
    ("gpu-a07:1234:1240 [3] NCCL INFO Bootstrap : Using eth0", None, 3, "gpu-a07"),
    ("(RayTrainWorker pid=1234, ip=10.60.2.16) RuntimeError: x", None, None, "10.60.2.16"),
    ("(VllmWorker TP1 pid=3523) ERROR x", None, 1, None),
    ("(worker1, rank=1, pid=1341842, ip=10.2.97.7) [rank13]: RuntimeError: Rank 13, node n-1", 13, 1, "10.2.97.7"),
    ("Dec  2 16:46:31 dgx-a100-18 kernel: Out of memory: Killed process 1234 (python)", None, None, "dgx-a100-18"),
    ("[1,mpirank:3,algo-2]<stderr>:RuntimeError: x", 3, None, "algo-2"),
    ("[1,5]<stdout>:loss 2.0", 5, None, None),
    # mpirun --timestamp-output (and horovodrun): mpirun's ctime before the tag
    ("Sun Dec  6 15:47:17 2026[1,3]<stderr>:[rank3]: RuntimeError: x", 3, None, None),
    ("Wed Jun 10 22:41:38 2020[127]<stderr>:terminate called after throwing an instance of 'gloo::IoException'", 127, None, None),
    ("[pod/bert-worker-1/pytorch] [rank3]: RuntimeError: x", 3, None, "bert-worker-1"),
    ("[pod/x/y]RuntimeError: x", None, None, None),
    ("Epoch1: loss 2.0", None, None, None),
    ("RuntimeError: CUDA error", None, None, None),
    # journald's record of a service's output (`journalctl -u`, default and -o short-iso), outermost
    ("Dec  5 12:00:00 gpu-node-3 python3[4100]: [default1]:[rank5]: RuntimeError: x", 5, 1, "gpu-node-3"),
    ("2026-12-05T12:00:00+0000 gpu-node-3 torchrun[4100]: 3: RuntimeError: x", 3, None, "gpu-node-3"),
    # not one: a logger's own time and level (no host, no ident[pid])
    ("Dec 05 12:00:00 INFO train: [rank5]: step 10", None, None, None),
])
def test_line_prefixes(line, rank, local, host):
    prefix = parse_prefix(line)
    assert (prefix.rank, prefix.local_rank, prefix.host) == (rank, local, host)


@pytest.mark.parametrize("line, pid", [
    ("(RayTrainWorker pid=1234, ip=10.60.2.16) RuntimeError: x", 1234),
    ("(RayTrainWorker pid=1234) [rank3]: RuntimeError: x", 1234),  # the process, whatever its lines add
    ("(VllmWorkerProcess pid=2213) ERROR x", 2213),
    ("(VllmWorker TP1 pid=3523) ERROR x", None),  # the prefix names the worker's rank: that is its stream
    ("[rank3]: pid=1234 RuntimeError: x", None),
])
def test_a_worker_prefix_names_its_process(line, pid):
    assert parse_prefix(line).pid == pid


@pytest.mark.parametrize("path, rank, local, node, host", [
    ("rank3.log", 3, None, None, None),
    ("rank-03.err", 3, None, None, None),
    ("worker-3.log", 3, None, None, None),
    ("job_rank_3_out.log", 3, None, None, None),
    ("node1.log", None, None, 1, None),
    ("torchelastic/none_abc/attempt_0/3/stderr.log", None, 3, None, None),
    ("dgx-a100-18/dmesg.txt", None, None, None, "dgx-a100-18"),
    ("dmesg-gpu-node-12.txt", None, None, None, "gpu-node-12"),
    ("train.log", None, None, None, None),
    ("user_logs/std_log_process_03.txt", 3, None, None, None),
    ("std_log_node_1_local_rank_2.txt", None, 2, 1, None),
    ("logs/rank-12/stderr.log", 12, None, None, None),
    # Open MPI's mpirun --output-filename DIR: DIR/<job>/rank.<R>/stdout and stderr
    ("mpi/1/rank.3/stderr", 3, None, None, None),
    ("mpi/1/rank.12/stdout", 12, None, None, None),
    ("output_rank-04.log", 4, None, None, None),  # a rank's name with a dash is no host's
    ("logs/run_process-2.txt", 2, None, None, None),
    ("preprocess_01.log", None, None, None, None),
    # Kubeflow pods: the pod name is the host; worker-N is not rank N (the node rank needs the master)
    ("train-bert-worker-1.log", None, None, None, "train-bert-worker-1"),
    ("logs/llm-sft-master-0/stdout.log", None, None, None, "llm-sft-master-0"),
    ("kubectl-logs-pod-llm-sft-worker-3.txt", None, None, None, "llm-sft-worker-3"),
    ("mpi-bench-launcher-x7k2p.log", None, None, None, "mpi-bench-launcher-x7k2p"),
    # host names kept whole as the file names spell them (Slurm's %j-%N, dmesg per node, zero-padded nodes)
    ("dmesg-gpu-00-09.log", None, None, None, "gpu-00-09"),
    ("slurm-123456-gpu-04-02.out", None, None, None, "gpu-04-02"),
    ("logs/slurm-88231_7-dgx-b12.out", None, None, None, "dgx-b12"),
    ("dmesg-node018.txt", None, None, None, "node018"),
    ("slurm-77-nid001234.out", None, None, None, "nid001234"),
    ("ip-10-0-1-2.log", None, None, None, "ip-10-0-1-2"),
    ("slurm-8812231.out", None, None, None, None),
    ("node0/stderr.log", None, None, None, None),
    # a name with a second number after the first (a job's id, then a pod's index): no rank
    ("kubectl-logs/task-646--1-mhpnk.log", None, None, None, None),
    ("worker-3-attempt-1.log", None, None, None, None),
    ("worker-03.err", 3, None, None, None),
    # str.isdigit takes a superscript, int() does not: a folder named so is no local rank
    ("logs/attempt_0/\u00b2/stderr.log", None, None, None, None),
])
def test_path_hints(path, rank, local, node, host):
    hints = hints_from_path(path)
    assert (hints.rank, hints.local_rank, hints.node_rank, hints.host) == (rank, local, node, host)


def test_device_index_in_message():
    assert device_mentioned("Tried to allocate 386.00 MiB (GPU 1; 39.39 GiB total capacity)") == 1
    assert device_mentioned("expected all tensors on cuda:3") == 3
    assert device_mentioned("loss 2.0") is None


@pytest.mark.parametrize("text, expected", [
    ("2026-12-02 16:46:31,644 INFO x", "2026-12-02T16:46:31.644"),
    ("[2026-12-02 16:46:31,644] [INFO] [launch.py:1] x", "2026-12-02T16:46:31.644"),
    ("2026-12-02T16:46:31.500Z x", "2026-12-02T16:46:31.500"),
    ("2026-12-02T17:46:31.5+01:00 x", "2026-12-02T16:46:31.500"),
    ("E1202 16:46:31.250000 16938 torch/x.py:1] y", "2026-12-02T16:46:31.250"),
    ("Dec  2 16:46:31 host kernel: x", "2026-12-02T16:46:31.000"),
    ("[Wed Dec  2 16:46:31 2026] NVRM: Xid", "2026-12-02T16:46:31.000"),
    ("  time      : 2026-12-02_16:46:31", "2026-12-02T16:46:31.000"),
    ("(VllmWorkerProcess pid=2213) ERROR 12-02 16:46:31 multiproc_worker_utils.py:226] Exception in worker", "2026-12-02T16:46:31.000"),
    ("INFO 12-02 16:46:31 [engine.py:12] Added request", "2026-12-02T16:46:31.000"),
    ("20261202-16:46:31.250 Local Scheduler INFO: Training finished", "2026-12-02T16:46:31.250"),
])
def test_timestamps(text, expected):
    from firstfault.render.contract import iso_time

    clock = Clock()
    clock.reference_year = 2026
    assert iso_time(clock.parse(text)).startswith(expected)


def test_dmesg_seconds_since_boot_are_not_wall_time():
    assert Clock().parse("[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79") is None


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_two_node_console_maps_local_to_global_rank(tmp_path):
    # node1's [default1] is global rank 3 when each node runs 2 processes
    _write(tmp_path / "node0.log", "[default0]:step 1\n[default1]:step 1\n")
    _write(tmp_path / "node1.log", f"[default0]:step 1\n[default1]:{ASSERT}\n")
    assert diagnose_paths([str(tmp_path)]).initiating.rank == 3


def test_local_to_global_pairs_in_the_file_win(tmp_path):
    _write(tmp_path / "console.log", f"[default1]:[rank9]: step\n[default1]:{ASSERT}\n")
    assert diagnose_paths([str(tmp_path)]).initiating.rank == 9


def test_torchrun_log_dir_layout(tmp_path):
    base = tmp_path / "torchelastic" / "none_x" / "attempt_0"
    for local in range(3):
        _write(base / str(local) / "stderr.log", ASSERT + "\n" if local == 2 else "ok\n")
    assert diagnose_paths([str(tmp_path)]).initiating.rank == 2


def test_srun_label_console(tmp_path):
    _write(tmp_path / "slurm-1.out", f"0: step 1\n1: step 1\n1: {ASSERT}\n0: Connection closed by peer\n")
    assert diagnose_paths([str(tmp_path)]).initiating.rank == 1


def test_dmesg_host_from_folder(tmp_path):
    _write(tmp_path / "gpu-node-07" / "dmesg.txt",
           "[Wed Dec  2 16:46:31 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "gpu-fallen-off-bus"
    assert diagnosis.initiating.host == "gpu-node-07"


def test_progress_bar_carriage_returns_do_not_shift_line_numbers(tmp_path):
    text = "step 1\n 10%|#  | 1/10\r 20%|## | 2/10\r 30%|### | 3/10\nstep 2\n" + ASSERT + "\n"
    _write(tmp_path / "train.log", text)
    diagnosis = diagnose_paths([str(tmp_path)])
    grep_line = text.split("\n").index(ASSERT) + 1  # what `grep -n` prints
    assert diagnosis.initiating.line == grep_line == 4


def test_an_nccl_warn_line_with_its_source_location_names_host_and_local_rank():
    from firstfault.ingest.attribution import parse_prefix

    prefix = parse_prefix("gpu-b02:45571:45651 [3] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer")
    assert (prefix.host, prefix.local_rank) == ("gpu-b02", 3)
    inside = parse_prefix("[default1]:gpu-a01:45571:45651 [1] NCCL WARN NET/IB : Got async event : port error")
    assert inside.local_rank == 1 and inside.outer_host is None  # the same stream as its [default1] lines


def test_a_vllm_error_line_keeps_its_own_time():
    """vLLM's `ERROR 08-26 17:03:35` is the error's own time, not one carried from an earlier line."""
    from firstfault.pipeline import diagnose_texts
    from firstfault.render.contract import iso_time

    log = ("2025-08-26 17:03:12,000 INFO launcher: starting vllm serve\n"
           "(VllmWorkerProcess pid=2213) ERROR 08-26 17:03:35 multiproc_worker_utils.py:226] Exception in worker "
           "VllmWorkerProcess while processing method execute_model: CUDA error: an illegal memory access was encountered\n")
    diagnosis = diagnose_texts([("vllm.log", log)])
    assert iso_time(diagnosis.initiating.time) == "2025-08-26T17:03:35.000"


def test_a_journald_record_of_a_job_reads_as_the_job_s_own_lines(tmp_path):
    """`journalctl -u train` of a torchrun service: the rank behind journald's host and pid is read."""
    lines = ["[default0]:[rank0]: RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.1.22]:6011",
             "[default1]:[rank1]: Traceback (most recent call last):",
             "[default1]:[rank1]: " + ASSERT]
    (tmp_path / "journal-train.txt").write_text("".join(f"Dec  5 12:00:0{i} gpu-node-3 python3[4100]: {line}\n"
                                                        for i, line in enumerate(lines)))
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "cuda-device-side-assert"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (1, "gpu-node-3")


def test_a_message_that_names_its_own_rank():
    """The rank a message names in itself, the last resort of attribution: `rank 3`, `[rank3]`, and
    ProcessGroupNCCL's `[1] is setting up NCCL communicator` before its store wait; a bracketed
    number of another kind names none."""
    from firstfault.ingest.attribution import rank_mentioned

    assert rank_mentioned("RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0]") == 1
    assert rank_mentioned("error on rank 3: CUDA out of memory") == 3
    assert rank_mentioned("[rank12]: Timed out") == 12
    assert rank_mentioned("[1] loaded 400 shards") is None


def test_a_line_whose_only_time_is_mpirun_s_stamp_takes_that_time(tmp_path):
    """mpirun --timestamp-output stamps every line before its tag: a rank's line without a time of its
    own (a traceback) takes the stamp's; one with its own time keeps it (finer than the stamp's second)."""
    from firstfault.pipeline import diagnose_paths

    (tmp_path / "console.log").write_text(
        "Sun Dec  6 15:47:17 2026[1,0]<stderr>:2026-12-06 15:47:16,250 INFO train: step 5 loss 0.4\n"
        "Sun Dec  6 15:47:17 2026[1,1]<stderr>:[rank1]: Traceback (most recent call last):\n"
        "Sun Dec  6 15:47:18 2026[1,1]<stderr>:[rank1]: KeyError: 'label'\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.initiating.rank == 1
    from firstfault.render.contract import iso_time

    assert iso_time(diagnosis.initiating.time).endswith("15:47:18.000")
