"""Resolve who wrote each hit: global rank and host, using what every file's census learned.

A `[default3]:` prefix is a LOCAL rank: it becomes global through the file's own
`[default3]:[rank11]:` pairs, else node rank x local world size (node rank from the file name, an
srun task label around a per-node launcher, or the launcher's own per-node report), else (single
node) the local rank itself.

Hosts: a line's own prefix (pdsh, NCCL, syslog, Ray) first; then the host of the file. A file's
host is a name in its path that the logs' own text also names as a host (`node-2/dmesg.txt` when
a line says `node-2: ...`); without such a confirmation, a kernel log's or a per-node file's name
(several files, each naming a different host); else the one host its NCCL lines name.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field, replace

from ..ingest.attribution import device_mentioned, is_system_log, path_names, rank_mentioned
from ..match.context import (ARGS_LOCAL_RANK_DECLARED, ARGS_RANK_DECLARED, HOST_SIGNATURES, LAUNCHER_FAILED,
                             LAUNCHER_NODE, LAUNCHER_NPROC, LAUNCHER_RANKS, LAUNCHER_WORLD, RANK_DECLARED,
                             RANK_HOST_DECLARED, declared_rank)
from ..match.scanner import FileScan, Process, RawHit
from ..model import LogLine, Match, Origin


LAUNCHER_PREFIX = "launcher-"  # the context signatures of a launcher's own lines (its reports, sizes, rendezvous)
LAUNCHER_ENTRY = "torchelastic-child-failed"  # torchrun's agent stopping its workers

# Slurm's report of one task's end: the task is the rank when srun started one task per rank
_SRUN_TASK_ERROR = re.compile(r"srun: error: [\w.-]+: task (\d+): ")


def local_world_size(scans: list[FileScan]) -> int | None:
    highest = [max(scan.local_ranks) for scan in scans if scan.local_ranks]
    from_dirs = [scan.hints.local_rank for scan in scans if scan.hints.local_rank is not None]
    candidates = [value + 1 for value in highest + from_dirs]
    declared = Counter(int(hit.captures.get("nproc") or hit.captures.get("procs") or hit.captures.get("config")
                           or hit.captures.get("per_node"))
                       for scan in scans for hit in scan.hits if hit.signature.name == LAUNCHER_NPROC)
    if declared:
        candidates.append(declared.most_common(1)[0][0])
    return max(candidates) if candidates else None


def with_pod_node_ranks(scans: list[FileScan]) -> list[FileScan]:
    """Kubeflow's PyTorchJob names pods `<job>-<type>-<index>` and, when the job has a master, sets
    RANK (the node rank) to 0 on master-0 and index + 1 on worker-N (training-operator,
    pkg/controller.v1/pytorch/envvar.go). With the master's log among the inputs, each pod file's
    node rank follows from its name; without one (elastic jobs) the rendezvous decides the order
    and the name says nothing."""
    if not any(scan.hints.pod_role == "master" for scan in scans):
        return scans
    for scan in scans:
        hints = scan.hints
        if hints.node_rank is None and hints.pod_index is not None and hints.pod_role in ("master", "worker"):
            node = 0 if hints.pod_role == "master" else hints.pod_index + 1
            scan.hints = replace(hints, node_rank=node)
    return scans


def pod_process_rank(scan: FileScan) -> int | None:
    """The rank of a Kubeflow pod that ran one process: its node rank (with_pod_node_ranks).
    A PyTorchJob whose pods run the script itself, not a launcher, sets each pod's RANK to its node
    rank and WORLD_SIZE to the pods (training-operator, pkg/controller.v1/pytorch/envvar.go). A pod
    whose log shows a launcher (its reports, local-rank prefixes) or another rank's lines ran
    several processes: its node rank is no rank."""
    node = scan.hints.node_rank
    if node is None or scan.hints.pod_role is None or scan.local_ranks or scan.global_ranks - {node}:
        return None
    if any(hit.signature.name.startswith(LAUNCHER_PREFIX) or hit.signature.entry_id == LAUNCHER_ENTRY for hit in scan.hits):
        return None
    return node


def with_declared_file_ranks(scans: list[FileScan]) -> list[FileScan]:
    """Files whose names say nothing (`out-3f9a1c.log`, a collector's) but whose own lines declare
    their process's rank or local rank (argparse's `Namespace(..., local_rank=5)`, fairseq's
    `distributed init (rank 5)`, Lightning's `GLOBAL_RANK: 5`): each is that rank's, when it shows
    no other rank's lines, its declarations agree, and at least two files declare, each a value of
    its own (a console of several processes where one printed its arguments declares nothing)."""
    declared = {}
    for scan in scans:
        if scan.hints.rank is not None or scan.hints.local_rank is not None or scan.local_ranks:
            continue
        declared_here = {pair for hit in scan.hits for pair in _declaration(hit)}
        ranks = {value for kind, value in declared_here if kind == "rank"}
        locals_ = {value for kind, value in declared_here if kind == "local"}
        if len(ranks) == 1:
            kind, value = "rank", next(iter(ranks))  # a global rank says more than a local one beside it
        elif not ranks and len(locals_) == 1:
            kind, value = "local", next(iter(locals_))
        else:
            continue
        if not scan.global_ranks or (kind == "rank" and scan.global_ranks == {value}):
            declared[scan.input.display] = (scan, kind, value)
    if len(declared) < 2:
        return scans
    counts = Counter((kind, value) for _scan, kind, value in declared.values())
    for scan, kind, value in declared.values():
        if counts[(kind, value)] == 1:
            scan.hints = replace(scan.hints, declared=True, **{"rank" if kind == "rank" else "local_rank": value})
    return scans


def _declaration(hit: RawHit) -> tuple:
    """(kind, value) pairs a start-up line declares of its own process."""
    name, captures = hit.signature.name, hit.captures
    if name in (RANK_DECLARED, RANK_HOST_DECLARED, ARGS_RANK_DECLARED):
        value = declared_rank(captures)
        return (("rank", value),) if value is not None else ()
    if name == ARGS_LOCAL_RANK_DECLARED and captures.get("local"):
        return (("local", int(captures["local"])),)
    return ()


TABLE_RANK_ROW = "root-cause-rank-row"  # `rank      : 3 (local_rank: 3)`: which rank a failure-table entry is about


def declared_ranks(scan: FileScan) -> list[int]:
    """The global ranks a torchrun agent says its node runs (`global_ranks=[4, 5, 6, 7]` in its
    rendezvous result), in local-rank order; the last result when the agent restarted."""
    declared = [hit for hit in scan.hits if hit.signature.name == LAUNCHER_RANKS]
    return [int(rank) for rank in re.findall(r"\d+", declared[-1].captures["ranks"])] if declared else []


def _table_offsets(scan: FileScan) -> Counter:
    """global - local of the workers the file's failure tables list (`rank : 4 (local_rank: 0)`):
    an agent's table lists its own node's workers."""
    return Counter(int(hit.captures["failed_rank"]) - int(hit.captures["local_rank"]) for hit in scan.hits
                   if hit.signature.name == TABLE_RANK_ROW and hit.captures.get("failed_rank") and hit.captures.get("local_rank"))


def names_number_nodes(scans: list[FileScan], world: int | None) -> bool:
    """Whether the node numbers in the files' names (`node1.log`) can number their ranks: not when
    a file's own failure table says its node holds other ranks than its name's number gives (a
    c10d rendezvous numbers the nodes in the order they joined): then no name numbers a node."""
    for scan in scans:
        tables = _table_offsets(scan) if scan.hints.node_rank is not None and world else None
        if tables and tables.most_common(1)[0][0] != scan.hints.node_rank * world:
            return False
    return True


def _file_offset(scan: FileScan, world: int | None, names: bool) -> int | None:
    """global - local for this file, when it can be known. What the file's own lines say comes
    before its name: a c10d rendezvous numbers the nodes in the order they joined (it ignores
    `--node_rank`, and torchrun says so), so `node1.log` may hold ranks 0-3. `names`: whether the
    names' node numbers may be used (names_number_nodes)."""
    offsets = Counter({global_rank - local: count for (local, global_rank), count in scan.local_to_global.items()})
    if offsets:
        return offsets.most_common(1)[0][0]
    declared = declared_ranks(scan)
    if declared:
        return declared[0]  # torchrun numbers a node's workers base + local rank
    if scan.hints.node_rank is not None:
        tables = _table_offsets(scan)  # (the file's own table, over the number in its name)
        if tables:
            return tables.most_common(1)[0][0]
        if world and names:
            return scan.hints.node_rank * world
    if scan.global_ranks and world and world > 1:
        # one node's console: its `[rankN]:` prefixes are one block of `world` ranks
        first, last = min(scan.global_ranks), max(scan.global_ranks)
        if first % world == 0 and last < first + world:
            return first
    return None


def node_blocks(scans: list[FileScan]) -> dict[str, int]:
    """display -> the first rank of the file's block, when several files (one per node) each
    show a contiguous block of `[rankN]:` prefixes and no two blocks overlap: each file is a
    node's console, its local rank 0 is that first rank."""
    blocks = {scan.input.display: sorted(scan.global_ranks) for scan in scans if len(scan.global_ranks) > 1}
    if len(blocks) < 2:
        return {}
    spans = sorted((ranks[0], ranks[-1]) for ranks in blocks.values())
    contiguous = all(ranks == list(range(ranks[0], ranks[-1] + 1)) for ranks in blocks.values())
    disjoint = all(earlier[1] < later[0] for earlier, later in zip(spans, spans[1:]))
    return {display: ranks[0] for display, ranks in blocks.items()} if contiguous and disjoint else {}


def content_hosts(scans: list[FileScan]) -> set[str]:
    """Hosts the logs' own text names: line prefixes, NCCL lines, and lines that name a host."""
    hosts = set()
    for scan in scans:
        hosts.update(scan.nccl_hosts.values())
        for hit in scan.hits:
            if hit.prefix.host:
                hosts.add(hit.prefix.host)
            if hit.signature.name in HOST_SIGNATURES and hit.captures.get("host"):
                hosts.add(hit.captures["host"])
    return hosts


def file_hosts(scans: list[FileScan]) -> dict[str, tuple[str | None, str | None]]:
    """display name -> (the host the file came from, how the logs say it: HOST_FROM's words), or
    (None, None) when they do not show it."""
    named = content_hosts(scans)
    heuristic = {scan.input.display: scan.hints.host for scan in scans}
    per_node_files = len({host for host in heuristic.values() if host}) > 1
    hosts = {}
    for scan in scans:
        confirmed = next((name for name in path_names(scan.input.relative) if name in named), None)
        by_name = per_node_files or scan.hints.host_by_convention or is_system_log(scan.input.relative)
        guess = heuristic[scan.input.display] if by_name else None
        if confirmed is None and guess is None and is_system_log(scan.input.relative):
            guess = next((name for name in path_names(scan.input.relative)[1:2] if name and name[-1:].isdigit()), None)
        own_nccl = set(scan.nccl_hosts.values())
        nccl = next(iter(own_nccl)) if len(own_nccl) == 1 else None
        hosts[scan.input.display] = ((confirmed, HOST_FROM["named file"]) if confirmed else (guess, HOST_FROM["file"]) if guess
                                     else (nccl, HOST_FROM["file nccl"]) if nccl else (None, None))
    return hosts


@dataclass(frozen=True)
class JobFiles:
    """What every file's census says of the job, worked out once per diagnosis."""

    hosts: dict  # display name -> the host the file came from, or None
    local_world: int | None  # processes per node, when known
    host_offsets: dict  # host -> its node's first global rank (_host_offsets)
    host_sources: dict = field(default_factory=dict)  # display name -> how the logs say its host (HOST_FROM)
    offsets: dict = field(default_factory=dict)  # display name -> global - local for its lines (_file_offset), or None

    def offset(self, scan: FileScan) -> int | None:
        return self.offsets.get(scan.input.display)


def job_files(scans: list[FileScan]) -> JobFiles:
    sourced = file_hosts(scans)
    world = local_world_size(scans)
    names = names_number_nodes(scans, world)
    return JobFiles({name: host for name, (host, _how) in sourced.items()}, world, _host_offsets(scans),
                    {name: how for name, (_host, how) in sourced.items()},
                    {scan.input.display: _file_offset(scan, world, names) for scan in scans})


def resolve(scans: list[FileScan], files: JobFiles | None = None) -> list[Match]:
    """Every hit of every file as a Match with its Origin, in input order."""
    files = files or job_files(scans)
    world = files.local_world
    any_node_hints = any(scan.hints.node_rank is not None for scan in scans)
    host_offsets = files.host_offsets
    hosts = files.hosts
    several = len(set().union(*(scan.global_ranks | scan.local_ranks for scan in scans))) > 1 or len(scans) > 1
    matches: list[Match] = []
    order = 0
    blocks = node_blocks(scans)
    file_nodes = {host for host in hosts.values() if host}  # files from two hosts: two nodes at least
    for scan in scans:
        offset = files.offset(scan)
        if offset is None:
            offset = blocks.get(scan.input.display)
        if offset is None and not any_node_hints and not host_offsets and not blocks and len(file_nodes) <= 1:
            offset = 0  # single node: local rank == global rank
        context = _FileContext(scan, world, hosts[scan.input.display], several, files.host_sources.get(scan.input.display))
        nodes = several_nodes(scan)
        for hit in scan.hits:
            host = hit.prefix.host
            rank, host, rank_from, host_from = context.who(hit, host_offsets.get(host, None if nodes else offset) if host else offset)
            origin = Origin(source=scan.input.display, line=hit.line, rank=rank, host=host,
                            time=hit.time, time_inherited=hit.time_inherited, local_rank=hit.prefix.local_rank,
                            rank_from=rank_from, host_from=host_from)
            matches.append(Match(hit.signature, LogLine(hit.text, origin), hit.captures, order))
            order += 1
    return matches


def several_nodes(scan: FileScan) -> bool:
    """Whether the file's rank streams come from several hosts' prefixes (pdsh: `node-1: [default0]:`):
    a local rank there is global only through its own host's offset, not the file's."""
    return len({stream[0] for stream in scan.tails if stream is not None and stream[0]}) > 1


def _host_offsets(scans: list[FileScan]) -> dict[str, int]:
    """host -> node_rank x local processes, from the launcher's per-node report lines and
    DeepSpeed's WORLD INFO DICT (hosts in node-rank order, each with its local ranks)."""
    offsets = {}
    for scan in scans:
        for hit in scan.hits:
            if hit.signature.name == LAUNCHER_NODE and hit.prefix.host:
                offsets[hit.prefix.host] = int(hit.captures["node_rank"]) * int(hit.captures["local_procs"])
            elif hit.signature.name == LAUNCHER_WORLD and not offsets:
                offsets.update(world_info_offsets(hit.captures["world"]))
    paired: dict[str, Counter] = {}  # `host: [defaultL]:[rankG]:` lines: that host's global - local
    for scan in scans:
        for (host, local, global_rank), count in scan.host_pairs.items():
            paired.setdefault(host, Counter())[global_rank - local] += count
    for host, differences in paired.items():
        offsets.setdefault(host, differences.most_common(1)[0][0])
    return offsets


def world_info_offsets(text: str) -> dict[str, int]:
    try:
        world = ast.literal_eval("{" + text + "}")
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}
    offsets, total = {}, 0
    for host, local_ranks in world.items() if isinstance(world, dict) else ():
        if isinstance(host, str) and isinstance(local_ranks, (list, tuple)):
            offsets[host] = total
            total += len(local_ranks)
    return offsets


class _FileContext:
    """What one file's census and path say about the lines in it."""

    def __init__(self, scan: FileScan, world: int | None, host: str | None, several_processes: bool,
                 host_from: str | None = None) -> None:
        self.scan, self.world, self.host, self.several = scan, world, host, several_processes
        self.host_from = host_from
        declared = declared_ranks(scan)
        # an agent that runs one worker: every line of its console is that rank's or about it
        self.only_rank = declared[0] if len(declared) == 1 else pod_process_rank(scan)
        self.only_from = RANK_FROM["agent" if len(declared) == 1 else "pod"]

    def who(self, hit: RawHit, offset: int | None) -> tuple[int | None, str | None, str | None, str | None]:
        """(rank, host, how the logs tie each to the line: RANK_FROM's and HOST_FROM's words, or None)."""
        scan, prefix = self.scan, hit.prefix
        local = prefix.local_rank if prefix.local_rank is not None else scan.hints.local_rank
        local_from = "prefix" if prefix.local_rank is not None else "declared" if scan.hints.declared else "file"
        rank = prefix.rank
        how = RANK_FROM["task"] if prefix.rank_from_task else RANK_FROM["prefix"]
        if hit.signature.name in LAUNCHER_FAILED and hit.captures.get("rank") is not None:
            rank, how = int(hit.captures["rank"]), RANK_FROM["report"]  # mpirun names the process by its rank
        elif hit.signature.name in LAUNCHER_FAILED and "local" in hit.captures:
            local, local_from = int(hit.captures["local"]), "report"  # the launcher names the local rank that failed
            if prefix.task is not None and rank == prefix.task:
                rank = None  # the srun task around a launcher's report is its node, not a rank
        if prefix.rank_from_task and scan.tasks_are_nodes:
            rank = None  # the file's other lines carry [rankN] prefixes: its srun tasks are nodes
        if prefix.task is not None and local is not None and rank is None and self.world:
            offset = prefix.task * self.world  # srun started one launcher per node: task = node
        if rank is None and local is not None and offset is not None:
            rank, how = local + offset, RANK_FROM["local"].format(local=local, by=LOCAL_FROM[local_from], offset=offset)
        if rank is None:
            if scan.hints.rank is not None:
                rank, how = scan.hints.rank, RANK_FROM["declared" if scan.hints.declared else "file"]
            elif self.only_rank is not None:
                rank, how = self.only_rank, self.only_from
        if rank is None and prefix.pid is not None:
            rank, how = scan.worker_pids.get(prefix.pid), RANK_FROM["pid"].format(pid=prefix.pid)
        if rank is None and scan.srun_tasks and not scan.tasks_are_nodes:
            task = _SRUN_TASK_ERROR.search(hit.text)
            rank, how = int(task.group(1)) if task else None, RANK_FROM["task"]
        if rank is None:
            rank, how = rank_mentioned(hit.text[prefix.offset:]), RANK_FROM["text"]
        if rank is None and offset is not None and self.several:
            # a device index names a local rank only when there are several processes: one
            # process on GPU 3 (CUDA_VISIBLE_DEVICES=3) is not rank 3
            device = device_mentioned(hit.text)
            rank, how = (device + offset, RANK_FROM["device"]) if device is not None else (None, None)
        host, host_from = self._where(prefix, local)
        return rank, host, how if rank is not None else None, host_from

    def _where(self, prefix, local: int | None) -> tuple[str | None, str | None]:
        """The host of a line, and how the logs say it."""
        if prefix.host:
            return prefix.host, HOST_FROM["prefix"]
        nccl = self.scan.nccl_hosts.get(local) if local is not None else None
        if nccl:
            return nccl, HOST_FROM["nccl"].format(local=local)
        return (self.host, self.host_from) if self.host else (None, None)


# How the logs tie a rank to a line (`primary.initiating.rank_from`, `ask "why rank 3?"`)
RANK_FROM = {
    "prefix": "the line's own rank prefix",
    "task": "the srun task label of the line (a task per rank)",
    "report": "the launcher's report of the process that failed, which names its rank",
    "local": "local rank {local} ({by}) on a node whose ranks start at {offset}",
    "file": "the name of its file",
    "declared": "its file's own start-up lines, which declare the rank",
    "pod": "its Kubeflow pod's name (a pod that ran one process is its node rank)",
    "agent": "its torchrun agent's rendezvous result (the node runs that one rank)",
    "pid": "the other lines of its worker process (pid {pid}), which name the rank",
    "text": "the line itself, which names the rank",
    "device": "the GPU index on the line, on a node of several processes",
}
# How the logs tie a host to a line (`primary.initiating.host_from`, `ask`)
HOST_FROM = {
    "prefix": "the host prefix on the line",
    "nccl": "NCCL's lines of its local rank {local}, which name the host",
    "named file": "the name of its file, a host the logs name",
    "file": "the name of its file",
    "file nccl": "its file's NCCL lines, which name one host",
}
LOCAL_FROM = {"prefix": "the launcher's prefix on the line", "file": "the name of its file",
              "declared": "its file's own start-up lines", "report": "the launcher's report of it"}


def ranks_seen(scans: list[FileScan], matches: list[Match], files: JobFiles | None = None) -> list[int]:
    ranks = {match.line.origin.rank for match in matches if match.line.origin.rank is not None}
    files = files or job_files(scans)
    for scan in scans:
        ranks.update(scan.global_ranks)
        if scan.hints.rank is not None:
            ranks.add(scan.hints.rank)
        offset = files.offset(scan)
        if offset is not None:
            ranks.update(local + offset for local in scan.local_ranks)
        own = _own_file_rank(scan, offset)
        if own is not None:
            ranks.add(own)  # a rank's own file, even if it printed no error
    return sorted(ranks)


def _own_file_rank(scan: FileScan, offset: int | None) -> int | None:
    """The global rank of a file a launcher keeps per local rank (torchrun --log-dir's
    attempt_N/<local_rank>/stderr.log), when its node's offset is known or there is one node."""
    if scan.hints.local_rank is not None and scan.input.relative and (offset is not None or not scan.hints.node_rank):
        return scan.hints.local_rank + (offset or 0)
    return None


def hosts_seen(scans: list[FileScan], matches: list[Match], files: JobFiles | None = None) -> list[str]:
    hosts = {match.line.origin.host for match in matches if match.line.origin.host}
    for scan in scans:
        hosts.update(scan.nccl_hosts.values())
    hosts.update(host for host in (files or job_files(scans)).hosts.values() if host)
    return sorted(hosts)


def _shared_console(scan: FileScan, world: int | None) -> bool:
    """A console several processes of a node print to without prefixes (no rank in its path):
    its unlabelled lines are not the one rank an error line was tied to."""
    return bool(world and world > 1) and scan.hints.local_rank is None


def stream_activity(scans: list[FileScan], matches: list[Match], files: JobFiles | None = None,
                    identity=None) -> list:
    """What each rank stream printed last (the scans' tails), with its global rank and host. A
    worker process's stream (Ray's `pid=` prefix) takes the rank its own lines, or the links of
    `identity` (a launcher's table of pids), tie its pid to; else it stays a stream of no rank."""
    from .activity import StreamActivity, StreamLine
    from .identity import pid_key

    files = files or job_files(scans)
    world = files.local_world
    hosts = files.hosts
    host_offsets = files.host_offsets
    file_ranks: dict[str, Counter] = {}
    for match in matches:
        if match.line.origin.rank is not None:
            file_ranks.setdefault(match.line.origin.source, Counter())[match.line.origin.rank] += 1
    activity = []
    for scan in scans:
        offset = files.offset(scan)
        nodes = several_nodes(scan)
        for stream, lines in scan.tails.items():
            if stream is None:
                rank = scan.hints.rank if scan.hints.rank is not None else _own_file_rank(scan, offset)
                if rank is None and len(scan.global_ranks) == 1:
                    rank = next(iter(scan.global_ranks))
                if rank is None and len(file_ranks.get(scan.input.display, ())) == 1 and not _shared_console(scan, world):
                    rank = next(iter(file_ranks[scan.input.display]))
                host = hosts[scan.input.display]
            else:
                host, index = stream
                host = host or hosts[scan.input.display]
                if isinstance(index, Process):
                    named = identity.rank_of(pid_key(index.pid)) if identity is not None else None
                    rank = scan.worker_pids.get(index.pid, named.value if named else None)
                elif index in scan.local_ranks and nodes:
                    rank = index + host_offsets[host] if host in host_offsets else None
                elif index in scan.local_ranks and offset is not None:
                    rank = index + host_offsets.get(host, offset)
                else:
                    rank = index
            activity.append(StreamActivity(scan.input.display, rank, host,
                                           tuple(StreamLine(line, time, text) for line, time, text in lines),
                                           stream is None and len(scan.tails) > 1,
                                           tuple(StreamLine(*item) for item in scan.progress_tails.get(stream, ()))))
    return activity
