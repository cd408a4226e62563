"""Resolve who wrote each hit: global rank and host, using what every file's census learned.

A `[default3]:` prefix is a LOCAL rank: it becomes global through the file's own
`[default3]:[rank11]:` pairs, else node rank x local world size (node rank from the file name),
else (single node) the local rank itself.
"""
from __future__ import annotations

from collections import Counter

from ..ingest.attribution import device_mentioned, rank_mentioned
from ..match.context import LAUNCHER_FAILED, LAUNCHER_NODE
from ..match.scanner import FileScan, RawHit
from ..model import LogLine, Match, Origin


def local_world_size(scans: list[FileScan]) -> int | None:
    highest = [max(scan.local_ranks) for scan in scans if scan.local_ranks]
    from_dirs = [scan.hints.local_rank for scan in scans if scan.hints.local_rank is not None]
    candidates = highest + from_dirs
    return max(candidates) + 1 if candidates else None


def _file_offset(scan: FileScan, world: int | None) -> int | None:
    """global - local for this file, when it can be known."""
    offsets = Counter({global_rank - local: count for (local, global_rank), count in scan.local_to_global.items()})
    if offsets:
        return offsets.most_common(1)[0][0]
    if scan.hints.node_rank is not None and world:
        return scan.hints.node_rank * world
    return None


def resolve(scans: list[FileScan]) -> list[Match]:
    """Every hit of every file as a Match with its Origin, in input order."""
    world = local_world_size(scans)
    any_node_hints = any(scan.hints.node_rank is not None for scan in scans)
    host_offsets = _host_offsets(scans)
    matches: list[Match] = []
    order = 0
    for scan in scans:
        offset = _file_offset(scan, world)
        if offset is None and not any_node_hints and not host_offsets:
            offset = 0  # single node: local rank == global rank
        for hit in scan.hits:
            host = hit.prefix.host
            rank, host = _who(hit, scan, host_offsets.get(host, offset) if host else offset)
            origin = Origin(source=scan.input.display, line=hit.line, rank=rank, host=host,
                            time=hit.time, time_inherited=hit.time_inherited)
            matches.append(Match(hit.signature, LogLine(hit.text, origin), hit.captures, order))
            order += 1
    return matches


def _host_offsets(scans: list[FileScan]) -> dict[str, int]:
    """host -> node_rank x local processes, from the launcher's per-node report lines."""
    offsets = {}
    for scan in scans:
        for hit in scan.hits:
            if hit.signature.name == LAUNCHER_NODE and hit.prefix.host:
                offsets[hit.prefix.host] = int(hit.captures["node_rank"]) * int(hit.captures["local_procs"])
    return offsets


def _who(hit: RawHit, scan: FileScan, offset: int | None) -> tuple[int | None, str | None]:
    prefix = hit.prefix
    local = prefix.local_rank if prefix.local_rank is not None else scan.hints.local_rank
    if hit.signature.name in LAUNCHER_FAILED:
        local = int(hit.captures["local"])  # the launcher names the local rank that failed
    rank = prefix.rank
    if rank is None and local is not None and offset is not None:
        rank = local + offset
    if rank is None:
        rank = scan.hints.rank
    if rank is None:
        rank = rank_mentioned(hit.text[prefix.offset:])
    if rank is None and offset is not None:
        device = device_mentioned(hit.text)
        rank = device + offset if device is not None else None
    host = prefix.host or (scan.nccl_hosts.get(local) if local is not None else None) or scan.hints.host
    return rank, host


def ranks_seen(scans: list[FileScan], matches: list[Match]) -> list[int]:
    ranks = {match.line.origin.rank for match in matches if match.line.origin.rank is not None}
    world = local_world_size(scans)
    for scan in scans:
        ranks.update(scan.global_ranks)
        if scan.hints.rank is not None:
            ranks.add(scan.hints.rank)
        offset = _file_offset(scan, world)
        if offset is not None:
            ranks.update(local + offset for local in scan.local_ranks)
    return sorted(ranks)


def hosts_seen(scans: list[FileScan], matches: list[Match]) -> list[str]:
    hosts = {match.line.origin.host for match in matches if match.line.origin.host}
    for scan in scans:
        hosts.update(scan.nccl_hosts.values())
        if scan.hints.host:
            hosts.add(scan.hints.host)
    return sorted(hosts)


def pid_ranks(scans: list[FileScan], matches: list[Match]) -> dict[int, int]:
    """pid -> global rank: from Ray worker file names (a file whose lines name one rank) and
    from launcher reports (`local_rank: 2 (pid: 71212)`)."""
    mapping: dict[int, int] = {}
    for scan in scans:
        if scan.hints.pid is not None and len(scan.global_ranks) == 1:
            mapping[scan.hints.pid] = next(iter(scan.global_ranks))
    for match in matches:
        if match.signature.name in LAUNCHER_FAILED and match.captures.get("pid") and match.line.origin.rank is not None:
            mapping.setdefault(int(match.captures["pid"]), match.line.origin.rank)
    return mapping
