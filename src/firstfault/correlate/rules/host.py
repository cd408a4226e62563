"""Host rules: the host where the first fault started, when its own line does not name one (the
first that applies decides). The host is what an on-call engineer acts on (drain, exclude)."""
from __future__ import annotations

from ...match.context import HOST_SIGNATURES
from ..facts import Facts
from ..failure_table import first_failure_ties
from ..ids import STRAGGLER
from ..identity import LOCAL_NAMES
from . import Decision, rule


def needs_host(facts: Facts, decision: Decision) -> bool:
    return (decision.initiating is not None and not decision.initiating.line.origin.host and not decision.host
            and not decision.host_decided)


def initiating_rank(decision: Decision) -> int | None:
    return decision.rank if decision.rank is not None else decision.initiating.line.origin.rank


@rule("host-named-on-its-line")
def named_on_its_line(facts: Facts, decision: Decision) -> Decision | None:
    """The failing line names, in its own text, the node it happened on (Ray's `at node (ID: …,
    IP: …)`, Megatron's `Rank 2, node X`, srun's `srun: error: X: task 3`, mpirun's `on node X`)."""
    origin = decision.initiating.line.origin
    for match in facts.matches:
        where = match.line.origin
        if (match.signature.name in HOST_SIGNATURES and where.line == origin.line and where.source == origin.source
                and match.captures.get("host") and match.captures["host"] not in LOCAL_NAMES):
            host = match.captures["host"]
            return decision.with_because("host-named-on-its-line", f"the failing line itself names host {host}", [match],
                                         host=host)
    return None


@rule("host-of-rank")
def host_of_rank(facts: Facts, decision: Decision) -> Decision | None:
    """The logs pair the initiating rank with a host (failure table, init line, mpirun, srun task)."""
    rank = initiating_rank(decision)
    named = facts.identity.host_of(rank, len(facts.inputs.ranks))
    if named is None or named.value in LOCAL_NAMES:
        return None
    return decision.with_because("host-of-rank", f"rank {rank} ran on host {named.value}: {named.how}",
                                 named.evidence, host=named.value)


def _full_with_others(facts: Facts, host: str, rank: int | None) -> bool:
    """Whether, in a job kept in several files (a node's each), the logs put a node's worth of
    other ranks on `host`: `rank` then ran on a node whose name no line gives (a c10d rendezvous
    numbers the nodes in the order they joined, so that node may hold rank 0)."""
    if rank is None or len(facts.inputs.files) < 2 or not facts.identity.local_world:
        return False
    held = [other for other, name in facts.identity.rank_hosts.items() if name == host]
    return rank not in held and len(held) >= facts.identity.local_world


@rule("host-only-one")
def only_host(facts: Facts, decision: Decision) -> Decision | None:
    """Every host the logs name is the same one, and the failing rank is on the first node."""
    rank = initiating_rank(decision)
    host = facts.identity.sole_host(facts.inputs.hosts, rank)
    if host is None or _full_with_others(facts, host, rank):
        return None
    naming = next((m for m in facts.matches if m.line.origin.host == host or m.captures.get("host") == host), None)
    return decision.with_because("host-only-one", f"the logs name one host only, {host}", [naming], host=host)


@rule("host-of-tied-ranks")
def host_of_tied_ranks(facts: Facts, decision: Decision) -> Decision | None:
    """No rank could be named because the launcher's failure table ties several ranks in its first
    second (failure_table.py), and the logs place every one of them on the same host."""
    if initiating_rank(decision) is not None or facts.relations.core(decision.primary) == STRAGGLER:
        return None  # (in a hang the ranks that died first are those that gave up waiting)
    tied = first_failure_ties(facts)
    named = [facts.identity.host_of(rank, len(facts.inputs.ranks)) for rank in sorted(tied)]
    hosts = {item.value for item in named if item is not None}
    if len(tied) < 2 or None in named or len(hosts) != 1 or hosts & set(LOCAL_NAMES):
        return None
    host = hosts.pop()
    if {name.split(".")[0] for name in _tasks_failed_on(facts)} - {host.split(".")[0]}:  # (node-3 is node-3.cluster)
        return None  # another node's tasks failed too: which node's came first, the table does not say
    ranks = ", ".join(map(str, sorted(tied)))
    return decision.with_because("host-of-tied-ranks", f"ranks {ranks}, one of which failed first, all ran on host {host}: "
                                 f"{named[0].how}", named[0].evidence, host=host)


def _tasks_failed_on(facts: Facts) -> set[str]:
    """The hosts srun reports tasks of failing on (`srun: error: node-3: task 1: Exited with exit
    code 1`; not its `Terminated`, the stop of the others)."""
    failed = {(m.line.origin.source, m.line.origin.line) for m in facts.matches if m.signature.name == "launcher-failed-srun"}
    return {m.captures["host"] for m in facts.matches if m.signature.name == "host-srun-task"
            and (m.line.origin.source, m.line.origin.line) in failed}
