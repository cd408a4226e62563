"""Engine-side signatures that are not failures of their own: they give the correlator context.

- `frame`: the collective a rank was in when it failed (a traceback frame in distributed_c10d.py,
  or the autograd engine for DDP's gradient all-reduce).
- `failed`: generic signs that something failed (a traceback header, a non-zero exit), used to
  tell `unknown` from `healthy` when no entry explains the failure.
- `nonfatal-exception`: the start of a traceback Python printed without stopping the process.
"""
from __future__ import annotations

from ..model import Signature

CONTEXT_ENTRY = ""


def _context(name: str, pattern: str) -> Signature:
    return Signature(entry_id=CONTEXT_ENTRY, name=name, role="context", weight=0.0, pattern=pattern)


CONTEXT_SIGNATURES: tuple[Signature, ...] = (
    _context("frame", r'distributed_c10d\.py", line \d+,? in (?P<op>[a-z_]+)'),
    _context("frame-backward", r'(?P<op>_engine_run_backward|run_backward)\('),
    _context("launcher-failed", r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)"),
    # DeepSpeed's launcher: which local rank died, and each node's rank and process count
    _context("launcher-failed-deepspeed", r"sigkill_handler\] \[.*'--local_rank=(?P<local>\d+)'.*\] exits with return code = (?P<code>-?\d+)"),
    # torch.multiprocessing.spawn: the index of the process that died (its local rank); a SIGTERM
    # it received is the others' teardown, not a failure
    _context("launcher-failed-spawn", r"(?i)process (?P<local>\d+) terminated with (?:exit code (?P<code>-?\d+)|signal (?P<signal>SIG(?!TERM\b)[A-Z]+)|the following error)"),
    # srun's report of a task's end (Slurm prints the exit code, or strsignal() of the signal); a
    # task srun terminated itself ("Terminated") is the others' teardown, not a failure
    _context("launcher-failed-srun", r"srun: error: [\w.-]+: tasks? (?P<task>\d+)(?:[-,][\d,-]*)?: (?:Exited with exit code (?P<code>\d+)|(?P<signal>Killed|Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Out Of Memory)\b)"),
    _context("launcher-node", r"nnodes=(?P<nnodes>\d+), num_local_procs=(?P<local_procs>\d+), node_rank=(?P<node_rank>\d+)"),
    # Which GPU (PCI bus) each rank drives, so host-level events (Xid, ECC) can name a rank:
    # NCCL init lines carry rank + busId, nvidia-smi lines carry the GPU index + bus id.
    _context("device-nccl-bus", r"\brank (?P<rank>\d+) nranks \d+ cudaDev (?P<device>\d+)(?: nvmlDev \d+)? busId (?P<bus>[0-9a-fA-F]+)"),
    _context("device-smi-bus", r"\bGPU ?(?P<device>\d{1,2})[: ][^\n]{0,40}?(?:[0-9A-Fa-f]{4,8}:)(?P<bus>[0-9A-Fa-f]{2}):[0-9A-Fa-f]{2}\.\d"),
    # (torchrun's flag, DeepSpeed's launcher, torchrun's launch-config block `nproc_per_node   : 8`)
    _context("launcher-nproc", r"--nproc[_-]per[_-]node[= ](?P<nproc>\d{1,3})\b|\bnum_local_procs=(?P<procs>\d{1,3})\b|^\s*nproc_per_node\s+: (?P<config>\d{1,3})\s*$"),
    # torchrun's rendezvous result (INFO): the global ranks this node's agent runs, in local-rank order
    _context("launcher-rendezvous-ranks", r"^\s*global_ranks=\[(?P<ranks>\d+(?:, ?\d+)*)\]\s*$"),
    _context("launcher-world-info", r"WORLD INFO DICT: \{(?P<world>[^}\n]+)\}"),
    # Hosts named in the text: torchrun's failure table, Slurm, shell prompts, init lines, mpirun
    _context("host-table-row", r"\bhost\s{2,}: (?P<host>[A-Za-z0-9][\w.-]*)"),
    _context("host-srun-task", r"srun: error: (?P<host>[A-Za-z0-9][\w.-]*): tasks? (?P<task>\d+)(?:-\d+)?(?:,[\d,-]+)?: "),
    _context("host-slurm-cancel", r"\*\*\* (?:JOB|STEP) [\d.]+ ON (?P<host>[A-Za-z0-9][\w.-]*) CANCELLED"),
    _context("host-running-on", r"(?i)\b(?:running on (?:host |node )?|nodes?=|SLURM_(?:JOB_)?NODELIST=|SLURMD_NODENAME=|hostname[=:] ?)(?P<host>[A-Za-z][\w-]*\d[\w.-]*)(?:\s|$|,)"),
    _context("host-prompt", r"@(?P<host>[A-Za-z0-9][\w.-]*)(?::[~/][^\s]*[$#]|\s+[^\s\]]+\][$#])"),
    _context("host-rank-pair", r"\brank[=: ](?P<rank>\d{1,6})\b.*?\bhost(?:name)?[=: ] ?(?P<host>[A-Za-z0-9][\w.-]*)"),
    # Megatron's rerun state machine: `Rank 2, node dcfai-xe9680-01, device 2, iteration 9: Unexpected result nan`
    _context("host-rank-node-pair", r"(?<![Ll]ocal )(?<![Ll]ocal_)\b[Rr]ank[=: ](?P<rank>\d{1,6}),? (?:on )?node[=: ] ?(?P<host>[A-Za-z][\w-]*\d[\w.-]*?)[,;:)]?(?:\s|$)"),
    # Ray's task and actor errors name the worker's pid and node: `ray::PolicyWorker.forward_backward() (pid=88231, ip=10.40.2.11, ...`
    _context("host-ray-pid-ip", r"\(pid=(?P<pid>\d+), ip=(?P<host>\d{1,3}(?:\.\d{1,3}){3})[,)]"),
    # Ray's raylet names the node it killed workers on: `at node (ID: 3f9a…, IP: 10.0.167.26)`
    _context("host-ray-node-ip", r"\bat node \(ID: [0-9a-f]+, IP: (?P<host>\d{1,3}(?:\.\d{1,3}){3})\)"),
    _context("host-mpirun-rank", r"process rank (?P<rank>\d{1,6}) with PID \d+ on node (?P<host>[A-Za-z0-9][\w.-]*)"),
    # Where a process was when a hang was ended or dumped: a traceback or faulthandler frame, and
    # the markers of a stack taken from a hung process (Ctrl-C, faulthandler's dump_traceback_later)
    _context("stack-frame", r'File "(?P<file>[^"\n]+)", line \d+,? in (?P<func>[\w<>.]+)'),
    _context("hang-stack-marker", r"(?:^|\]:) ?(?:KeyboardInterrupt\s*$|Timeout \(\d+:\d\d:\d\d\)!)"),
    # NCCL choosing the loopback interface: right on one host, a fault when peers are on others
    _context("nccl-loopback-interface", r"NCCL INFO (?:Bootstrap|NET/Socket|NET) ?: Using (?:interface )?(?:\[\d+\])?(?P<interface>lo):(?P<address>127\.[\d.]+)"),
    _context("failed-traceback", r"Traceback \(most recent call last\)"),
    # Python prints these tracebacks and goes on: an exception raised in a destructor or at
    # interpreter shutdown, in a background thread, in a multiprocessing queue's feeder thread
    _context("nonfatal-exception", r'Exception ignored in\b|Exception in thread \S+(?: \([^)\n]*\))?:|multiprocessing/queues\.py", line \d+, in _feed'),
    _context("failed-exit", r"(?i)(?:exit ?code|exit status|exited with (?:code|status))\s*[:=]?\s*(?P<code>-?[1-9]\d*)"),
    _context("failed-signal", r"(?i)(?:Segmentation fault|core dumped|Aborted \(core|fatal error|Fatal Python error|\bKilled\b)"),
    _context("failed-word", r"(?:\bERROR\b|\bFATAL\b|\bCRITICAL\b|\berror: )"),
)

FRAME_SIGNATURES = ("frame", "frame-backward")
STACK_FRAME = "stack-frame"
TRACEBACK_HEADER = "failed-traceback"
HANG_STACK_MARKER = "hang-stack-marker"
HOST_PAIRS = ("host-rank-pair", "host-rank-node-pair", "host-mpirun-rank")  # lines naming a rank and its host
HOST_SIGNATURES = ("host-table-row", "host-srun-task", "host-slurm-cancel", "host-running-on", "host-prompt",
                   "host-ray-node-ip", "host-ray-pid-ip", *HOST_PAIRS)
LAUNCHER_WORLD = "launcher-world-info"
LAUNCHER_RANKS = "launcher-rendezvous-ranks"
NCCL_LOOPBACK = "nccl-loopback-interface"
LAUNCHER_NPROC = "launcher-nproc"
NONFATAL = "nonfatal-exception"
LAUNCHER_FAILED = ("launcher-failed", "launcher-failed-deepspeed", "launcher-failed-spawn", "launcher-failed-srun")
LAUNCHER_NODE = "launcher-node"
DEVICE_BUS = ("device-nccl-bus", "device-smi-bus")
FAILURE_SIGNATURES = (*LAUNCHER_FAILED, "failed-traceback", "failed-exit", "failed-signal", "failed-word")
