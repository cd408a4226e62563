"""The log lines of one synthetic multi-node job, in the formats real clusters write.

Formats follow the lab's real torchrun runs (tests/fixtures/real: the `--tee` prefixes
`[default3]:`, the c10d `[rank11]:` prefix, the train logger, torchelastic's glog lines and its
ChildFailedError report) and the knowledge base's signature examples for what a CPU run cannot
produce: NCCL `host:pid:tid [local_rank]` lines and their init line with the GPU's `busId`, the
watchdog timeout, kernel `NVRM: Xid` lines in `dmesg -T` form (79 fallen off the bus, 48 DBE,
63 row remapping), NCCL's IB async `port error` with the flushed completions (status 5) on the
node whose port went down and retries exhausted (status 12) on its peers. NCCL's WARN lines carry
the source location (`transport/net_ib.cc:1296 NCCL WARN`), as NCCL prints them. Each node
writes its own console (`node<K>.log`) and its kernel log (`dmesg-<host>.txt`), so the host of
every line comes from the logs themselves, as on a real cluster.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

# PCI buses of the eight GPUs of an HGX H100 board, in GPU index order
GPU_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
WATCHDOG_MS = 600_000
PYTHON = "/usr/bin/python"
TRAIN = "/workspace/train.py"


@dataclass(frozen=True)
class Node:
    host: str
    ip: str
    node_rank: int
    gpus: int
    first_pid: int

    def pid(self, local_rank: int) -> int:
        return self.first_pid + 1 + local_rank

    @property
    def agent_pid(self) -> int:
        return self.first_pid


@dataclass(frozen=True)
class Fault:
    """What goes wrong in a job: `kind` (a generator fault name), where and when."""

    kind: str
    node: int  # index into the job's nodes
    local_rank: int
    at: float  # epoch seconds


def python_time(seconds: float) -> str:
    milliseconds = int(round((seconds % 1) * 1000)) % 1000
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f",{milliseconds:03d}"


def glog_time(level: str, seconds: float) -> str:
    micro = int((seconds % 1) * 1_000_000)
    return level + time.strftime("%m%d %H:%M:%S", time.gmtime(seconds)) + f".{micro:06d}"


def dmesg_time(seconds: float) -> str:
    parts = time.gmtime(seconds)
    return "[" + time.strftime("%a %b ", parts) + f"{parts.tm_mday:2d}" + time.strftime(" %H:%M:%S %Y", parts) + "]"


class NodeLog:
    """The console of one node's torchrun agent (`--tee 3`), built line by line."""

    def __init__(self, node: Node, world: int, nccl_info: bool = True) -> None:
        self.node = node
        self.world = world
        self.nccl_info = nccl_info  # NCCL_DEBUG=INFO: its init lines (host, pid, GPU, bus) are printed
        self.lines: list[str] = []

    def global_rank(self, local_rank: int) -> int:
        return self.node.node_rank * self.node.gpus + local_rank

    def tee(self, local_rank: int, text: str) -> None:
        self.lines.append(f"[default{local_rank}]:{text}")

    def agent(self, level: str, seconds: float, where: str, text: str) -> None:
        self.lines.append(f"{glog_time(level, seconds)} {self.node.agent_pid} {where}] {text}")

    def nccl(self, local_rank: int, text: str, tid_offset: int = 80) -> None:
        pid = self.node.pid(local_rank)
        self.tee(local_rank, f"{self.node.host}:{pid}:{pid + tid_offset} [{local_rank}] {text}")

    def info(self, local_rank: int, seconds: float, text: str, level: str = "INFO") -> None:
        self.tee(local_rank, f"{python_time(seconds)} {level} train: {text}")

    def traceback(self, local_rank: int, frames: list[tuple[str, int, str, str]], last: str) -> None:
        rank = f"[rank{self.global_rank(local_rank)}]: "
        self.tee(local_rank, rank + "Traceback (most recent call last):")
        for path, line, function, code in frames:
            self.tee(local_rank, rank + f'  File "{path}", line {line}, in {function}')
            self.tee(local_rank, rank + f"    {code}")
        self.tee(local_rank, rank + last)

    def start(self, started: float, comm_id: str) -> None:
        banner = "*****************************************"
        for text in ("", banner, "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
                     "to avoid your system being overloaded, please further tune the variable for optimal performance "
                     "in your application as needed. ", banner):
            self.agent("W", started, "torch/distributed/run.py:793", text)
        for local in range(self.node.gpus if self.nccl_info else 0):
            self.nccl(local, f"NCCL INFO Bootstrap : Using eth0:{self.node.ip}<0>", tid_offset=0)
        for local in range(self.node.gpus if self.nccl_info else 0):
            self.nccl(local, f"NCCL INFO comm 0x55d0c0a0 rank {self.global_rank(local)} nranks {self.world} cudaDev {local} "
                             f"nvmlDev {local} busId {GPU_BUSES[local]}000 commId 0x{comm_id} - Init COMPLETE")
        for local in range(self.node.gpus):
            self.info(local, started + 2 + local * 0.004,
                      f"rank {self.global_rank(local)}/{self.world} (local rank {local}, pid {self.node.pid(local)}) "
                      f"initialized process group (backend=nccl)")

    def progress(self, started: float, until: float, every: float = 600.0) -> None:
        """Rank 0's loss lines (node 0 only) from the start until `until`."""
        if self.node.node_rank != 0:
            return
        step, moment = 0, started + 30
        while moment < until:
            step += 100
            loss = 3.2 / (1 + step / 2000)
            self.info(0, moment, f"epoch 0 step {step}/20000 loss {loss:.4f} lr 2.00e-04")
            moment += every

    def watchdog_timeouts(self, at: float, seq: int, skip_local: int | None = None) -> None:
        """Every rank of this node (but `skip_local`) times out in the all-reduce the failed rank left."""
        for local in range(self.node.gpus):
            if local == skip_local:
                continue
            rank = self.global_rank(local)
            moment = at + local * 0.001
            self.tee(local, f"[rank{rank}]:[{glog_time('E', moment)} {self.node.pid(local)} ProcessGroupNCCL.cpp:632] "
                            f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                            f"OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)={WATCHDOG_MS}) ran for "
                            f"{WATCHDOG_MS + 43} milliseconds before timing out.")

    def launcher_failure(self, at: float, failed_local: int, exitcode: int, signal_name: str = "") -> None:
        """The agent stops the node's other workers and prints torchelastic's report."""
        for local in range(self.node.gpus):
            if local != failed_local:
                self.agent("W", at, "torch/distributed/elastic/multiprocessing/api.py:897",
                           f"Sending process {self.node.pid(local)} closing signal SIGTERM")
        self.agent("E", at + 0.4, "torch/distributed/elastic/multiprocessing/api.py:869",
                   f"failed (exitcode: {exitcode}) local_rank: {failed_local} (pid: {self.node.pid(failed_local)}) of binary: {PYTHON}")
        rule = "=" * 60
        stamp = time.strftime("%Y-%m-%d_%H:%M:%S", time.gmtime(at))
        traceback = f"  traceback : Signal {-exitcode} ({signal_name}) received by PID {self.node.pid(failed_local)}" if exitcode < 0 else \
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        self.lines += [
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", rule, f"{TRAIN} FAILED", "-" * 60,
            "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60, "Root Cause (first observed failure):", "[0]:",
            f"  time      : {stamp}", f"  host      : {self.node.host}",
            f"  rank      : {self.global_rank(failed_local)} (local_rank: {failed_local})",
            f"  exitcode  : {exitcode} (pid: {self.node.pid(failed_local)})" + (f"  ({signal_name})" if signal_name else " "),
            "  error_file: <N/A>", traceback, rule,
        ]

    def finished(self, at: float, steps: int) -> None:
        if self.node.node_rank == 0:
            self.info(0, at, f"training finished after {steps} steps")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def boot_lines(host: str, booted: float) -> list[str]:
    """What a healthy node's kernel log holds before the job: the driver loading, the IB link up."""
    return [
        f"{dmesg_time(booted)} nvidia: module license 'NVIDIA' taints kernel.",
        f"{dmesg_time(booted + 2)} NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
        f"{dmesg_time(booted + 9)} mlx5_core 0000:1a:00.0 ibp26s0: renamed from ib0",
        f"{dmesg_time(booted + 11)} IPv6: ADDRCONF(NETDEV_CHANGE): ibp26s0: link becomes ready",
        f"{dmesg_time(booted + 40)} systemd-journald[812]: Received client request to flush runtime journal.",
    ]


FRAMES = [(TRAIN, 214, "<module>", "main()"), (TRAIN, 187, "main", "train(args)")]


def code_failure(log: NodeLog, kind: str, local: int, at: float) -> int:
    """A code or data failure on one rank; returns the exit code its process ends with."""
    rank = log.global_rank(local)
    log.info(local, at - 0.2, f"epoch 0: rank {rank} step {int(at) % 5000} data batch loaded")
    if kind == "cuda-oom":
        log.traceback(local, FRAMES + [(TRAIN, 293, "train", "loss.backward()")],
                      f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {local} has a total "
                      f"capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has "
                      f"78.08 GiB memory in use.")
    elif kind == "cuda-device-side-assert":
        for thread in (96, 97):
            log.tee(local, f"/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1422: indexSelectLargeIndex: block: [211,0,0], "
                           f"thread: [{thread},0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
        log.traceback(local, FRAMES + [(TRAIN, 190, "train", "logits = model(input_ids).logits")],
                      "RuntimeError: CUDA error: device-side assert triggered")
        return -6
    elif kind == "loss-nan":
        log.info(local, at, f"rank {rank}: non-finite loss nan at step {int(at) % 5000}", level="ERROR")
        log.traceback(local, FRAMES, "RuntimeError: Non-finite loss detected, stopping training")
    else:  # user-code-exception, as the lab's batch-mismatch run raised it
        log.traceback(local, FRAMES + [(TRAIN, 293, "train", "loss = F.cross_entropy(logits, labels)")],
                      "ValueError: Expected input batch_size (16) to match target batch_size (15).")
    return 1


def import_failure(log: NodeLog, at: float) -> None:
    """Every rank fails at import: a missing package in the job's image, nobody's host."""
    for local in range(log.node.gpus):
        log.traceback(local, [(TRAIN, 12, "<module>", "from flash_attn import flash_attn_func")],
                      "ModuleNotFoundError: No module named 'flash_attn'")


def gpu_fault(log: NodeLog, dmesg: list[str], kind: str, local: int, at: float) -> int:
    """A GPU lost (Xid 79) or an uncorrectable ECC error (Xid 48, then 63): kernel log, then the rank."""
    bus = GPU_BUSES[local]
    if kind == "gpu-fallen-off-bus":
        dmesg.append(f"{dmesg_time(at)} NVRM: Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
        dmesg.append(f"{dmesg_time(at)} NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.")
        error = "unspecified launch failure"
    else:
        dmesg.append(f"{dmesg_time(at)} NVRM: Xid (PCI:0000:{bus}:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
                     f"double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.")
        dmesg.append(f"{dmesg_time(at + 1)} NVRM: Xid (PCI:0000:{bus}:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: "
                     f"New row (0x0d233d8099d3e0b8) marked for remapping, reset gpu to activate.")
        error = "uncorrectable ECC error encountered"
    log.info(local, at + 0.5, f"epoch 0: rank {log.global_rank(local)} step {int(at) % 5000} data batch loaded")
    log.nccl(local, f"enqueue.cc:1556 NCCL WARN Cuda failure '{error}'")
    log.traceback(local, FRAMES + [(TRAIN, 293, "train", "loss.backward()")], f"RuntimeError: CUDA error: {error}")
    return -6


def ib_port_error(log: NodeLog, local: int, at: float, peer_ip: str) -> None:
    """The node's HCA port goes down: NCCL's async event; the queue pairs on the port go to the
    error state, so the node's own work requests in flight are flushed (completion status 5),
    while its peers' retries to it run out (status 12, ib_peer_errors)."""
    log.info(local, at, f"epoch 0: rank {log.global_rank(local)} step {int(at) % 5000} data batch loaded")
    log.nccl(local, "transport/net_ib.cc:105 NCCL WARN NET/IB : Got async event : port error")
    log.nccl(local, f"transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer {peer_ip}<47534> with error 5, "
                    f"opcode 48, len 32764, vendor err 244 (Recv)")


def ib_peer_errors(log: NodeLog, at: float, faulty_ip: str) -> None:
    """The peers of a node whose port went down: retries to it are exhausted (error 12)."""
    for local in range(log.node.gpus):
        log.info(local, at, f"epoch 0: rank {log.global_rank(local)} step {int(at) % 5000} data batch loaded")
        log.nccl(local, f"transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer {faulty_ip}<33092> with "
                        f"error 12, opcode 0, len 0, vendor err 129 (Recv)")
