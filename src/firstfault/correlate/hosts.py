"""Which host each rank ran on, from everything the logs say about hosts.

Sources, each a pair the logs print: torchrun's failure table (`host : X` beside
`rank : R (local_rank: L)`), init lines naming both (`rank=5 ... host=node018`), mpirun's
`process rank R ... on node X`, Ray's `(pid=P, ip=X)` for the worker whose pid names a rank, lines
whose prefix names a host and whose rank is known, and
Slurm's `srun: error: X: task T` (T is the rank when srun started one task per rank, the node
when it started one launcher per node).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..match.context import HOST_PAIRS, HOST_SIGNATURES
from ..model import Match

TABLE_ROW_DISTANCE = 3  # lines between a failure table's host row and its rank row


@dataclass(frozen=True)
class JobHosts:
    rank_hosts: dict = field(default_factory=dict)  # global rank -> host
    task_hosts: dict = field(default_factory=dict)  # srun task -> host
    named: tuple = ()  # every host the logs name, most often named first
    local_world: int | None = None  # processes per node, when known

    def host_of(self, rank: int | None, ranks_in_job: int = 0) -> tuple[str | None, str]:
        """(host, how) for a rank, or (None, "")."""
        if rank is None:
            return None, ""
        if rank in self.rank_hosts:
            return self.rank_hosts[rank], "the logs pair that rank with the host"
        if self.task_hosts:
            tasks_are_nodes = self.local_world and self.local_world > 1 and len(self.task_hosts) * self.local_world <= max(ranks_in_job, 1) * 2
            task = rank // self.local_world if tasks_are_nodes else rank
            if task in self.task_hosts:
                what = f"node {task} (srun task {task})" if tasks_are_nodes else f"srun task {task}"
                return self.task_hosts[task], f"Slurm reports {what} on that host"
        return None, ""


def job_hosts(matches: list[Match], local_world: int | None, pid_ranks: dict | None = None) -> JobHosts:
    """`pid_ranks` (pid -> rank) joins lines that name a worker's pid and host (Ray's task errors)
    to that worker's rank."""
    pid_ranks = pid_ranks or {}
    pairs: dict[int, Counter] = defaultdict(Counter)
    tasks: dict[int, str] = {}
    named: Counter = Counter()
    table_rows = _table_rank_rows(matches)
    for match in matches:
        origin, name, captures = match.line.origin, match.signature.name, match.captures
        if origin.host:
            named[origin.host] += 1
        if name in HOST_SIGNATURES and captures.get("host"):
            named[captures["host"]] += 1
        if name in HOST_PAIRS:
            pairs[int(captures["rank"])][captures["host"]] += 5
        elif name == "host-table-row":
            rank = table_rows.get((origin.source, origin.line))
            if rank is not None:
                pairs[rank][captures["host"]] += 5
        elif name == "host-srun-task":
            tasks.setdefault(int(captures["task"]), captures["host"])
        elif name == "host-ray-pid-ip" and int(captures["pid"]) in pid_ranks:
            pairs[pid_ranks[int(captures["pid"])]][captures["host"]] += 5
        elif origin.rank is not None and origin.host and match.role != "context":
            pairs[origin.rank][origin.host] += 1
    rank_hosts = {rank: counts.most_common(1)[0][0] for rank, counts in pairs.items()}
    return JobHosts(rank_hosts, tasks, tuple(host for host, _count in named.most_common()), local_world)


def _table_rank_rows(matches: list[Match]) -> dict[tuple, int]:
    """(source, host-row line) -> the failed rank of the same failure-table record."""
    ranks = {(m.line.origin.source, m.line.origin.line): int(m.captures["failed_rank"])
             for m in matches if m.signature.name == "root-cause-rank-row" and "failed_rank" in m.captures}
    rows = {}
    for match in matches:
        if match.signature.name != "host-table-row":
            continue
        source, line = match.line.origin.source, match.line.origin.line
        for distance in range(1, TABLE_ROW_DISTANCE + 1):
            rank = ranks.get((source, line + distance))
            if rank is not None:
                rows[(source, line)] = rank
                break
    return rows
