"""Host-level events (kernel Xid, OOM killer) name a PCI bus or a pid, not a rank: the engine joins
them to ranks through what other lines in the input say."""
from __future__ import annotations

import pytest

from firstfault.pipeline import diagnose_paths

PEER_CLOSED = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.1.22]:6011"
XID79 = "[Wed Mar  1 10:05:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_pci_bus_to_rank_through_nccl_init_lines(tmp_path):
    init = "".join(
        f"[rank{r}]:gpu-node-03:{700 + r}:{800 + r} [{r}] NCCL INFO comm 0x55d0 rank {r} nranks 4 cudaDev {r} nvmlDev {r} busId {bus}000 commId 0x1 - Init COMPLETE\n"
        for r, bus in enumerate(["18", "3b", "86", "af"]))
    _write(tmp_path / "console.log", init)
    _write(tmp_path / "dmesg-gpu-node-03.txt", XID79 + "\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "gpu-fallen-off-bus"
    assert diagnosis.initiating.rank == 1
    assert any("PCI bus 3b" in note for note in diagnosis.notes)


def test_pci_bus_to_gpu_index_through_nvidia_smi(tmp_path):
    _write(tmp_path / "serve.log", "(VllmWorker TP0 pid=3522) INFO ready\n(VllmWorker TP1 pid=3523) INFO ready\n")
    _write(tmp_path / "nvidia-smi.txt", "Unable to determine the device handle for GPU1: 0000:3B:00.0: Unknown Error\n")
    _write(tmp_path / "kern.log", XID79 + "\n")
    assert diagnose_paths([str(tmp_path)]).initiating.rank == 1


def test_pid_to_rank_through_ray_worker_file_names(tmp_path):
    session = tmp_path / "ray-session-10.0.0.7"
    _write(session / "worker-0a1b2c3d-01000000-4242.err", "[rank5]: update_actor: micro_batch 7/16\n")
    _write(session / "worker-9f8e7d6c-01000000-4243.err", "[rank6]: update_actor: micro_batch 7/16\n")
    _write(tmp_path / "dmesg-node-7.txt",
           "[Wed Mar  1 10:05:00 2026] NVRM: Xid (PCI:0000:9a:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n"
           "[Wed Mar  1 10:05:00 2026] NVRM: Xid (PCI:0000:9a:00): 94, pid=4243, name=ray::WorkerDict, Contained: SM (0x1). RST: No, D-RST: No\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "gpu-ecc-error"
    assert diagnosis.initiating.rank == 6


def test_deepspeed_launcher_report_names_the_node_not_the_rank(tmp_path):
    """DeepSpeed's launcher prints the command of the local rank it started last with the return
    code of the process that exited (deepspeed/launcher/launch.py, sigkill_handler), so its
    `'--local_rank=3' ... exits with return code = -9` tells the node, not which of its ranks
    was killed: the host is named, the rank is not."""
    launcher = "".join(
        f"{host}: [2026-03-01 10:00:00,000] [INFO] [launch.py:151:main] nnodes=2, num_local_procs=4, node_rank={node}\n"
        for node, host in enumerate(["node-a1", "node-a2"]))
    launcher += ("node-a2: [2026-03-01 10:20:01,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
                 "'train.py', '--local_rank=3', '--deepspeed'] exits with return code = -9\n")
    _write(tmp_path / "pdsh.log", launcher)
    _write(tmp_path / "node-a2" / "dmesg.txt",
           "[Sun Mar  1 10:20:00 2026] Out of memory: Killed process 5151 (python) total-vm:187412556kB, anon-rss:67020392kB\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "host-oom-killed"
    assert diagnosis.initiating.rank is None
    assert diagnosis.initiating.host == "node-a2"


def test_a_rankless_fault_is_rank_0_only_when_nothing_shows_other_processes():
    from firstfault.pipeline import diagnose_texts

    oom = "RuntimeError: CUDA error: out of memory"
    alone = diagnose_texts([("train.log", oom + "\n")])
    assert alone.initiating.rank == 0
    teardown = "W0629 00:06:21.246000 140229 torch/distributed/elastic/multiprocessing/api.py:851] Sending process 29735 closing signal SIGTERM"
    with_peers = diagnose_texts([("train.log", oom + "\n" + teardown + "\n")])
    assert with_peers.primary.failure_id == "cuda-oom"
    assert with_peers.initiating.rank is None


def test_a_traceback_through_ddp_or_a_collective_is_not_one_process_alone():
    """A thread's excerpt that starts inside a traceback: its frames through DistributedDataParallel
    (or a collective) say the process was one of a process group, so it is not named rank 0 as the
    only process; the same error with no such frame is."""
    from firstfault.pipeline import diagnose_texts

    frame = ('  File "/opt/conda/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", line 1890, in forward\n'
             "    else self._run_ddp_forward(*inputs, **kwargs)\n")
    error = "IndexError: list index out of range\n"
    assert diagnose_texts([("excerpt.log", frame + error)]).initiating.rank is None
    barrier = ('  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 4151, in barrier\n'
               "    work.wait()\n")
    assert diagnose_texts([("excerpt.log", barrier + error)]).initiating.rank is None
    assert diagnose_texts([("excerpt.log", error)]).initiating.rank == 0


# --- launchers that say which ranks a node runs, and pods named for their node ---------------------

def _torchrun_failure(local: int, pid: int) -> str:
    return (f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: {local} "
            f"(pid: {pid}) of binary: /usr/bin/python3\n")


def test_kubeflow_pod_files_give_node_rank_and_host(tmp_path):
    """PyTorchJob: master-0 is node 0, worker-N node N+1; the pod name is the host. Two workers per pod."""
    nproc = "  nproc_per_node   : 2\n"
    _write(tmp_path / "resnet-master-0.log", nproc + "epoch 2 step 300 loss 0.91\n")
    _write(tmp_path / "resnet-worker-0.log", nproc + "epoch 2 step 300 loss 0.92\n")
    _write(tmp_path / "resnet-worker-1.log", nproc + "Traceback (most recent call last):\n"
           '  File "train.py", line 88, in <module>\n    batch = next(it)\n'
           "KeyError: 'pixel_values'\n" + _torchrun_failure(1, 311))
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (5, "resnet-worker-1")


def test_pod_index_says_nothing_without_a_master(tmp_path):
    """Elastic PyTorchJobs have workers only; the rendezvous orders them, not the pod names."""
    nproc = "  nproc_per_node   : 2\n"
    _write(tmp_path / "resnet-worker-0.log", nproc + "epoch 2 step 300 loss 0.92\n")
    _write(tmp_path / "resnet-worker-1.log", nproc + "KeyError: 'pixel_values'\n" + _torchrun_failure(1, 311))
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.initiating.host == "resnet-worker-1"
    assert diagnosis.initiating.rank != 3  # node 1 x 2 + 1 would be a guess


def _pod_job(folder, worker_1_end: str) -> None:
    """A PyTorchJob whose pods run the script itself (one process each): master-0 and two workers."""
    steps = "".join(f"2026-03-01 10:00:0{step},000 INFO step {step} loss 0.9\n" for step in range(5))
    _write(folder / "bert-master-0.log", steps + "2026-03-01 10:00:09,000 " + PEER_CLOSED + "\n")
    _write(folder / "bert-worker-0.log", steps + "2026-03-01 10:00:09,100 " + PEER_CLOSED + "\n")
    _write(folder / "bert-worker-1.log", steps + worker_1_end)


def test_a_pod_that_ran_one_process_is_its_node_rank(tmp_path):
    """Without a launcher in the pod, PyTorchJob's RANK is the node rank: worker-1 is rank 2."""
    _pod_job(tmp_path, "Bus error (core dumped)\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, "bert-worker-1")


def test_a_pod_that_ran_a_launcher_or_another_ranks_lines_is_no_rank(tmp_path):
    # torchrun in the pod (its report of a worker's exit): several processes, the node rank is no rank
    _pod_job(tmp_path / "launcher", "Bus error (core dumped)\n" + _torchrun_failure(0, 311))
    assert diagnose_paths([str(tmp_path / "launcher")]).initiating.rank != 2
    # its lines name rank 5: the pod is not one process of node rank 2
    _pod_job(tmp_path / "other", "[rank5]: Traceback (most recent call last):\n[rank5]: KeyError: 'pixel_values'\n")
    assert diagnose_paths([str(tmp_path / "other")]).initiating.rank == 5


ASSERT = "/pytorch/aten/src/ATen/native/cuda/Loss.cu:242: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"


def _declaring_files(folder, declaration, failing: int = 2, ranks: int = 4) -> None:
    """One file per process under a name that says nothing; each declares itself at start-up."""
    for rank in range(ranks):
        end = ASSERT if rank == failing else "step 10 loss 0.9\n"
        _write(folder / f"out-{'abcd'[rank]}.log", declaration.format(rank=rank) + "step 9 loss 1.0\n" + end)


@pytest.mark.parametrize("declaration", [
    "Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank}/4\n",  # Lightning
    "| distributed init (rank {rank}): env://\n",  # fairseq
    "Namespace(arch='deepv3', fp16=True, local_rank={rank}, world_size=4)\n",  # argparse, torch.distributed.launch
])
def test_a_file_whose_process_declares_its_rank_is_that_ranks(tmp_path, declaration):
    _declaring_files(tmp_path, declaration)
    assert diagnose_paths([str(tmp_path)]).initiating.rank == 2


def test_a_declaration_is_no_files_rank_when_it_may_not_be_the_files_own(tmp_path):
    # every process printed the script's default (rank=0): no file is told apart
    _declaring_files(tmp_path / "default", "Namespace(lr=0.1, rank=0, world_size=4)\n")
    assert diagnose_paths([str(tmp_path / "default")]).initiating.rank is None
    # one console of several processes, where one printed its arguments: not that process's file
    _write(tmp_path / "console" / "train.log", "Namespace(lr=0.1, local_rank=0, world_size=4)\nstep 9 loss 1.0\n" + ASSERT)
    assert diagnose_paths([str(tmp_path / "console")]).initiating.rank is None


def test_torchrun_rendezvous_result_names_the_nodes_global_ranks(tmp_path):
    """An agent's console: its rendezvous result lists the global ranks it runs; [defaultN] is local."""
    result = ("INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:\n"
              "  restart_count=0\n  master_addr=10.1.0.4\n  master_port=29500\n  group_rank={node}\n"
              "  group_world_size=2\n  local_ranks=[0, 1]\n  role_ranks={ranks}\n  global_ranks={ranks}\n"
              "  role_world_sizes=[4, 4]\n  global_world_sizes=[4, 4]\n")
    _write(tmp_path / "agent-a.log", result.format(node=0, ranks="[0, 1]") + "[default0]:step 10 loss 1.2\n")
    _write(tmp_path / "agent-b.log", result.format(node=1, ranks="[2, 3]") +
           "[default1]:Traceback (most recent call last):\n[default1]:ValueError: expected 3 channels, got 4\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.initiating.rank == 3


def test_an_agent_running_one_worker_owns_its_unprefixed_lines(tmp_path):
    """A pod's console with one worker: the agent's own lines (a SIGTERM it received) are that rank's."""
    result = ("INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:\n"
              "  group_rank={node}\n  local_ranks=[0]\n  global_ranks=[{node}]\n")
    _write(tmp_path / "a.log", result.format(node=0) + "step 7 loss 2.0\nstep 8 loss 1.9\n")
    _write(tmp_path / "b.log", result.format(node=1) + "step 7 loss 2.0\n"
           "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death signal, shutting down workers\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "preempted-sigterm"
    assert diagnosis.initiating.rank == 1


def test_spawn_names_the_process_whose_traceback_it_reraises(tmp_path):
    """torch.multiprocessing.spawn: `-- Process N terminated with the following error:` then N's traceback."""
    _write(tmp_path / "out.log",
           "epoch 0 step 4 loss 1.1\nTraceback (most recent call last):\n  File \"main.py\", line 9, in <module>\n"
           "    mp.spawn(run, nprocs=4)\n"
           "torch.multiprocessing.spawn.ProcessRaisedException: \n\n-- Process 2 terminated with the following error:\n"
           "Traceback (most recent call last):\n  File \"main.py\", line 31, in run\n    loss = crit(out, y)\n"
           "RuntimeError: shape '[8, 10]' is invalid for input of size 70\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert diagnosis.initiating.rank == 2
    assert diagnosis.initiating.text.startswith("RuntimeError: shape")


def test_srun_task_exit_report_names_the_rank_the_kernel_killed(tmp_path):
    """srun --label, one task per rank: `task 3: Killed` is the launcher naming the rank; dmesg gives the cause."""
    _write(tmp_path / "slurm-88121.out",
           "".join(f"{task}: step 120 loss 0.4{task}\n" for task in range(4))
           + "srun: error: a100-n07: task 3: Killed\n"
           + "0: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.2.0.7]:41022\n"
           + "srun: error: a100-n07: task 0: Exited with exit code 1\n")
    _write(tmp_path / "dmesg-a100-n07.txt",
           "[Mon Jun  2 04:11:09 2025] Out of memory: Killed process 771203 (python3) total-vm:80148080kB, anon-rss:61473540kB\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "host-oom-killed"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (3, "a100-n07")


def test_a_shells_kill_report_in_a_ranks_own_log_names_the_pid_the_kernel_killed(tmp_path):
    """`python train.py > rank1.log 2>&1` under a shell: the shell reports the death of the process it
    started in that process's own log, so the pid dmesg names is rank 1's (a real torch 1.13 run,
    where nothing else declares the job's size). In a console of several processes it says nothing."""
    _write(tmp_path / "rank0.log", "step 5 loss 0.41\n" + PEER_CLOSED + "\n")
    _write(tmp_path / "rank1.log", "step 5 loss 0.40\nbash: line 1: 26062 Killed                  python train.py\n")
    _write(tmp_path / "dmesg.txt",
           "[Sun Dec  6 07:35:35 2026] Out of memory: Killed process 26062 (python) total-vm:2787688kB, anon-rss:384112kB\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "host-oom-killed"
    assert diagnosis.initiating.rank == 1
    (tmp_path / "rank1.log").unlink()
    _write(tmp_path / "console.log", "[rank0]: step 5 loss 0.41\n[rank1]: step 5 loss 0.40\n"
           "bash: line 1: 26062 Killed                  torchrun --nproc-per-node 2 train.py\n")
    assert diagnose_paths([str(tmp_path)]).initiating.rank is None


def test_a_local_rank_on_one_of_two_nodes_is_not_taken_for_its_global_rank(tmp_path):
    """Two nodes' consoles, cut to their last lines: torchrun on gpu-b07 reports local rank 5
    failing, and only its failure table says that worker is global rank 13. With files from two
    hosts, a local rank is its global rank only where the node's first rank is known."""
    _write(tmp_path / "slurm-88231-gpu-b06.out",
           "".join(f"[rank{r}]:[E529 14:53:52.1 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
                   f"operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600010 "
                   f"milliseconds before timing out.\n" for r in range(2)))
    _write(tmp_path / "slurm-88231-gpu-b07.out",
           "E0529 14:43:52.118000 71001 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) "
           "local_rank: 5 (pid: 71219) of binary: /usr/bin/python3\n"
           "Root Cause (first observed failure):\n[0]:\n  time      : 2025-05-29_14:43:52\n  host      : gpu-b07\n"
           "  rank      : 13 (local_rank: 5)\n  exitcode  : -9 (pid: 71219)\n  error_file: <N/A>\n"
           "  traceback : Signal 9 (SIGKILL) received by PID 71219\n")
    _write(tmp_path / "dmesg-gpu-b07.txt",
           "[Thu May 29 14:43:50 2025] Memory cgroup out of memory: Killed process 71219 (python3) "
           "total-vm:187214332kB, anon-rss:96120044kB, file-rss:412388kB, shmem-rss:28116kB\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "host-oom-killed"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (13, "gpu-b07")


def _started_at(folder, name: str, text: str) -> tuple:
    """(rank, host) where the diagnosis of one log file says the failure started."""
    _write(folder / name, text)
    initiating = diagnose_paths([str(folder)]).initiating
    return initiating.rank, initiating.host


def test_a_line_that_names_its_node_gives_the_host(tmp_path):
    """Megatron's rerun check pairs rank and node in its message; no prefix or file name says the host."""
    assert _started_at(tmp_path, "train.log",
                       " iteration     1200/  50000 | lm loss: 2.41 | grad norm: 0.88\n"
                       "[rank5]: RuntimeError: Rank 5, node h100-b12, device 5, iteration 1201: Unexpected result nan "
                       "(message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel "
                       "communication collective')\n") == (5, "h100-b12")


@pytest.mark.parametrize("report", [
    "task 2: Aborted",  # died by SIGABRT, printed nothing: Slurm's strsignal() text
    "task 2: Exited with exit code 139",  # a wrapper script's python segfaulted: bash exits 128 + 11
])
def test_srun_report_of_a_native_crash_names_that_task(tmp_path, report):
    _write(tmp_path / "slurm-5521.out",
           "".join(f"{task}: iteration 880 | loss 3.02\n" for task in range(4))
           + f"srun: error: node-b3: {report}\n"
           + "1: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.4.0.3]:23011\n"
           + "srun: error: node-b3: tasks 0-1,3: Exited with exit code 1\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id in ("native-crash", "collective-timeout-peer-crash")
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, "node-b3")


def test_sagemaker_mpi_prefix_names_rank_and_host(tmp_path):
    assert _started_at(tmp_path, "algo-1-1700000000.log",
                       "".join(f"[1,mpirank:{r},algo-{1 + r // 4}]<stdout>:step 50 loss 1.9\n" for r in range(8))
                       + "[1,mpirank:6,algo-2]<stderr>:IndexError: index 50304 is out of bounds for dimension 0 with size 50257\n"
                       + f"[1,mpirank:1,algo-1]<stderr>:{PEER_CLOSED}\n") == (6, "algo-2")


def test_kubectl_prefix_names_the_pod_as_host(tmp_path):
    assert _started_at(tmp_path, "job.log",
                       "[pod/llm-sft-worker-0/pytorch] [rank2]: step 10 loss 2.2\n"
                       "[pod/llm-sft-worker-1/pytorch] [rank5]: KeyError: 'input_ids'\n"
                       f"[pod/llm-sft-worker-0/pytorch] [rank2]: {PEER_CLOSED}\n") == (5, "llm-sft-worker-1")


def test_ray_task_error_names_the_workers_node(tmp_path):
    """The worker's lines carry its pid (Ray's prefix) and rank; Ray's task error pairs that pid with its node."""
    assert _started_at(tmp_path, "job-driver-raysubmit_8Jq2.log",
                       "(RayTrainWorker pid=1436) [rank2]: epoch 0 step 40 loss 2.31\n"
                       "(RayTrainWorker pid=2270) [rank3]: epoch 0 step 40 loss 2.29\n"
                       "(RayTrainWorker pid=1436) IndexError: index out of range in self\n"
                       "ray.exceptions.RayTaskError(IndexError): ray::RayTrainWorker._RayTrainWorker__execute() "
                       "(pid=1436, ip=172.31.33.87, repr=<ray.train._internal.worker_group.RayTrainWorker object at 0x7f>)\n"
                       ) == (2, "172.31.33.87")


_TABLE_FOR_RANK_3 = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Root Cause (first observed failure):
[0]:
  time      : 2026-07-02_13:47:10
  host      : sft-node-09
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 60214)
"""


@pytest.mark.parametrize("size_line, host", [
    ("[INFO:swift] rank: 0, local_rank: 0, world_size: 4, local_world_size: 4", "sft-node-09"),
    ("+ NPROC_PER_NODE=4 swift sft --model m", "sft-node-09"),
    # two nodes of two: rank 2 runs on the other node, which no line names
    ("+ torchrun --nnodes 2 --nproc_per_node 2 train.py", None),
])
def test_the_one_named_host_of_a_single_node_job_is_every_ranks(tmp_path, size_line, host):
    """The failure table names the host of another rank; a job of one node (its per-node size
    said as a flag, an environment variable or a start-up line) runs every rank there."""
    _write(tmp_path / "train.log", size_line + "\n"
           "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.10 GiB\n"
           + _TABLE_FOR_RANK_3)
    diagnosis = diagnose_paths([str(tmp_path)])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, host)
    assert {row.rank: row.host for row in diagnosis.ranks}.get(2) == host  # the table says what the verdict says


def test_a_shared_consoles_unlabelled_progress_is_not_given_to_the_one_rank_named(tmp_path):
    """Four processes print to one console without prefixes; the failure table names rank 2.
    The progress lines could be any rank's (here rank 0 alone evaluates): rank 2's row does not
    take them."""
    _write(tmp_path / "slurm.out", "+ python -m torch.distributed.run --standalone --nnodes=1 --nproc-per-node=4 rnn.py\n"
           "ep 12 'dev' eval, step 500, ce 1.610, 0.290 sec/step\nep 12 'dev' eval, step 1000, ce 1.600, 0.306 sec/step\n"
           "RuntimeError: Socket Timeout\n[2024-09-17 08:57:50,402] torch.distributed.elastic.multiprocessing.api: [ERROR] "
           "failed (exitcode: 1) local_rank: 2 (pid: 60214) of binary: /usr/bin/python3.11\n" + _TABLE_FOR_RANK_3.replace("rank      : 3 (local_rank: 3)", "rank      : 2 (local_rank: 2)"))
    rows = {row.rank: row for row in diagnose_paths([str(tmp_path)]).ranks}
    assert rows[2].last_step is None and rows[2].last_progress is None


def test_a_torchrun_agent_with_no_rank_in_view_is_not_a_single_process_job():
    """torchrun started the job, so it ran as many processes as the logs do not say: a failure no
    line ties to a rank names none (it was read as "the only process, rank 0"); a plain python
    process that failed alone is still rank 0."""
    from firstfault.pipeline import diagnose_texts

    agent = ('  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 923, in _invoke_run\n'
             "    time.sleep(monitor_interval)\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4137 got signal: 15\n")
    cancel = "slurmstepd: error: *** JOB 895902 ON gpu-a07 CANCELLED AT 2026-12-03T07:03:24 DUE TO TIME LIMIT ***\n"
    stopped = diagnose_texts([("console.log", agent), ("slurm-895902.out", cancel)])
    assert stopped.primary.failure_id == "preempted-sigterm" and stopped.initiating.rank is None
    alone = diagnose_texts([("train.log", "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
                                          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")])
    assert alone.initiating.rank == 0


MPIRUN_FIRST_EXIT_REPORT = """--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[15921,1],{rank}]
  Exit code:    1
--------------------------------------------------------------------------
"""


@pytest.mark.parametrize("rank", [1, 3])
def test_mpirun_s_report_of_the_first_process_to_exit_names_its_rank(tmp_path, rank):
    """A thread's excerpt of an mpirun console (a real run's last lines): only the peers' lost
    connections are left of the ranks' own lines, and Open MPI's end report names the process
    that exited first with an error by its rank, `[[J,1],R]`."""
    peers = "".join(f"[rank{peer}]: {PEER_CLOSED}\n" for peer in range(4) if peer != rank)
    _write(tmp_path / "console.log", peers + MPIRUN_FIRST_EXIT_REPORT.format(rank=rank))
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "collective-timeout-peer-crash"
    assert diagnosis.initiating.rank == rank


def test_mpirun_s_report_of_a_signal_death_names_the_rank_and_its_node(tmp_path):
    _write(tmp_path / "console.log", f"[rank0]: {PEER_CLOSED}\n[rank2]: {PEER_CLOSED}\n"
           "--------------------------------------------------------------------------\n"
           "mpirun noticed that process rank 1 with PID 0 on node gpu-b04 exited on signal 11 (Segmentation fault).\n"
           "--------------------------------------------------------------------------\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (1, "gpu-b04")


def test_ranks_that_name_themselves_in_one_console_are_not_one_process(tmp_path):
    """A console of several ranks without prefixes (mpirun, spawn, torch before 2.2) whose lines
    name their rank in the message: a stop that names no rank is not `the only process`'s."""
    _write(tmp_path / "console.log", "".join(
        f"2026-12-06 14:43:31,68{rank} INFO train: epoch 0: rank {rank} shard has 128 samples -> 8 steps\n" for rank in range(4))
        + "2026-12-06 14:43:31,905 INFO train: epoch 0 step 8/8 loss 1.3497 acc 0.375\n")
    _write(tmp_path / "slurm-279162.out",
           "slurmstepd: error: *** JOB 279162 ON vm CANCELLED AT 2026-12-06T14:43:39 DUE TO TIME LIMIT ***\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.primary.failure_id == "preempted-sigterm"
    assert diagnosis.initiating.rank is None
    assert "rank-only-process" not in {step.rule for step in diagnosis.because}
