"""Engine-side signatures that are not failures of their own: they give the correlator context.

- `frame`: the collective a rank was in when it failed (a traceback frame in distributed_c10d.py,
  or the autograd engine for DDP's gradient all-reduce).
- `launcher-*`, `host-*`, `device-*`, `rank-*`, `world-*`: who is who (ranks, local ranks, pids,
  GPUs, PCI buses, hosts, the job's size), read by the identity map (correlate/identity.py).
- `job-*`: how the job ended or went on (finished, restarted, interrupted), read by the outcome rules.
- `failed`: generic signs that something failed (a traceback header, a non-zero exit), used to
  tell `unknown` from `healthy` when no entry explains the failure.
- `nonfatal-exception`: the start of a traceback Python printed without stopping the process.

Like the knowledge base's signatures, each carries lines it must match and near-misses it must
not (tests/engine/test_context_signatures.py runs them all).
"""
from __future__ import annotations

from ..model import Signature

CONTEXT_ENTRY = ""


def _context(name: str, pattern: str, examples: tuple[str, ...], near_misses: tuple[str, ...] = (),
             first_only: bool = False, prefilter: str = "") -> Signature:
    return Signature(entry_id=CONTEXT_ENTRY, name=name, role="context", weight=0.0, pattern=pattern,
                     examples=examples, near_misses=near_misses, first_only=first_only, prefilter=prefilter)


# A glog line at error or fatal level (`E1205 01:35:36.491000 22271 api.py:1008] ...`), and what
# the fast engine looks for in its place: the source file that ends every glog prefix. Anchored at
# a line's start, the pattern is tried at every line of a block (6 % of Hyperscan's time on the
# bench's rank files); the signature's own pattern still decides each line it wakes.
_GLOG_ERROR = r"^[EF]\d{4} [\d:.]+\s+\d+ [\w./-]+\.(?:cc|cpp|cu|h|hpp|py):\d+\]"
_GLOG_SOURCE = r"\.(?:cc|cpp|cu|h|hpp|py):\d+\]"
_ERROR_STATEMENT = (
    r"\b[A-Z]\w*(?:Error|Exception)\b(?::|\(|\s*$)|\b(?:FATAL|PANIC)\b|"
    r"\b(?:[Ff]atal|[Uu]ncorrectable) (?:error|exception|signal)\b|\bNVRM: Xid\b|"
    r"\b(?:has )?fallen off the bus\b|"
    r"\b[Ff]ailed to (?:allocate|load|open|initiali[sz]e|connect|receive|send|recv|create|launch|find)\b|"
    r"\bout of memory\b|\b(?:CUDA|HIP|NCCL|RCCL|cuDNN|CUDNN|cuBLAS|CUBLAS|MIOpen) error\b|"
    r"\b(?:CUDA|HIP|NCCL|RCCL|cuDNN|CUDNN|cuBLAS|CUBLAS|MIOpen) failure\b|\bcore dumped\b|"
    r"\bSegmentation fault\b|\bAborted\b|\bError(?: [Cc]ode \d+)?: |"
    r"\bCould not load (?:dynamic )?library\b|\bcannot open shared object file\b|"
    r"\bOutOfMemory\b|\bOOM\b|\b[Ff]ailed\s*: |\bConnection refused\b|"
    + _GLOG_ERROR + "|"
    r": [EF] [\w/]+\.(?:cc|cpp|h):\d+\]|"
    r"\[[EF](?:\d{4} [\d:.]+)? [\w./-]+\.(?:cc|cpp|cu|h|hpp):\d+\]"
)

_PCI_BUS = r"(?:[0-9A-Fa-f]{4,8}:)(?P<bus>[0-9A-Fa-f]{2}):[0-9A-Fa-f]{2}\.\d"

CONTEXT_SIGNATURES: tuple[Signature, ...] = (
    _context("frame", r'distributed_c10d\.py", line \d+,? in (?P<op>[a-z_]+)',
             ('  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 3744, in barrier',),
             ('  File "/home/user/train.py", line 88, in barrier',)),
    # the backward's call (the frame's source line), or its frame when Python printed no source
    # line (the file not readable where the job ran, or a renderer that showed none)
    _context("frame-backward", r'(?:autograd/graph\.py", line \d+, in |\b)(?P<op>_engine_run_backward|run_backward)(?:\(|$)',
             ("    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
              '  File "/usr/lib/python3/site-packages/torch/autograd/graph.py", line 825, in _engine_run_backward'),
             ("    loss.backward()", '  File "/home/user/graph.py", line 12, in _engine_run_backward_hook')),
    # a traceback through DistributedDataParallel's forward: the process was one of a process group
    # (a log that shows it only from a traceback's end, a thread's excerpt, is still several processes')
    _context("frame-ddp", r'nn/parallel/distributed\.py", line \d+, in \w+',
             ('  File "/opt/conda/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", line 1890, in forward',),
             ('  File "/home/user/nn/parallel/distributed_utils.py", line 12, in forward', "model = DistributedDataParallel(model)"),
             first_only=True),
    # Ray Train v2's controller quotes each failed worker's error under a header naming its rank
    # (`[Rank 0 Error Snippet]:`); a worker whose process died is quoted as Ray's actor-death report
    _context("ray-error-snippet", r"\[Rank (?P<failed_rank>\d{1,6}) Error Snippet\]:",
             ("(TrainController pid=9852) [Rank 0 Error Snippet]:", "[Rank 12 Error Snippet]:"),
             ("[Rank 0] Error: snippet of the config follows",)),
    _context("launcher-failed", r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)",
             ("E0425 09:39:11.882000 311 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: 0 (pid: 318) of binary: /workspace/.venv/bin/python",),
             ("  exitcode  : -6 (pid: 318)",)),
    # DeepSpeed's launcher: that a process exited, and its code. The command it prints is that of the
    # local rank it started last, whichever one exited
    # (deepspeed/launcher/launch.py, sigkill_handler logs the spawn loop's last `cmd` with the failed
    # process's return code): the line names no rank
    _context("launcher-failed-deepspeed", r"sigkill_handler\] \[.*\] exits with return code = (?P<code>-?\d+)",
             ("[2022-07-12 10:51:56,020] [ERROR] [launch.py:184:sigkill_handler] ['/usr/bin/python3', '-u', 'run_pretraining.py', '--local_rank=7', '--model_type', 'bert-mlm'] exits with return code = -6",),
             ("[2022-07-12 10:51:56,020] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 51872",)),
    # torch.multiprocessing.spawn: the index of the process that died (its local rank); a SIGTERM
    # it received is the others' teardown, not a failure
    _context("launcher-failed-spawn", r"(?i)process (?P<local>\d+) terminated with (?:exit code (?P<code>-?\d+)|signal (?P<signal>SIG(?!TERM\b)[A-Z]+)|the following error)",
             ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT",
              "-- Process 1 terminated with the following error:"),
             ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGTERM",)),
    # srun's report of a task's end (Slurm prints the exit code, or strsignal() of the signal); a
    # task srun terminated itself ("Terminated") is the others' teardown, not a failure
    _context("launcher-failed-srun", r"srun: error: [\w.-]+: tasks? (?P<task>\d+)(?:[-,][\d,-]*)?: (?:Exited with exit code (?P<code>\d+)|(?P<signal>Killed|Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Out Of Memory)\b)",
             ("srun: error: gpu-b200-014: task 0: Exited with exit code 1", "srun: error: node-3: tasks 2-3: Killed"),
             ("srun: error: gpu-b200-014: task 1: Terminated",)),
    # Open MPI's mpirun (4.x) on how the job ended, naming the process that ended it by its rank:
    # after `The first process to do so was:` the name of the first process that exited with an
    # error, `Process name: [[J,1],R]` (J's application, rank R; `[[J,0],V]` are mpirun's own
    # daemons), its `Exit code:` on the next line; a signal death on one line (a SIGTERM is mpirun
    # ending the others); `MPI_ABORT was invoked on rank R` (MPI_Abort from a script, Horovod)
    _context("launcher-failed-mpirun", r"^\s*Process name: \[\[\d+,[1-9]\d*\],(?P<rank>\d{1,6})\]\s*$",
             ("  Process name: [[15921,1],1]", "Process name: [[41297,1],4]"),
             ("  Process name: [[15921,0],0]", "HNP daemon   : [[15921,0],0] on node vm", "Process name: [[15921,1],1] (pid 4)")),
    _context("launcher-failed-mpirun-signal",
             r"\bprocess rank (?P<rank>\d{1,6}) with PID \d+ on node \S+ exited on signal (?P<signal>(?!15\b)\d{1,2})\b",
             ("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).",
              "mpirun noticed that process rank 12 with PID 51842 on node gpu-b04 exited on signal 9 (Killed)."),
             ("mpirun noticed that process rank 3 with PID 0 on node node-7 exited on signal 15 (Terminated).",)),
    _context("launcher-failed-mpirun-abort", r"\bMPI_ABORT was invoked on rank (?P<rank>\d{1,6}) in communicator MPI_COMM_WORLD\b",
             ("MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD",),
             ("MPI_ABORT was invoked on rank 3 in communicator MPI COMMUNICATOR 4 SPLIT FROM 0",)),
    _context("launcher-node", r"nnodes=(?P<nnodes>\d+), num_local_procs=(?P<local_procs>\d+), node_rank=(?P<node_rank>\d+)",
             ("[2021-02-26 10:01:04,181] [INFO] [launch.py:87:main] nnodes=1, num_local_procs=2, node_rank=0",),
             ("--nnodes=2 --node_rank=0",)),
    # Which GPU (PCI bus) each rank drives, so host-level events (Xid, ECC) can name a rank:
    # NCCL init lines carry rank + busId, nvidia-smi lines carry the GPU index + bus id.
    _context("device-nccl-bus", r"\brank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<device>\d+)(?: nvmlDev \d+)? busId (?P<bus>[0-9a-fA-F]+)",
             ("tf147:98311:98372 [0] NCCL INFO comm 0x7fa2c8002fb0 rank 0 nranks 2 cudaDev 0 busId 2f000 - Init COMPLETE",
              "node-1:5141:5302 [3] NCCL INFO comm 0x5563 rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 3b000 commId 0x9 - Init START"),
             ("tf147:98311:98372 [0] NCCL INFO Channel 00/02 :    0   1",)),
    _context("device-smi-bus", r"\bGPU ?(?P<device>\d{1,2})[: ][^\n]{0,40}?" + _PCI_BUS,
             ("Unable to determine the device handle for GPU1: 0000:3B:00.0: Unknown Error", "GPU 3: 00000000:3B:00.0"),
             ("GPU 3: NVIDIA A100-SXM4-80GB (UUID: GPU-4a28de72-2645-de9a-eb35-a394cef3f4da)",)),
    # nvidia-smi's own table: a GPU row (index, name, bus id) and a process row (index, pid)
    _context("device-smi-table-bus", r"^\|\s+(?P<device>\d{1,2})\s+[^|\n]{3,60}\|\s*" + _PCI_BUS,
             ("|   2  NVIDIA A100 80GB PCIe          On  | 00000000:4E:00.0 Off |                    1 |",
              "|   6  Tesla V100-SXM2...  On   | 00000000:89:00.0 Off |                    0 |"),
             ("| N/A   39C    P0             72W / 300W |  75212MiB / 81920MiB |    100%      Default |",
              "|    2   N/A  N/A      2213      C   python                                    75200MiB |")),
    _context("device-smi-process", r"^\|\s+(?P<device>\d{1,2})\s+(?:N/A\s+N/A\s+|\d{1,3}\s+\d{1,3}\s+)?(?P<pid>\d{2,8})\s+(?:C|G|C\+G|M|M\+C)\s+\S",
             ("|    2   N/A  N/A      2213      C   python                                    75200MiB |",
              "|    0     41120      C   ...ser/.conda/envs/detr/bin/python  5465MiB |"),
             ("|   2  NVIDIA A100 80GB PCIe          On  | 00000000:4E:00.0 Off |                    1 |",
              "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |")),
    # The kernel's GPU events name the bus and the process whose channel faulted
    _context("device-xid-pid", r"NVRM: Xid \(PCI:(?:[0-9A-Fa-f]{4,8}:)?(?P<bus>[0-9A-Fa-f]{2}):[0-9A-Fa-f]{2}\): \d+, pid=(?P<pid>\d+)",
             ("[Fri Jan 29 23:41:39 2021] NVRM: Xid (PCI:0000:db:00): 31, pid=13641, Ch 00000008, intr 00000000. MMU Fault",
              "[588211.100000] NVRM: Xid (PCI:0000:4e:00): 94, pid=2213, name=python, Contained: SM (0x1). RST: No, D-RST: No"),
             ("[588211.110000] NVRM: Xid (PCI:0000:4e:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked",)),
    # Processes per node: torchrun's flag, DeepSpeed's launcher, torchrun's launch-config block
    # (`nproc_per_node   : 8`), and the per-node size as an environment variable or a script's
    # start-up line prints it (`NPROC_PER_NODE=4` as ms-swift and LLaMA-Factory take it,
    # torchrun's `LOCAL_WORLD_SIZE`, `local_world_size: 4`)
    _context("launcher-nproc", r"--nproc[_-]per[_-]node[= ](?P<nproc>\d{1,3})\b|\bnum_local_procs=(?P<procs>\d{1,3})\b|^\s*nproc_per_node\s+: (?P<config>\d{1,3})\s*$"
             r"|(?<![\w-])(?:NPROC_PER_NODE|LOCAL_WORLD_SIZE|local_world_size)(?:=|: ?)(?P<per_node>\d{1,3})\b",
             ("  nproc_per_node   : 1", "python -m torch.distributed.launch --nproc_per_node=8 train.py",
              "+ NPROC_PER_NODE=4 TORCH_DISTRIBUTED_DEBUG=DETAIL swift sft --model openbmb/MiniCPM-V-4_6",
              "[INFO:swift] rank: 0, local_rank: 0, world_size: 4, local_world_size: 4",
              "LOCAL_RANK=3 RANK=11 LOCAL_WORLD_SIZE=8 WORLD_SIZE=16"),
             ("  nnodes           : 2", "  role_world_sizes=[4, 4, 4, 4]", "export MY_LOCAL_WORLD_SIZE=8",
              "local_world_size must be positive")),
    # torchrun's rendezvous result (INFO): the global ranks this node's agent runs, in local-rank order
    _context("launcher-rendezvous-ranks", r"^\s*global_ranks=\[(?P<ranks>\d+(?:, ?\d+)*)\]\s*$",
             ("  global_ranks=[4, 5, 6, 7]",), ("  role_ranks=[0, 1, 2, 3]",)),
    _context("launcher-world-info", r"WORLD INFO DICT: \{(?P<world>[^}\n]+)\}",
             ("[2021-02-26 10:01:04,181] [INFO] [launch.py:78:main] WORLD INFO DICT: {'localhost': [0, 1]}",),
             ("[2021-02-26 10:01:04,181] [INFO] [launch.py:80:main] dist_world_size=2",)),
    # How many processes the job has, as the launcher or the training script declares it (the
    # first declaration of each file)
    _context("world-size-declared",
             r"(?i)\b(?:dist_world_size|world[_ ]size|WORLD_SIZE)\s*[=:]?\s*(?P<world>\d{1,6})\b|All distributed processes registered\. Starting with (?P<procs>\d{1,6}) processes|\bglobal_world_sizes=\[(?P<sizes>\d{1,6})",
             ("[2022-12-05 10:12:02,900] [INFO] [launch.py:162:main] dist_world_size=8",
              "All distributed processes registered. Starting with 4 processes",
              "Torch: using distributed backend nccl for GPU tensors and gloo group for CPU sync (local_rank 0, world_size 4)"),
             ("world_size must be positive", "  role_world_sizes=[4, 4, 4, 4]"), first_only=True),
    # A launch command's size: accelerate's --num_processes, mpirun/horovodrun's -np, srun's -n,
    # DeepSpeed's --num_gpus on one node
    _context("launcher-size",
             r"(?:--num[_-]processes|\s-np|--ntasks|\bsrun\b[^\n]*?\s-n|--num_gpus)[= ](?P<world>\d{1,6})\b",
             ("+ accelerate launch --num_machines 2 --machine_rank 0 --main_process_ip hgx-c07 --num_processes 16 -m lmms_eval",
              "$ horovodrun --gloo --log-with-timestamp -np 416 -H trn-001:8,trn-002:8 python train.py",
              "$ deepspeed --num_gpus 8 bloom-inference-scripts/bloom-ds-inference.py --name bigscience/bloom"),
             ("--num_workers 8", "srun --nodes=2 python train.py"), first_only=True),
    # A rank's own start-up line names it (and often its host, local rank and the job's size)
    _context("rank-host-declared",
             r"\b[Rr]ank (?P<rank>\d{1,6}) ?(?:/|of) ?(?P<world>\d{1,6})(?:, local[ _]rank (?P<local>\d{1,4}))? on (?:host |node )?(?P<host>(?=[\w.-]*[\d-])[A-Za-z0-9][\w.-]*[A-Za-z0-9])(?:, local[ _]rank (?P<local_after>\d{1,4}))?",
             ("[1,0]<stdout>:initializing (rank 0/8 on dgx-17, local_rank 0)",
              "Wed Jun 10 22:41:24 2020[400]<stdout>:Horovod: rank 400 of 416, local rank 0 on host trn-051"),
             ("rank 0 of 8 joined the group", "Epoch 3 rank 0/8 on average 12.1 s per step")),
    _context("rank-declared",
             r"distributed init \(rank (?P<rank>\d{1,6})\)|Initializing distributed: GLOBAL_RANK: (?P<global>\d{1,6})|\bworld_size\s*=\s*\d{1,6},\s*rank\s*=\s*(?P<pair>\d{1,6})\b",
             ("| distributed init (rank 5): env://", "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4",
              "[2020-08-06 10:41:03,214 - train - INFO] - [Process 11820] world_size = 4, rank = 0, backend=nccl"),
             ("| distributed init (rank unknown): env://",)),
    # argparse's dump of a script's arguments at start-up names its process's rank or local rank
    # (`Namespace(..., local_rank=5, ...)`: torch.distributed.launch passes --local_rank); a file
    # of one process that prints it is that rank's (correlate/ranks.py with_declared_file_ranks)
    _context("args-rank-declared", r"\bNamespace\((?:[^\n]*?\s)?rank=(?P<rank>\d{1,6})\b",
             ("Namespace(apex=True, arch='network.deepv3.DeepWV3Plus', dist_url='env://', fp16=True, local_rank=5, rank=5, world_size=8)",),
             ("Namespace(local_rank=5, world_size=8)", "Namespace(apex=True, node_rank=1, lr=0.01)")),
    _context("args-local-rank-declared", r"\bNamespace\((?:[^\n]*?\s)?local_rank=(?P<local>\d{1,4})\b",
             ("Namespace(apex=True, arch='network.deepv3.DeepWV3Plus', fp16=True, local_rank=5, rank=5, world_size=8)",
              "Namespace(local_rank=0)"),
             ("Namespace(apex=True, local_rank=-1, lr=0.01)", "args.local_rank=3")),
    # Hosts named in the text: torchrun's failure table, Slurm, shell prompts, init lines, mpirun
    _context("host-table-row", r"\bhost\s{2,}: (?P<host>[A-Za-z0-9][\w.-]*)",
             ("  host      : tri-gpu-14",), ("  host: tri-gpu-14",)),
    _context("host-srun-task", r"srun: error: (?P<host>[A-Za-z0-9][\w.-]*): tasks? (?P<task>\d+)(?:-\d+)?(?:,[\d,-]+)?: ",
             ("srun: error: gpu-b200-014: task 0: Exited with exit code 1",),
             ("srun: error: Unable to create step for job 7712: Job/step already completing or completed",)),
    _context("host-slurm-cancel", r"\*\*\* (?:JOB|STEP) [\d.]+ ON (?P<host>[A-Za-z0-9][\w.-]*) CANCELLED",
             ("slurmstepd: error: *** JOB 608 ON gpu-c12 CANCELLED AT 2022-08-12T02:06:12 DUE TO JOB REQUEUE ***",),
             ("scancel 608",)),
    _context("host-running-on", r"(?i)\b(?:running on (?:host |node )?|nodes?=|SLURM_(?:JOB_)?NODELIST=|SLURMD_NODENAME=|hostname[=:] ?)(?P<host>[A-Za-z][\w-]*\d[\w.-]*)(?:\s|$|,)",
             ("submitit INFO (2022-07-12 04:17:53,762) - Starting with JobEnvironment(job_id=60601445, hostname=learnfair0293, local_rank=0(2), node=0(1), global_rank=0(2))",
              "SLURMD_NODENAME=gpu-a17"),
             ("running on host-side memory",)),
    _context("host-prompt", r"@(?P<host>[A-Za-z0-9][\w.-]*)(?::[~/][^\s]*[$#]|\s+[^\s\]]+\][$#])",
             ("root@a192be7bc1bc:/workspace/kohya_ss# bash gui.sh --share", "[root@cn119 ~]# ps -aux | grep 1395"),
             ("contact: user@example.com for access",)),
    _context("host-rank-pair", r"\brank[=: ](?P<rank>\d{1,6})\b.*?\bhost(?:name)?[=: ] ?(?P<host>[A-Za-z0-9][\w.-]*)",
             ("init: rank=5 local_rank=5 host=node018 device=cuda:5",), ("rank=5 local_rank=5 device=cuda:5",)),
    # Megatron's rerun state machine: `Rank 2, node dcfai-xe9680-01, device 2, iteration 9: Unexpected result nan`
    _context("host-rank-node-pair", r"(?<![Ll]ocal )(?<![Ll]ocal_)\b[Rr]ank[=: ](?P<rank>\d{1,6}),? (?:on )?node[=: ] ?(?P<host>[A-Za-z][\w-]*\d[\w.-]*?)[,;:)]?(?:\s|$)",
             ("[rerun_state_machine.py:1101] Rank 2, node dcfai-xe9680-01, device 2, iteration 9: Unexpected result nan",),
             ("local rank 2, node gpu-07, device 2",)),
    # Ray's task errors name the worker's pid and node: `ray::PolicyWorker.forward_backward() (pid=88231, ip=10.40.2.11, ...`
    _context("host-ray-pid-ip", r"\(pid=(?P<pid>\d+), ip=(?P<host>\d{1,3}(?:\.\d{1,3}){3})[,)]",
             ("ray.exceptions.RayTaskError(RuntimeError): ray::_Inner.train() (pid=2211, ip=192.168.1.20, repr=TorchTrainer)",),
             ("(RayTrainWorker pid=2211) Loading checkpoint",)),
    # Ray's raylet names the node it killed workers on: `at node (ID: 3f9a…, IP: 10.0.167.26)`
    _context("host-ray-node-ip", r"\bat node \(ID: [0-9a-f]+, IP: (?P<host>\d{1,3}(?:\.\d{1,3}){3})\)",
             ("1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 3f9a1c, IP: 10.0.167.26) over the last time period.",),
             ("Started a local Ray instance. View the dashboard at 127.0.0.1:8265",)),
    _context("host-mpirun-rank", r"process rank (?P<rank>\d{1,6}) with PID \d+ on node (?P<host>[A-Za-z0-9][\w.-]*)",
             ("mpirun noticed that process rank 0 with PID 19 on node fe535b5ccf9b exited on signal 11 (Segmentation fault).",),
             ("Process name: [[41297,1],4]",)),
    # Where a process was when a hang was ended or dumped: a traceback or faulthandler frame, and
    # the markers of a stack taken from a hung process (Ctrl-C, faulthandler's dump_traceback_later)
    _context("stack-frame", r'File "(?P<file>[^"\n]+)", line \d+,? in (?P<func>[\w<>.]+)',
             ('  File "/usr/lib/python3.8/multiprocessing/queues.py", line 245, in _feed',), ("File not found: config.yaml",)),
    _context("hang-stack-marker", r"(?:^|\]:) ?(?:KeyboardInterrupt\s*$|Timeout \(\d+:\d\d:\d\d\)!)",
             ("KeyboardInterrupt", "Timeout (0:10:00)!"), ("Press Ctrl-C (KeyboardInterrupt) to stop",)),
    # How the job ended, as the launcher, the scheduler or the operator's terminal shows it
    _context("job-interrupted",
             r"^\^C|(?i:\binterrupted by (?:the )?user\b)|\bKeyboardInterrupt\s*$|mpirun: abort is already in progress|Received SIGINT\b|\bsignal 2 \(SIGINT\)",
             ("^CTraceback (most recent call last):",
              "2025-06-21 15:46:45|ERROR: Benchmark command was interrupted by the user (KeyboardInterrupt). Partial results may be in /local/tmp",
              "^Cmpirun: abort is already in progress...hit ctrl-c again to forcibly terminate"),
             ("Press ^C to stop the server", "Use Ctrl-C (KeyboardInterrupt) to stop")),
    _context("job-succeeded",
             r"WorkerState\.SUCCEEDED|\] worker group successfully finished\b|\b(?:[Ee]xperiment|[Jj]ob|[Rr]un|[Tt]rial)\b[^\n]{0,60} completed successfully|All workers exited \(return codes: \[0(?:, 0)*\]\)|\b[Tt]raining (?:is )?(?:complete|completed|finished|done)\b(?! with error)|\b\d+ epochs? completed in\b|`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d+` reached|\{'train_runtime': [\d.]+, |^\s*\S+\s+COMPLETED\s+\d+\s+\S+\s+[\d:-]+\s+0:0\s*$",
             ("[2024-06-18 10:22:33,000] torch.distributed.elastic.agent.server.api: [INFO] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
              # torchrun before WorkerState was named in the line (the dev corpus's 2-node Slurm log)
              "0: INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
              "20260423-11:25:24.878 Local Scheduler INFO: Experiment gsm8k-grpo/trial0 completed successfully.",
              "30 epochs completed in 1.392 hours.",
              "7712034       COMPLETED        1         gpu-c07   02:57:41      0:0 ",
              "`Trainer.fit` stopped: `max_epochs=40` reached.",
              "{'train_runtime': 6950.7200, 'train_samples_per_second': 29.907, 'train_steps_per_second': 0.935, 'train_loss': 0.9900, 'epoch': 1.0}"),
             ("training completed with errors", "WorkerState.FAILED", "7712034        FAILED        0         gpu-c12   03:58:02      1:0 ",
              "Epoch 3 completed, loss 0.31")),
    _context("job-restarted",
             r"Worker group FAILED\. \d+/\d+ attempts left; will restart worker group|Requeued (?:SLURM )?job\b|\brestart_count=[1-9]\d*\b|Restarting (?:the )?(?:worker group|training|trial)\b|Handling auto-requeue signal",
             ("[2024-06-18 04:23:58,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group FAILED. 3/3 attempts left; will restart worker group",
              "Requeued SLURM job: 7712034", "  restart_count=1"),
             ("  restart_count=0", "Worker group FAILED. 0/3 attempts left; will not restart worker group"),
             # each alternative led by its own rare literal (an optional `the ` made Hyperscan look
             # for `training` and the like, on most lines of a training log: 5 % of its time)
             prefilter=r"Worker group FAILED|Requeued |restart_count=[1-9]|Restarting |Handling auto-requeue signal"),
    # Horovod's stall inspector lists, per tensor, the ranks that never submitted it
    _context("missing-ranks", r"\[missing ranks: (?P<ranks>\d{1,6}(?:, ?\d{1,6})*)\]",
             ("[1,4]<stderr>:allreduce.avg_loss [missing ranks: 0]", "allreduce.grad.conv1 [missing ranks: 3, 5]"),
             ("[1,4]<stderr>:Stalled ops:",)),
    # lspci's ACS control of a PCIe bridge that redirects peer requests and completions upstream:
    # GPU peer-to-peer traffic goes through the root complex (NCCL's troubleshooting guide asks
    # for `lspci -vvv | grep ACSCtl`). A setting, not an error: a hang with it points at P2P.
    _context("device-acs-redirect", r"ACSCtl:\s+SrcValid[+-] TransBlk[+-] ReqRedir\+ CmpltRedir\+",
             ("\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",),
             ("\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-",
              "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+")),
    # NCCL choosing the loopback interface: right on one host, a fault when peers are on others
    _context("nccl-loopback-interface", r"NCCL INFO (?:Bootstrap|NET/Socket|NET) ?: Using (?:interface )?(?:\[\d+\])?(?P<interface>lo):(?P<address>127\.[\d.]+)",
             ("translation-1:1746:1951 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>",),
             ("translation-1:1746:1951 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.4<0>",),
             # looked for by the loopback address: `NCCL INFO` begins most lines of an NCCL_DEBUG=INFO log
             prefilter=r"lo:127\."),
    _context("failed-traceback", r"Traceback \(most recent call last\)",
             ("[rank11]: Traceback (most recent call last):",), ("print the traceback (most recent call last) here",)),
    # Python prints these tracebacks and goes on: an exception raised in a destructor or at
    # interpreter shutdown, in a background thread, in a multiprocessing queue's feeder thread
    # torchrun's agent logs the exception of its exit barrier (the wait for the other agents after
    # its own workers ended) and exits with its workers' result all the same
    # (torch/distributed/elastic/agent/server/api.py, SimpleElasticAgent._exit_barrier)
    _context("nonfatal-exception", r'Exception ignored in\b|Exception in thread \S+(?: \([^)\n]*\))?:|multiprocessing/queues\.py", line \d+, in _feed|\bError waiting on exit barrier\b',
             ("Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f760335bca0>",
              "Exception in thread Thread-3 (_pin_memory_loop):",
              "E1205 01:35:36.491000 22271 torch/distributed/elastic/agent/server/api.py:1008] Error waiting on exit barrier. Elapsed: 0.4899415969848633 seconds"),
             ("Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:678",
              "W1205 01:35:36.000000 22271 torch/distributed/elastic/agent/server/api.py:1005] Got termination signal: Signals.SIGTERM")),
    _context("failed-exit", r"(?i)(?:exit ?code|exit status|exited with (?:code|status))\s*[:=]?\s*(?P<code>-?[1-9]\d*)",
             ("srun: error: gpu-b200-014: task 0: Exited with exit code 1", "  exitcode  : -9 (pid: 71219)"),
             ("exit code: 0", "exited with code 0")),
    # (and in a zh_CN shell's words: 核心已转储 core dumped, 段错误 segmentation fault, 已杀死 killed)
    _context("failed-signal", r"(?i)(?:Segmentation fault|core dumped|Aborted \(core|fatal error|Fatal Python error|\bKilled\b"
                              r"|核心已转储|段错误|已杀死)",
             ("[HOST:12252] Signal: Segmentation fault (11)", "Fatal Python error: Aborted", "总线错误 (核心已转储)",
              "bash: 行 1: 14874 已杀死    python train.py"), ("Killing subprocess 51872", "已终止")),
    # A line that states an error, a failure or a fatal event in any layer's words: never evidence
    # of health. Unrecognised, it is "a failure the knowledge base cannot name yet", shown as such.
    # Written for the fast engine too: a glog line is known by its source file (a literal to look
    # for), and `NCCL error` by its second word (NCCL INFO lines are everywhere): each costs a
    # tenth of what a pattern without such a literal costs (bench/run_bench.py --quick).
    _context("error-statement",
             _ERROR_STATEMENT,
             ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
              "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor",
              "gpu-a:110:697 [0] NCCL WARN Failed to receive data from peer",
              "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file",
              "[TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)",
              "RuntimeError: HIP error: invalid device function",
              "gpu-a:110:697 [0] misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.0.0.1<5555> failed : Connection refused",
              "E0000 00:00:1700000000.000000 12345 cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0.",
              # c10's own log lines at error level (torch >= 2.4 writes the date and time, older ones not)
              "[rank1]:[E1205 01:35:37.789313653 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=3): Broken pipe",
              "[E ProcessGroupGloo.cpp:138] Rank 1 successfully reached monitoredBarrier, but received errors"),
             ("0 errors, 0 warnings", "I0000 00:00:1700000000.000000 12345 cuda_dnn.cc:529] Loaded cuDNN version 8600", "step 100 loss 2.3 (no error)", "errors: 0", "--error-log /var/log/train.err",
              "[W1205 01:35:37.789313653 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=3): Broken pipe",
              "[I1205 01:35:20.100000000 ProcessGroupNCCL.cpp:946] [PG ID 0 PG GUID 0 Rank 1] ProcessGroupNCCL initialization options"),
             prefilter=_ERROR_STATEMENT.replace(_GLOG_ERROR, _GLOG_SOURCE)),
    _context("failed-word", r"(?:\bERROR\b|\bFATAL\b|\bCRITICAL\b|\berror: )",
             ("[2024-06-14 10:29:06,402] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6)",),
             ("0 errors, 0 warnings",)),
)

FRAME_SIGNATURES = ("frame", "frame-backward")
STACK_FRAME = "stack-frame"
TRACEBACK_HEADER = "failed-traceback"
HANG_STACK_MARKER = "hang-stack-marker"
RAY_ERROR_SNIPPET = "ray-error-snippet"
# frames that say the process was one of several: a collective's, DistributedDataParallel's
PROCESS_GROUP_FRAMES = ("frame", "frame-ddp")
RANK_HOST_DECLARED = "rank-host-declared"
HOST_PAIRS = ("host-rank-pair", "host-rank-node-pair", "host-mpirun-rank", RANK_HOST_DECLARED)  # lines naming a rank and its host
HOST_SIGNATURES = ("host-table-row", "host-srun-task", "host-slurm-cancel", "host-running-on", "host-prompt",
                   "host-ray-node-ip", "host-ray-pid-ip", *HOST_PAIRS)
LAUNCHER_WORLD = "launcher-world-info"
LAUNCHER_RANKS = "launcher-rendezvous-ranks"
NCCL_LOOPBACK = "nccl-loopback-interface"
LAUNCHER_NPROC = "launcher-nproc"
NONFATAL = "nonfatal-exception"
MPIRUN_FIRST_EXIT = "launcher-failed-mpirun"  # `Process name: [[J,1],R]`: the first process to exit non-zero
LAUNCHER_FAILED = ("launcher-failed", "launcher-failed-deepspeed", "launcher-failed-spawn", "launcher-failed-srun",
                   MPIRUN_FIRST_EXIT, "launcher-failed-mpirun-signal", "launcher-failed-mpirun-abort")
LAUNCHER_NODE = "launcher-node"
DEVICE_BUS = ("device-nccl-bus", "device-smi-bus", "device-smi-table-bus")
DEVICE_PROCESS = "device-smi-process"
DEVICE_EVENT_PID = "device-xid-pid"
DEVICE_ACS_REDIRECT = "device-acs-redirect"
WORLD_SIZE = "world-size-declared"
LAUNCHER_SIZE = "launcher-size"
RANK_DECLARED = "rank-declared"
ARGS_RANK_DECLARED = "args-rank-declared"
ARGS_LOCAL_RANK_DECLARED = "args-local-rank-declared"
MISSING_RANKS = "missing-ranks"
JOB_INTERRUPTED = "job-interrupted"
JOB_SUCCEEDED = "job-succeeded"
JOB_RESTARTED = "job-restarted"
ERROR_STATEMENT = "error-statement"
FAILURE_SIGNATURES = (*LAUNCHER_FAILED, "failed-traceback", "failed-exit", "failed-signal", "failed-word")


def declared_rank(captures: dict) -> int | None:
    """The global rank a start-up line declares (`rank-declared`'s three forms, a Namespace's
    `rank=`, `rank-host-declared`), or None."""
    value = next((v for v in (captures.get("rank"), captures.get("global"), captures.get("pair")) if v), None)
    return int(value) if value is not None else None
