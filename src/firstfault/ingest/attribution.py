"""Who wrote a line: rank, local rank and host, from line prefixes and from file paths.

Line prefixes (they nest, outermost first): `srun --label` (`3: `), Open MPI / Horovod
(`[1,3]<stderr>:` = job, GLOBAL rank; SageMaker's `[1,mpirank:3,algo-2]<stderr>:`), `kubectl logs
--prefix` (`[pod/<pod>/<container>] `, the pod is the host), pdsh/DeepSpeed host
(`node-7: `), torchrun `--tee` (`[default3]:` = role + LOCAL rank), the c10d excepthook
(`[rank3]:` = GLOBAL rank), Ray actor prefixes (`(RayTrainWorker pid=12, ip=10.0.0.5)`), NCCL
(`host:pid:tid [local_rank] NCCL INFO`), syslog (`Dec  2 16:46:31 host kernel:`), journald's record of a
process's output (`Dec  5 12:00:00 host python3[4100]: `, outermost).
Paths: `rank3.log`, `rank-03.err`, `worker-3`, `*_rank_3_*`, `node1.log`, torchrun `--log-dir`
(`attempt_N/<local_rank>/stderr.log`), host-named folders and files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

_SRUN = re.compile(r"\s{0,3}(\d{1,5}): ")
_HOST = re.compile(r"([A-Za-z][A-Za-z0-9_.-]{0,62}\d[A-Za-z0-9_.-]{0,62}|\d{1,3}(?:\.\d{1,3}){3}): ")
_GLOBAL = re.compile(r"\[rank(?P<rank>\d{1,6})\]:")
# Open MPI's --tag-output / Horovod: `[1,3]<stderr>:` (job id, rank) and older `[3]<stdout>:`;
# SageMaker's MPI jobs add the rank's word and host: `[1,mpirank:3,algo-2]<stderr>:`; with
# --timestamp-output mpirun's time comes first, as ctime() writes it: `Sun Dec  6 15:47:17 2026[1,3]<stderr>:`
_MPI = re.compile(r"(?P<stamp>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
                  r"\[(?:\d{1,6},)?(?:mpirank:)?(?P<rank>\d{1,6})(?:,(?P<host>[A-Za-z][\w.-]{0,62}))?\]<std(?:out|err)>:")
# `kubectl logs --prefix`: `[pod/<pod>/<container>] ` (a pod's name is its hostname)
_KUBECTL = re.compile(r"\[pod/(?P<pod>[a-z0-9][a-z0-9.-]{0,252})/[\w.-]{1,63}\] ")
_LOCAL = re.compile(r"\[([A-Za-z_][A-Za-z_-]*?)(\d{1,4})\]:")
# Ray / vLLM process prefixes: `(RayTrainWorker pid=12, ip=10.0.0.5)`, `(VllmWorker TP1 pid=3523)`
_RAY = re.compile(r"\((?:[A-Za-z_][\w.]*,? )?(?:(?:TP|PP|DP|EP|rank)[ =]?(?P<index>\d{1,4}),? )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\)\s?")
# NCCL's own prefix; WARN lines put the source location before `NCCL` (`[0] net_ib.cc:1296 NCCL WARN`)
_NCCL = re.compile(r"([A-Za-z0-9][\w.-]*):(\d+):(\d+) \[(\d{1,3})\] (?:[\w./-]{1,80}:\d{1,6} )?NCCL ")
# journald's (and syslog's) record of a process's output: `Dec  5 12:00:00 gpu-node-3 python3[4100]: `
# (`journalctl` default), `2026-12-05T12:00:00+0000 gpu-node-3 python3[4100]: ` (`-o short-iso`):
# the host, then the line as the process wrote it (its launcher prefix next)
# a syslog or journald time: `Dec  5 12:00:00` (fractions with `-o short-precise`), or ISO 8601
_SYSLOG_TIME = r"(?:[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d{1,6})?|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-][\d:]+)?)"
_JOURNAL = re.compile(_SYSLOG_TIME + r" (?P<host>[A-Za-z0-9][\w.-]{0,62}) [\w./@-]{1,64}\[\d{1,10}\]: ")
_SYSLOG_HOST = re.compile(_SYSLOG_TIME + r" (\S+) (?:kernel|slurmd|slurmstepd|systemd)")
# (and ProcessGroupNCCL's own rank before its store wait: `[1] is setting up NCCL communicator and
# retrieving ncclUniqueId from [0] ...`, ProcessGroupNCCL.cpp broadcastUniqueNCCLID)
_RANK_IN_TEXT = re.compile(r"\b(?:on |global )?[Rr]ank[ =:]\s?(\d{1,6})\b|\[rank(\d{1,6})\]|\[(\d{1,6})\] is setting up NCCL communicator")
# A device index in a message ("GPU 1;", "cuda:1", "device 1") names a LOCAL rank under the
# usual one-process-per-GPU launch.
_DEVICE_IN_TEXT = re.compile(r"\(GPU (\d{1,2})[;)]|\bGPU (\d{1,2}) has a total capacity|\bcuda:(\d{1,2})\b|\bdevice[ =](\d{1,2})\b")

# What people put in place of a host's name or address before posting a log (`xxx`, `***`,
# `<hostname>`, `[redacted]`, `node-X`, `x.x.x.x`): no host. Read as one, every node of a job
# would share it, and their local ranks would be taken for one node's.
_PLACEHOLDER_HOST = re.compile(r"(?i)x{2,}|\*{2,}|<[^<>\s]{1,30}>|\[[^\[\]\s]{1,30}\]|redacted|hidden|hostname"
                               r"|your[-_]?host\w{0,10}|(?:node|host|server|machine)[-_]?(?:x+|n|\*+)"
                               r"|(?:x{1,3}|\*{1,3})(?:\.(?:x{1,3}|\*{1,3})){3}")


def is_placeholder_host(name: str | None) -> bool:
    """Whether a host's name in a log is a redaction's placeholder, not a host."""
    return bool(name) and _PLACEHOLDER_HOST.fullmatch(name) is not None


# Words that look like host prefixes (letters + digits + colon) but are not hosts.
_NOT_HOSTS = re.compile(r"(?i)(?:epoch|step|iter|iteration|layer|rank|gpu|cuda|loss|node|worker|batch|e\d{4}|[iwef]\d{4})\d*")

_FILE_RANK = (
    re.compile(r"(?i)(?:^|[_.-])(?:rank|process)[_-]?0*(\d{1,6})(?:[_.-]|$)"),  # Azure ML: std_log_process_03.txt
    # `worker-03.err`; not a name with another number after it (`task-646--1`: a job's id, then
    # the pod's index; which one is a rank the name does not say)
    re.compile(r"(?i)^(?:worker|proc|process|task|gpu)[_-]?0*(\d{1,6})(?:[_.-][^\d]*|)$"),
)
_RAY_WORKER_FILE = re.compile(r"(?:python-core-)?worker-[0-9a-f]+-[0-9a-f]+-(\d+)\.(?:err|out|log)$")
# `node1.log`, `node_0.txt`: a node index. A zero-padded number (`node018`) is a host's name.
_FILE_NODE = re.compile(r"(?i)^node[_-]?(0|[1-9]\d?)(?:[_.-]|$)")
# a file per node and local rank: `std_log_node_1_local_rank_2.txt`, `local_rank_2.log`
_FILE_LOCAL_RANK = re.compile(r"(?i)(?:^|[_.-])(?:node[_-]?0*(?P<node>\d{1,5})[_.-])?local[_-]?rank[_-]?0*(?P<local>\d{1,4})(?:[_.-]|$)")
_FOLDER_RANK = re.compile(r"(?i)^rank[._-]?0*(\d{1,6})$")  # rank_3/stdout.txt; Open MPI's --output-filename: 1/rank.3/stderr
# a process's name with its number names no host (`output_rank-04.log`): `gpu-3` may, hosts are so named
_RANK_WORD = re.compile(r"(?i)(?:local[_-]?)?rank-\d+|process-\d+|proc-\d+")
# A host's name at the end of a file or folder name, kept whole: `gpu-04-02`, `dgx-b12`,
# `ip-10-0-1-2`, `node018`, `nid001234`, an IPv4 address
_HOST_COMPONENT = re.compile(r"(?i)(?:^|[_-])((?:[a-z][a-z0-9]*-)+(?:[a-z0-9]+-)*[a-z0-9]*\d[a-z0-9]*|[a-z]{2,}0\d{2,}|\d{1,3}(?:\.\d{1,3}){3})$")
# A Kubernetes pod of a Kubeflow job (`bert-master-0`, `bert-worker-3`, MPIJob's `bert-launcher-x7k2p`):
# its name is the hostname the processes in it see
_KUBEFLOW_POD = re.compile(r"(?i)^((?:[a-z0-9]+-)+?(master|worker|chief|ps|evaluator|launcher)-(\d+|[a-z0-9]{5}))$")
_HOSTLESS_WORDS = re.compile(r"(?i)^(?:logs?|outputs?|attempt_\d+|rank.*|node[_-]?(?:0|[1-9]\d?)(?:[_.-].*)?|node|worker.*|torchelastic|default|none_.*|run.*|job.*|slurm(?:[_-]\d+(?:_\d+)?)?|train.*|stdout|stderr|console)$")


@dataclass(frozen=True)
class LinePrefix:
    """What a line's prefixes say; `offset` is where the message starts."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    task: int | None = None
    offset: int = 0
    rank_from_task: bool = False  # the rank is the srun task label (no rank prefix of its own)
    outer_host: str | None = None  # a host named by an outer prefix (pdsh, Ray), not by NCCL's own
    pid: int | None = None  # the process a Ray/vLLM worker prefix names (`pid=4242`), when it names no rank
    stamped: bool = False  # a prefix carries the line's time (mpirun --timestamp-output)


PREFIX_WINDOW = 256  # prefixes live at the start; bounding the text keeps the regexes linear


def parse_prefix(line: str) -> LinePrefix:
    """Peel the nested launcher prefixes off the start of a line."""
    line = line[:PREFIX_WINDOW]
    rank = local_rank = task = pid = None
    host = None
    position = 0
    stamped = False
    match = _JOURNAL.match(line)
    if match:
        host, position = match.group("host"), match.end()
    for _ in range(6):
        match = _SRUN.match(line, position)
        if match and task is None and rank is None:
            task = int(match.group(1))
            position = match.end()
            continue
        match = _GLOBAL.match(line, position) or _MPI.match(line, position)
        if match:
            stamped = stamped or bool(match.groupdict().get("stamp"))
            rank = int(match.group("rank"))
            host = (match.groupdict().get("host") or host) if host is None else host
            position = match.end()
            continue
        match = _KUBECTL.match(line, position)
        if match and host is None:
            host = match.group("pod")
            position = match.end()
            continue
        match = _LOCAL.match(line, position)
        if match and match.group(1) != "rank":
            local_rank = int(match.group(2))
            position = match.end()
            continue
        match = _RAY.match(line, position)
        if match:
            host = match.group("ip") or host
            if match.group("index") is not None and local_rank is None:
                local_rank = int(match.group("index"))
            elif pid is None:
                pid = int(match.group("pid"))
            position = match.end()
            continue
        match = _HOST.match(line, position)
        if match and host is None and not _NOT_HOSTS.fullmatch(match.group(1)):
            host = match.group(1)
            position = match.end()
            continue
        break
    outer_host = host
    match = _NCCL.match(line, position)
    if match:
        host = host or (None if is_placeholder_host(match.group(1)) else match.group(1))
        local_rank = int(match.group(4)) if local_rank is None else local_rank
    elif host is None:
        match = _SYSLOG_HOST.search(line, position, position + 80)
        if match and not is_placeholder_host(match.group(1)):
            host = match.group(1)
    if rank is None and local_rank is None and task is not None:
        # srun --label prints the task id: the global rank when srun starts one task per rank; with
        # a local-rank prefix inside it, srun started one launcher per node and the task is the node
        return LinePrefix(rank=task, local_rank=None, host=host, task=task, offset=position, rank_from_task=True,
                          outer_host=outer_host, pid=pid, stamped=stamped)
    return LinePrefix(rank=rank, local_rank=local_rank, host=host, task=task, offset=position, outer_host=outer_host,
                      pid=pid, stamped=stamped)


@dataclass(frozen=True)
class PathHints:
    """What a file's path says about who wrote it."""

    rank: int | None = None
    local_rank: int | None = None
    node_rank: int | None = None
    host: str | None = None
    launcher_attempt: int | None = None
    pid: int | None = None  # Ray worker files carry the worker's pid in their name
    pod_role: str | None = None  # a Kubeflow pod's replica type (master, worker) and index
    pod_index: int | None = None
    host_by_convention: bool = False  # the file's name gives its node by convention (dmesg-<host>, slurm-%j-%N)
    declared: bool = False  # rank or local_rank come from the file's own start-up lines, not its name


def hints_from_path(relative: str) -> PathHints:
    """Read rank / node / host hints from a path relative to the input the user named."""
    parts = PurePath(relative).parts
    stem = PurePath(relative).name.split(".")[0] if parts else ""
    rank = _rank_from_name(PurePath(relative).name)
    local_rank = attempt = None
    node_in_name = None
    local_in_name = _FILE_LOCAL_RANK.search(stem)
    if local_in_name:
        rank, local_rank = None, int(local_in_name.group("local"))
        node_in_name = int(local_in_name.group("node")) if local_in_name.group("node") else None
    elif rank is None and len(parts) >= 2 and _FOLDER_RANK.match(parts[-2]):
        rank = int(_FOLDER_RANK.match(parts[-2]).group(1))
    if len(parts) >= 3 and re.fullmatch(r"attempt_\d+", parts[-3]) and parts[-2].isascii() and parts[-2].isdigit():
        attempt = int(parts[-3].split("_")[1])
        local_rank = int(parts[-2])  # torchrun --log-dir: attempt_N/<local_rank>/stderr.log
    node = _FILE_NODE.match(stem)
    ray_worker = _RAY_WORKER_FILE.match(PurePath(relative).name)
    pod = _pod_of(parts)
    named_host, by_convention = _host_from_parts(parts)
    return PathHints(
        rank=None if pod else rank, local_rank=local_rank,
        node_rank=int(node.group(1)) if node else node_in_name,
        host=pod.group(1) if pod else named_host, host_by_convention=by_convention and not pod, launcher_attempt=attempt,
        pid=int(ray_worker.group(1)) if ray_worker else None,
        pod_role=pod.group(2).lower() if pod else None,
        pod_index=int(pod.group(3)) if pod and pod.group(3).isdigit() else None,
    )


def _pod_of(parts: tuple[str, ...]):
    """The Kubeflow pod a per-pod log file or folder is named for (`kubectl logs bert-worker-1 > bert-worker-1.log`)."""
    for part in reversed(parts[-2:]):
        match = _KUBEFLOW_POD.match(_KIND_PREFIX.sub("", part.split(".")[0]))
        if match:
            return match
    return None


def _rank_from_name(name: str) -> int | None:
    """`rank3.log`, `stdout.rank5.log`, `worker-03.err`: each dot-separated part is tried."""
    for stem in name.split(".")[:-1] or [name]:
        for pattern in _FILE_RANK:
            match = pattern.search(stem)
            if match:
                return int(match.group(1))
    return None


# What a file is before the host it came from: `dmesg-gpu-04-02.log`, `nvidia-smi_node018.txt`
_SYSTEM_KIND = (r"(?:kubectl[_-](?:describe|logs)(?:[_-]pods?)?|dmesg|syslog|kern|kernel|messages|journal(?:ctl)?(?:-k)?"
                r"|ifconfig|ip-addr|nvidia-smi|show[_-]gids|ibstat|ibv[_-]devinfo)[_-]")
_SYSTEM_LOG_PREFIX = re.compile(r"(?i)^" + _SYSTEM_KIND)
# ... and Slurm's `slurm-%j-%N.out` / `%x-%j-%N.out`: the job id, then the node (`slurm-88231-gpu-b07`)
_KIND_PREFIX = re.compile(r"(?i)^(?:" + _SYSTEM_KIND + r"|(?:[a-z][\w.]*[_-])?\d{2,}(?:_\d+)?[_.-](?=[a-z]))")


def path_names(relative: str) -> list[str]:
    """Every name in a path that could be a host's, file name first: what a host named in the
    logs' own text is compared with (`node-2/dmesg.txt`, `dmesg-node-2.txt`, `slurm-7-gpu-023.out`)."""
    names = []
    for part in reversed(PurePath(relative).parts):
        stem = _KIND_PREFIX.sub("", re.sub(r"(?i)^ray-session-", "", _without_extension(part)))
        for piece in [stem, *stem.split("_")]:
            dashes = [0] + [index + 1 for index, char in enumerate(piece) if char == "-"]
            names.extend(piece[start:] for start in dashes if piece[start:] and piece[start:] not in names)
    return names


_LOG_EXTENSION = re.compile(r"(?i)\.(?:txt|log|out|err|gz)(?:\.\d+)?(?=\.|$).*$")


def _without_extension(part: str) -> str:
    """`slurm-88231-gpu-b07.out` -> `slurm-88231-gpu-b07`; a host's dots (`10.0.0.5`) stay."""
    return _LOG_EXTENSION.sub("", part)


def is_system_log(relative: str) -> bool:
    """A kernel or system log (dmesg, syslog, journal): its file or folder names the host it came from."""
    return any(_SYSTEM_LOG_PREFIX.match(part) or part.split(".")[0].lower() in _SYSTEM_LOG_NAMES
               for part in PurePath(relative).parts[-1:])


_SYSTEM_LOG_NAMES = {"dmesg", "syslog", "kern", "kernel", "messages", "journal", "journalctl"}


def _host_from_parts(parts: tuple[str, ...]) -> tuple[str | None, bool]:
    """(the host a path names, whether its file name names it by convention: a kernel or system
    log per node, Slurm's `slurm-%j-%N.out`), or (None, False)."""
    for index, part in enumerate(reversed(parts)):
        part = re.sub(r"(?i)^ray-session-", "", part)
        bare = _without_extension(part)
        stem = _KIND_PREFIX.sub("", bare)
        if _HOSTLESS_WORDS.match(stem):
            continue
        match = _HOST_COMPONENT.search(stem)
        if match and not _RANK_WORD.fullmatch(match.group(1)):
            return match.group(1), index == 0 and stem != bare and match.group(1) == stem
    return None, False


# NCCL names ranks within a process group: only the default group's rank is the global rank.
_GROUP_RANK = re.compile(r"\[PG ID \d+ PG GUID \d+(?:\((?!default_pg\))[^)]{0,60}\))? Rank \d+\]|\[Rank \d+\](?= Watchdog caught)")


def rank_mentioned(text: str) -> int | None:
    """A rank named in the message itself ("rank 3", "Rank=3"), used as a last resort; a rank
    within a process group other than the default one is not a global rank."""
    if "PG ID" in text:
        if _GROUP_RANK.search(text) and "default_pg" not in text:
            return None
    match = _RANK_IN_TEXT.search(text)
    return int(next(group for group in match.groups() if group)) if match else None


# A logger that writes the rank into the message, near its start: `Rank 5 step 75: ...`,
# `| INFO | rank0 | step 12850`, `[RANK 3] loss ...`, `rank=2 epoch 4` (within the first words)
_LEADING_RANK = re.compile(r"^[^A-Za-z]{0,40}(?:[A-Za-z]{1,12}[^A-Za-z]{1,30}){0,4}?\b[Rr](?:ank|ANK)[ =_:]?(\d{1,6})\b(?![.,]\d)")
LEADING_RANK_CHARS = 80


def leading_rank(text: str) -> int | None:
    """The rank a message names among its first words (not a prefix of a launcher's)."""
    match = _LEADING_RANK.match(text[:LEADING_RANK_CHARS])
    return int(match.group(1)) if match else None


def device_mentioned(text: str) -> int | None:
    """A CUDA device index named in the message ("GPU 1;", "cuda:1"), a local-rank hint."""
    match = _DEVICE_IN_TEXT.search(text)
    if not match:
        return None
    return int(next(group for group in match.groups() if group is not None))
