"""Who is who: one identity map per diagnosis, built once after matching.

Every line that names two things about one process at once (a rank and its pid, a pid and its
GPU, a GPU and its PCI bus, a rank and its host) is a link. Linked names are aliases of one
process: a union of aliases, each union remembering the line it was read from. Rules ask the map
"which rank is pid 13641?" or "which host ran rank 5?" and get an answer only when the links
say it, with the lines that say it; otherwise None, and the report says it cannot tell.

Names are keys: ("rank", None, 5), ("pid", host, 13641), ("gpu", host, 7), ("bus", host, "db"),
("local", host, 3). Keys of one host carry its name; a key read where no host is named joins the
same key of the one host that has it (a dmesg file without a host beside NCCL lines that name
one). Conventions (GPU index = local rank under one process per GPU; local rank = rank on a
single node) are weak links: added last, and never when they would make one process two ranks.

The links come from: line prefixes (rank and host), torchrun's failure table and reports (rank,
local rank, pid, host), rank/host pairs in init lines (`rank 3 of 16, local rank 3 on host X`,
mpirun, Megatron), Ray and vLLM worker prefixes (pid and rank), Ray task errors (pid and node),
NCCL's own prefix (`host:pid:tid [cudaDev]`) and init lines (rank, cudaDev, busId), nvidia-smi
(GPU index, bus id, pids), DeepSpeed's list of its
subprocesses, Slurm's task reports, a shell's report of the process it started (in that process's
own log), and file names. A kernel event that names a pid and a bus
(an Xid) is not a link: over days a GPU runs many processes, so the event is asked about its pid.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from ..ingest.attribution import is_placeholder_host
from ..match.context import (DEVICE_BUS, DEVICE_PROCESS, HOST_PAIRS, HOST_SIGNATURES,
                             LAUNCHER_FAILED, LAUNCHER_NODE, LAUNCHER_NPROC, LAUNCHER_SIZE, LAUNCHER_WORLD,
                             RANK_DECLARED, RANK_HOST_DECLARED, WORLD_SIZE, declared_rank)
from ..model import Match
from .ranks import RANK_FROM, TABLE_RANK_ROW

SHELL_KILLED = "shell-reports-killed"  # `bash: line 1: 26062 Killed  python train.py` (host-oom-killed)
ONE_PROCESS_FILE = (RANK_FROM["file"], RANK_FROM["declared"])  # a file that is one process's output

TABLE_ROW_DISTANCE = 3  # lines between a failure table's host row and its rank row
STRONG = 5  # a line that pairs two names on purpose (a failure table, an init line)
WEAK = 1  # a line whose prefix names its rank and host
LOCAL_NAMES = {"localhost", "127.0.0.1", "0.0.0.0", "::1", "localhost.localdomain"}
_NNODES = re.compile(r"--nnodes[= ](\d{1,5})\b")  # torchrun's node count beside --nproc_per_node (a range: elastic)
_NCCL_PREFIX = re.compile(r"([A-Za-z0-9][\w.-]*):(\d+):\d+ \[(\d{1,3})\] ")

Key = tuple  # (kind, host or None, value)


def rank_key(rank: int) -> Key:
    return ("rank", None, int(rank))


def pid_key(pid: int, host: str | None = None) -> Key:
    return ("pid", host, int(pid))


def gpu_key(index: int, host: str | None = None) -> Key:
    return ("gpu", host, int(index))


def bus_key(bus: str, host: str | None = None) -> Key:
    return ("bus", host, normal_bus(bus))


def local_key(local: int, host: str | None = None) -> Key:
    return ("local", host, int(local))


def normal_bus(value: str) -> str:
    """A PCI bus number as NCCL (`3b000`), nvidia-smi (`0000:3B:00.0`) and the kernel (`3b`)
    write it: the bus byte, lower case, without leading zeros."""
    value = value.lower()
    if ":" in value:
        parts = value.split(":")
        value = parts[-2] if len(parts) >= 2 else parts[0]
    elif len(value) > 3:
        value = value[:-3]  # NCCL's busId: bus, device and function digits
    return value.lstrip("0") or "0"


@dataclass(frozen=True)
class Link:
    """Names of one process read together on one line (or assumed by a convention)."""

    keys: tuple[Key, ...]
    host: str | None = None  # the host the line puts the process on
    how: str = ""  # what the line is ("torchrun's failure table")
    where: tuple[str, int] | None = None  # (source, line)
    weight: int = WEAK
    assumed: bool = False


@dataclass(frozen=True)
class Named:
    """An answer of the map: the value, how the logs tie it, and the lines that do."""

    value: object
    how: str
    evidence: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class WorldSize:
    size: int
    how: str
    where: tuple[str, int] | None = None


class IdentityMap:
    """The union of aliases; build it with `build_identity` (or from links, in tests)."""

    def __init__(self, links=(), world: WorldSize | None = None, ranks: dict | None = None, named_hosts=(),
                 task_hosts: dict | None = None, local_world: int | None = None) -> None:
        self.links = tuple(links)
        self.world = world
        self.named = tuple(named_hosts)
        self.task_hosts = dict(task_hosts or {})
        self.local_world = local_world
        self._parent: dict[Key, Key] = {}
        self._members: dict[Key, list[Key]] = {}  # root -> its keys
        self._links_by_root: dict[Key, list[Link]] = {}  # root -> the links joined into it
        hosts = {key[1] for link in self.links for key in link.keys if key[1] is not None}
        self._single_host = len(hosts) <= 1
        self._hosted: dict[tuple, set[Key]] = defaultdict(set)  # (kind, value) -> the keys of that name with a host
        for link in self.links:
            for kind, host, value in link.keys:
                if host is not None and not self._single_host:
                    self._hosted[(kind, value)].add((kind, host, value))
        for link in sorted(self.links, key=lambda item: item.assumed):
            self._join(link, [self._key(key) for key in link.keys])
        self._ranks_seen = dict(ranks or {})

    # -- building
    def _key(self, key: Key) -> Key:
        kind, host, value = key
        return (kind, None, value) if self._single_host and kind != "rank" else key

    def _add(self, key: Key) -> None:
        if key not in self._parent:
            self._parent[key] = key
            self._members[key] = [key]
            self._links_by_root[key] = []

    def _find(self, key: Key) -> Key:
        root = key
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[key] != root:
            self._parent[key], key = root, self._parent[key]
        return root

    def _component_ranks(self, root: Key) -> set[int]:
        return {key[2] for key in self._members[root] if key[0] == "rank"}

    def _join(self, link: Link, keys: list[Key]) -> None:
        keys = [self._resolve_hostless(key) for key in keys]
        for key in keys:
            self._add(key)
        roots = list(dict.fromkeys(self._find(key) for key in keys))
        if link.assumed and len(set().union(*(self._component_ranks(root) for root in roots))) > 1:
            return  # a convention never makes one process two ranks
        first = roots[0]
        for other in roots[1:]:
            self._parent[other] = first
            self._members[first] += self._members.pop(other)
            self._links_by_root[first] += self._links_by_root.pop(other)
        self._links_by_root[first].append(link)

    def _resolve_hostless(self, key: Key) -> Key:
        """A key read without a host joins the same key of the one host that has it."""
        kind, host, value = key
        if host is not None or kind == "rank" or self._single_host:
            return key
        same = self._hosted.get((kind, value), set())
        return next(iter(same)) if len(same) == 1 else key

    def _links(self, root: Key) -> list[Link]:
        return self._links_by_root.get(root, [])

    # -- asking
    def rank_of(self, key: Key) -> Named | None:
        """The one rank the links tie this name to (None when none, or several)."""
        key = self._resolve_hostless(self._key(key))
        if key not in self._parent:
            if key[1] is not None:
                return self.rank_of((key[0], None, key[2])) if (key[0], None, key[2]) in self._parent else None
            return None
        root = self._find(key)
        ranks = self._component_ranks(root)
        if len(ranks) != 1:
            return None
        links = sorted(self._links(root), key=lambda link: (link.assumed, -link.weight))
        return Named(next(iter(ranks)), _describe(links), tuple(link.where for link in links if link.where)[:3])

    def host_of(self, rank: int | None, ranks_in_job: int = 0) -> Named | None:
        """The host the links put this rank on, or None."""
        if rank is None:
            return None
        key = rank_key(rank)
        if key in self._parent:
            votes: Counter = Counter()
            where: dict = {}
            for link in self._links(self._find(key)):
                if link.host and link.host not in LOCAL_NAMES:
                    votes[link.host] += link.weight
                    if link.where:
                        where.setdefault(link.host, link.where)
                    where.setdefault((link.host, "how"), link.how)
            if votes:
                host = votes.most_common(1)[0][0]
                return Named(host, where.get((host, "how")) or "the logs pair that rank with the host",
                             (where[host],) if host in where else ())
        return self._task_host(rank, ranks_in_job)

    def _task_host(self, rank: int, ranks_in_job: int) -> Named | None:
        if not self.task_hosts:
            return None
        world = self.local_world
        tasks_are_nodes = world and world > 1 and len(self.task_hosts) * world <= max(ranks_in_job, 1) * 2
        task = rank // world if tasks_are_nodes else rank
        if task not in self.task_hosts:
            return None
        host, where = self.task_hosts[task]
        what = f"node {task} (srun task {task})" if tasks_are_nodes else f"srun task {task}"
        return Named(host, f"Slurm reports {what} on that host", (where,) if where else ())

    def sole_host(self, input_hosts=(), rank: int | None = None) -> str | None:
        """The one host the logs name, when they name one only (in lines and file names alike) and
        `rank` can be on it: a rank at or past the processes of one node is another node's."""
        named = [host for host in self.named if host not in LOCAL_NAMES]
        seen = set(named) | {host for host in input_hosts if host not in LOCAL_NAMES}
        if len(named) != 1 or len(seen) != 1:
            return None
        if rank is not None and self.local_world and rank >= self.local_world:
            return None
        return named[0]

    @property
    def ranks(self) -> dict[int, tuple]:
        """Every rank the logs show, with a line that shows it."""
        known = dict(self._ranks_seen)
        for key in self._parent:
            if key[0] == "rank" and key[2] not in known:
                links = self._links(self._find(key))
                known[key[2]] = next((link.where for link in links if link.where), None)
        return known

    @property
    def rank_hosts(self) -> dict[int, str]:
        """rank -> host, for every rank the links place."""
        placed = {}
        for rank in self.ranks:
            named = self.host_of(rank)
            if named is not None:
                placed[rank] = named.value
        return placed


def _merged(links: list[Link]) -> list[Link]:
    """One link per distinct pairing: the weights of the lines that repeat it add up, the first
    line is the one cited (a rank's prefix on each of its 10,000 lines is one link)."""
    merged: dict[tuple, Link] = {}
    for link in links:
        key = (link.keys, link.host, link.how, link.assumed)
        known = merged.get(key)
        merged[key] = link if known is None else replace(known, weight=known.weight + link.weight)
    return list(merged.values())


def _describe(links: list[Link]) -> str:
    hows = list(dict.fromkeys(link.how for link in links if link.how))
    return "; ".join(hows[:2]) if hows else "the logs tie them together"


def build_identity(matches: list[Match], scans=(), local_world: int | None = None, ranks_seen=(),
                   file_hosts: dict | None = None) -> IdentityMap:
    """The map of one diagnosis, from every resolved match and each file's census."""
    file_hosts = file_hosts or {}
    links: list[Link] = []
    links += _links_from_scans(scans, file_hosts)
    links += _links_from_matches(matches, file_hosts)
    links += _deepspeed_subprocess_links(matches)
    links += _conventions(links, matches, scans)
    links = _merged(links)
    ranks = {rank: None for rank in ranks_seen}
    ranks.update(_declared_ranks(matches))
    return IdentityMap(links, _world_size(matches), ranks, _named_hosts(matches), _task_hosts(matches), local_world)


def _first_line(scan, rank: int | None = None, text: str = "") -> tuple[str, int] | None:
    """A line of the file (among those the scan kept) written by `rank` or containing `text`:
    what a link read from the file's census cites."""
    for hit in scan.hits:
        if (rank is None or hit.prefix.rank == rank) and text in hit.text:
            return (scan.input.display, hit.line)
    return None


def _links_from_scans(scans, file_hosts: dict) -> list[Link]:
    links = []
    for scan in scans:
        source = scan.input.display
        for pid, rank in scan.worker_pids.items():
            links.append(Link((pid_key(pid), rank_key(rank)), how="the worker's prefix names its pid and rank",
                              where=_first_line(scan, text=f"pid={pid}"), weight=STRONG))
        if scan.hints.pid is not None and len(scan.global_ranks) == 1:
            links.append(Link((pid_key(scan.hints.pid), rank_key(next(iter(scan.global_ranks)))),
                              how="the worker's file names its pid", where=_first_line(scan), weight=STRONG))
        host = file_hosts.get(source)
        if host and scan.global_ranks:
            for rank in scan.global_ranks:
                where = _first_line(scan, rank)
                if where is not None:
                    links.append(Link((rank_key(rank),), host, "the rank's lines are in that host's file", where))
        for (host, device), (pid, line) in scan.nccl_pids.items():
            links.append(Link((pid_key(pid, host), gpu_key(device, host)), host=host,
                              how="NCCL's line prefix names the process and its GPU", where=(source, line)))
    return links


def _links_from_matches(matches: list[Match], file_hosts: dict) -> list[Link]:
    links = []
    table_rows = table_rank_rows(matches)
    exit_rows = table_rank_rows(matches, TABLE_EXIT_ROW)
    max_nranks = max((int(m.captures["nranks"]) for m in matches if m.signature.name == "device-nccl-bus"), default=0)
    for match in matches:
        origin, name, captures = match.line.origin, match.signature.name, match.captures
        where = (origin.source, origin.line)
        host = origin.host or file_hosts.get(origin.source)
        if name in HOST_PAIRS and captures.get("rank") is not None:
            keys = [rank_key(int(captures["rank"]))]
            local = captures.get("local") or captures.get("local_after")
            if local is not None:
                keys.append(local_key(int(local), captures["host"]))
            links.append(Link(tuple(keys), captures["host"], "a line names the rank and its host", where, STRONG))
        elif name == TABLE_EXIT_ROW and exit_rows.get(where) is not None and captures.get("pid"):
            links.append(Link((rank_key(exit_rows[where]), pid_key(int(captures["pid"]), host)), host,
                              "torchrun's failure table", where, STRONG))
        elif name == "host-table-row" and table_rows.get(where) is not None:
            links.append(Link((rank_key(table_rows[where]),), captures["host"], "torchrun's failure table", where, STRONG))
        elif name in LAUNCHER_FAILED and captures.get("pid") and origin.rank is not None:
            links.append(Link((rank_key(origin.rank), pid_key(int(captures["pid"]), host)), host,
                              "the launcher's report names the rank's pid", where, STRONG))
        elif name == SHELL_KILLED and captures.get("pid") and origin.rank is not None and origin.rank_from in ONE_PROCESS_FILE:
            # the shell that started the process whose output the file is reports its death there
            links.append(Link((rank_key(origin.rank), pid_key(int(captures["pid"]), host)), host,
                              "the shell's report of the process it started, in that process's own log", where, STRONG))
        elif name == "host-ray-pid-ip":
            links.append(Link((pid_key(int(captures["pid"]), captures["host"]),), captures["host"],
                              "Ray names the worker's pid and node", where, STRONG))
        elif name == "device-nccl-bus":
            links.extend(_nccl_init_links(match, host, max_nranks))
        elif name in DEVICE_BUS:
            links.append(Link((gpu_key(int(captures["device"]), host), bus_key(captures["bus"], host)), host,
                              "nvidia-smi names the GPU's PCI bus", where, STRONG))
        elif name == DEVICE_PROCESS:
            links.append(Link((gpu_key(int(captures["device"]), host), pid_key(int(captures["pid"]), host)), host,
                              "nvidia-smi names the process on the GPU", where, STRONG))
        elif origin.rank is not None and match.role != "context":
            keys = [rank_key(origin.rank)]
            if origin.local_rank is not None and origin.host:
                keys.append(local_key(origin.local_rank, origin.host))
            links.append(Link(tuple(keys), origin.host, "the line's prefix names the rank and host", where, WEAK))
    return links


def _nccl_init_links(match: Match, host: str | None, max_nranks: int) -> list[Link]:
    """NCCL's init line: rank, cudaDev and busId of one process (rank only for the job-wide communicator)."""
    captures = match.captures
    origin = match.line.origin
    prefix = _NCCL_PREFIX.search(match.line.text)
    host = prefix.group(1) if prefix and not is_placeholder_host(prefix.group(1)) else host
    keys = [gpu_key(int(captures["device"]), host), bus_key(captures["bus"], host)]
    if prefix:
        keys.append(pid_key(int(prefix.group(2)), host))
    if int(captures["nranks"]) == max_nranks:
        keys.append(rank_key(int(captures["rank"])))
    return [Link(tuple(keys), host, "NCCL's init line names the rank, its GPU and PCI bus", (origin.source, origin.line), STRONG)]


def _deepspeed_subprocess_links(matches: list[Match]) -> list[Link]:
    """DeepSpeed's launcher lists its workers (`Killing subprocess P`) in local-rank order."""
    offsets = _host_offsets(matches)
    listed: dict = {}
    for match in matches:
        if match.signature.name == "deepspeed-killing-subprocess" and match.captures.get("pid"):
            pids = listed.setdefault(match.line.origin.host, {})
            pids.setdefault(int(match.captures["pid"]), (match.line.origin.source, match.line.origin.line))
    several_nodes = len(offsets) > 1 or any(m.signature.name == LAUNCHER_NODE and int(m.captures.get("nnodes") or 1) > 1
                                            for m in matches)
    links = []
    for host, pids in listed.items():
        base = offsets.get(host) if host is not None else None
        if base is None and several_nodes:
            continue  # a node the logs do not tie to its ranks (its name unknown or redacted): no rank
        for rank, (pid, where) in enumerate(sorted(pids.items()), start=base or 0):
            links.append(Link((pid_key(pid, host), rank_key(rank)), host,
                              "DeepSpeed's launcher lists its subprocesses in local-rank order", where, WEAK, assumed=True))
    return links


def _host_offsets(matches: list[Match]) -> dict:
    from .ranks import world_info_offsets

    offsets = {}
    for match in matches:
        if match.signature.name == LAUNCHER_NODE and match.line.origin.host:
            offsets[match.line.origin.host] = int(match.captures["node_rank"]) * int(match.captures["local_procs"])
        elif match.signature.name == LAUNCHER_WORLD and not offsets:
            offsets.update(world_info_offsets(match.captures["world"]))
    return offsets


def _conventions(links: list[Link], matches: list[Match], scans) -> list[Link]:
    """Weak links by convention: under one process per GPU, GPU N runs local rank N; on one
    node, local rank N is rank N."""
    gpus = {key for link in links for key in link.keys if key[0] == "gpu"}
    hosts = {key[1] for link in links for key in link.keys if key[1] is not None}
    hosts |= {m.line.origin.host for m in matches if m.line.origin.host}
    several_nodes = len(hosts) > 1 or any(scan.hints.node_rank for scan in scans)
    assumed = []
    for kind, host, index in sorted(gpus, key=str):
        assumed.append(Link((gpu_key(index, host), local_key(index, host)), host,
                            "one process per GPU: GPU N runs local rank N", None, WEAK, assumed=True))
        if not several_nodes:
            assumed.append(Link((local_key(index, host), rank_key(index)), host,
                                "a single node: local rank N is rank N", None, WEAK, assumed=True))
    return assumed


def _world_size(matches: list[Match]) -> WorldSize | None:
    """The job's size, as the largest size a launcher, an init line or NCCL declares."""
    found: list[WorldSize] = []
    for match in matches:
        name, captures, origin = match.signature.name, match.captures, match.line.origin
        where = (origin.source, origin.line)
        value = None
        if name == WORLD_SIZE:
            value = captures.get("world") or captures.get("procs") or captures.get("sizes")
        elif name == LAUNCHER_SIZE:
            value = captures.get("world")
        elif name == LAUNCHER_NPROC and captures.get("nproc"):
            nodes = _NNODES.search(match.line.text)
            value = int(captures["nproc"]) * int(nodes.group(1)) if nodes else None
        elif name == RANK_HOST_DECLARED:
            value = captures.get("world")
        elif name == "device-nccl-bus":
            value = captures.get("nranks")
        elif name == LAUNCHER_NODE:
            value = int(captures["nnodes"]) * int(captures["local_procs"])
        if value:
            found.append(WorldSize(int(value), match.line.text.strip()[:120], where))
    return max(found, key=lambda item: item.size) if found else None


def _declared_ranks(matches: list[Match]) -> dict:
    ranks = {}
    for match in matches:
        if match.signature.name == RANK_DECLARED:
            value = declared_rank(match.captures)
            if value is not None:
                ranks.setdefault(value, (match.line.origin.source, match.line.origin.line))
    return ranks


def _named_hosts(matches: list[Match]) -> tuple[str, ...]:
    named: Counter = Counter()
    for match in matches:
        if match.line.origin.host:
            named[match.line.origin.host] += 1
        if match.signature.name in HOST_SIGNATURES and match.captures.get("host"):
            named[match.captures["host"]] += 1
    return tuple(host for host, _count in named.most_common())


def _task_hosts(matches: list[Match]) -> dict:
    tasks = {}
    for match in matches:
        if match.signature.name == "host-srun-task":
            tasks.setdefault(int(match.captures["task"]), (match.captures["host"], (match.line.origin.source, match.line.origin.line)))
    return tasks


TABLE_EXIT_ROW = "root-cause-exitcode-row"  # `exitcode  : -15 (pid: 90533)` of torchrun's failure table


def table_rank_rows(matches: list[Match], row_name: str = "host-table-row") -> dict[tuple, int]:
    """(source, line of a `row_name` row) -> the rank of the same failure-table record (the rank
    row follows the host row, and precedes the exit-code row)."""
    ranks = {(m.line.origin.source, m.line.origin.line): int(m.captures["failed_rank"])
             for m in matches if m.signature.name == TABLE_RANK_ROW and "failed_rank" in m.captures}
    step = 1 if row_name == "host-table-row" else -1
    rows = {}
    for match in matches:
        if match.signature.name != row_name:
            continue
        source, line = match.line.origin.source, match.line.origin.line
        for distance in range(1, TABLE_ROW_DISTANCE + 1):
            rank = ranks.get((source, line + step * distance))
            if rank is not None:
                rows[(source, line)] = rank
                break
    return rows
