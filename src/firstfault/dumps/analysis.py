"""Across ranks' flight-recorder dumps: the first collective where the ranks disagree.

Per process group, collectives are matched by collective_seq_id (the ring buffer keeps
only the newest entries, so only sequence ids every dumped rank still holds are
compared, plus "never got that far"). At the first id where ranks disagree: ranks
that never entered it (silent), ranks that entered and never completed while others
did (stuck), and differing op, sizes or dtypes (mismatch). Across groups the earliest
disagreement wins. P2P entries are left out: their sequence ids differ by design.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from .flight_recorder import Entry, FlightRecorderDump
from .ranks import format_ranks
from .results import Collective, FlightRecorderResult, Mismatch, RankPosition
from .stack_frames import short, user_frame

COMPARED_FIELDS = ("op", "input_dtypes", "output_dtypes", "input_sizes", "output_sizes")
# Ops whose sizes legitimately differ across ranks (rooted, uneven splits, coalesced).
SIZE_FREE_OPS = {"gather", "scatter", "alltoall", "alltoall_base", "all_to_all",
                 "all_to_all_single", "coalesced", "_coalesced"}


@dataclass(frozen=True)
class _Finding:
    collective: Collective
    time_ns: int
    silent: tuple[int, ...]
    stuck: tuple[int, ...]
    waiting: tuple[int, ...]
    mismatch: tuple[Mismatch, ...]
    suspected: tuple[int, ...]
    members: tuple[int, ...]


def analyze_flight_recorder(dumps: Sequence[FlightRecorderDump],
                            world_size: int | None = None) -> FlightRecorderResult:
    """The first disagreement across the ranks' dumps; world_size adds expected ranks."""
    notes: list[str] = []
    by_rank = _one_dump_per_rank(dumps, notes)
    expected = _expected_ranks(by_rank, world_size)
    missing = tuple(sorted(expected - set(by_rank)))
    findings = [found for pg_id in _collective_groups(by_rank)
                if (found := _first_disagreement(pg_id, by_rank, expected, missing))]
    findings.sort(key=lambda found: (found.time_ns, found.collective.pg_id))
    first = findings[0] if findings else None
    positions = _positions(by_rank, first)
    explanation = notes + _explain(first, findings[1:], missing, positions, by_rank)
    return FlightRecorderResult(
        collective=first.collective if first else None,
        silent_ranks=first.silent if first else (),
        stuck_ranks=first.stuck if first else (),
        waiting_ranks=first.waiting if first else (),
        mismatch=first.mismatch if first else (),
        missing_dumps=missing,
        suspected_ranks=first.suspected if first else (),
        positions=positions,
        explanation=tuple(line[:1].upper() + line[1:] for line in explanation),
        sources=tuple(dump.source for dump in by_rank.values()),
    )


def _one_dump_per_rank(dumps, notes: list[str]) -> dict[int, FlightRecorderDump]:
    """Rank -> dump; of two dumps for one rank (pickle and JSON) the one with stacks wins."""
    by_rank: dict[int, FlightRecorderDump] = {}
    for dump in dumps:
        if dump.rank is None:
            notes.append(f"{dump.source}: no rank in the file name; this dump was left out.")
            continue
        held = by_rank.get(dump.rank)
        if held is None or _richness(dump) > _richness(held):
            by_rank[dump.rank] = dump
    return dict(sorted(by_rank.items()))


def _richness(dump: FlightRecorderDump) -> tuple[int, int]:
    return (len(dump.entries), sum(1 for entry in dump.entries if entry.frames))


def _expected_ranks(by_rank, world_size: int | None) -> set[int]:
    expected = set(by_rank)
    for dump in by_rank.values():
        for ranks in dump.pg_ranks.values():
            expected.update(ranks)
    if world_size:
        expected.update(range(world_size))
    return expected


def _collective_groups(by_rank) -> list[str]:
    groups = {entry.pg_id for dump in by_rank.values() for entry in dump.entries
              if not entry.is_p2p}
    return sorted(groups, key=lambda pg_id: (len(pg_id), pg_id))


def _members(pg_id: str, by_rank, expected: set[int]) -> set[int]:
    """Ranks of a group: its pg_config entry, the world for group 0, else who recorded it."""
    for dump in by_rank.values():
        for entry in dump.entries:
            if entry.pg_id == pg_id and dump.pg_ranks.get(entry.pg_name):
                return set(dump.pg_ranks[entry.pg_name])
    if pg_id == "0":
        return set(expected)
    return {rank for rank, dump in by_rank.items()
            if any(entry.pg_id == pg_id for entry in dump.entries)}


def _sequences(dump: FlightRecorderDump, pg_id: str) -> dict[int, Entry]:
    seqs: dict[int, Entry] = {}
    for entry in dump.entries:
        if entry.pg_id == pg_id and not entry.is_p2p and entry.collective_seq_id > 0:
            seqs.setdefault(entry.collective_seq_id, entry)
    return seqs


def _first_disagreement(pg_id, by_rank, expected, missing) -> _Finding | None:
    members = _members(pg_id, by_rank, expected)
    dumped = sorted(members & set(by_rank))
    seqs = {rank: _sequences(by_rank[rank], pg_id) for rank in dumped}
    held = [min(table) for table in seqs.values() if table]
    if not held:
        return None
    window_start = max(held)
    all_ids = sorted({seq for table in seqs.values() for seq in table if seq >= window_start})
    for seq in all_ids:
        found = _disagreement_at(seq, pg_id, seqs, by_rank, members, missing, all_ids[-1])
        if found:
            return found
    return None


def _disagreement_at(seq, pg_id, seqs, by_rank, members, missing, last_seq) -> _Finding | None:
    present = {rank: table[seq] for rank, table in seqs.items() if seq in table}
    issued_ns = min(entry.time_created_ns for entry in present.values())
    silent = tuple(rank for rank, table in seqs.items() if seq not in table and (
        max(table) < seq if table else _covers(by_rank[rank], issued_ns)))
    mismatch = _mismatches(present)
    completed = {rank for rank, entry in present.items() if by_rank[rank].completed(entry)}
    open_ranks = set(present) - completed
    stuck: set[int] = open_ranks if completed else _not_started(present, by_rank)
    odd = {rank for item in mismatch for rank in item.odd_ranks}
    waiting = tuple(sorted(open_ranks - stuck - odd))
    missing_here = tuple(sorted(set(missing) & members))
    hung_here = seq == last_seq and open_ranks and not completed
    suspected = missing_here if hung_here and not (silent or stuck or mismatch) else ()
    if not (silent or stuck or mismatch or suspected or hung_here):
        return None
    sample = next(iter(present.values()))
    collective = Collective(pg_id=pg_id, pg_name=sample.pg_name, pg_desc=sample.pg_desc,
                            seq_id=seq, op=_majority_op(present), is_p2p=False)
    return _Finding(collective=collective, time_ns=issued_ns,
                    silent=silent, stuck=tuple(sorted(stuck)), waiting=waiting,
                    mismatch=mismatch, suspected=suspected, members=tuple(sorted(members)))


def _covers(dump: FlightRecorderDump, time_ns: int) -> bool:
    """Whether a rank's ring buffer reaches back to time_ns. The buffer is shared by all
    groups, so a rank with no entry of a group may have lost them to newer ones."""
    return not dump.entries or min(entry.time_created_ns for entry in dump.entries) <= time_ns


def _not_started(present: dict[int, Entry], by_rank) -> set[int]:
    """None completed: ranks still 'scheduled' while others 'started' lag behind (NCCL)."""
    started = {rank for rank, entry in present.items() if by_rank[rank].started(entry)}
    return set(present) - started if started else set()


def _majority_op(present: dict[int, Entry]) -> str:
    return Counter(entry.profiling_name for entry in present.values()).most_common(1)[0][0]


def _field_value(entry: Entry, name: str) -> str:
    if name == "op":
        return entry.profiling_name
    return str(_as_lists(getattr(entry, name)))


def _as_lists(value):
    return [_as_lists(item) for item in value] if isinstance(value, tuple) else value


def _mismatches(present: dict[int, Entry]) -> tuple[Mismatch, ...]:
    if len(present) < 2:
        return ()
    ops = {entry.profiling_name.split(":")[-1] for entry in present.values()}
    fields = [name for name in COMPARED_FIELDS
              if not (name.endswith("sizes") and (ops & SIZE_FREE_OPS or len(ops) > 1))]
    found = []
    for name in fields:
        holders: dict[str, list[int]] = {}
        for rank, entry in sorted(present.items()):
            holders.setdefault(_field_value(entry, name), []).append(rank)
        if len(holders) > 1:
            found.append(_mismatch(name, holders))
    return tuple(found)


def _mismatch(name: str, holders: dict[str, list[int]]) -> Mismatch:
    ordered = sorted(holders.items(), key=lambda item: (-len(item[1]), item[1][0]))
    tie = len(ordered[0][1]) == len(ordered[1][1])
    odd = () if tie else tuple(sorted(rank for _, ranks in ordered[1:] for rank in ranks))
    return Mismatch(field=name, values=tuple((value, tuple(ranks)) for value, ranks in ordered),
                    odd_ranks=odd)


def _positions(by_rank, first: _Finding | None) -> tuple[RankPosition, ...]:
    positions = []
    for rank, dump in by_rank.items():
        entries = [entry for entry in dump.entries if not entry.is_p2p and (
            first is None or entry.pg_id == first.collective.pg_id)] or list(dump.entries)
        if not entries:
            positions.append(RankPosition(rank=rank, seq_id=None, op="", state="absent"))
            continue
        last = max(entries, key=lambda entry: (entry.seq_id, entry.record_id))
        state = "completed" if dump.completed(last) else (
            "started" if dump.started(last) else "scheduled")
        positions.append(RankPosition(rank=rank, seq_id=last.seq_id, op=last.profiling_name,
                                      state=state, frames=last.frames))
    return tuple(positions)


def _explain(first, others, missing, positions, by_rank) -> list[str]:
    if not by_rank:
        return ["No flight-recorder dump could be read."]
    lines = []
    if first is None:
        lines.append("The flight-recorder dumps agree: every recorded collective was entered "
                     "by all ranks with the same op, sizes and dtypes.")
    else:
        lines.extend(_explain_finding(first, positions))
    for other in others:
        lines.append(f"Process group {other.collective.pg_id} also diverges, later, at "
                     f"{other.collective.op} seq {other.collective.seq_id}.")
    if missing:
        lines.append(f"No dump from {format_ranks(missing)}: what it last did is unknown "
                     "(the guilty rank's own dump is often the one missing).")
    if any(entry.is_p2p for dump in by_rank.values() for entry in dump.entries):
        lines.append("Point-to-point operations (send/recv) were recorded; they are not "
                     "compared across ranks.")
    return lines


def _explain_finding(found: _Finding, positions) -> list[str]:
    where = str(found.collective)
    lines = []
    entered = sorted(set(found.members) - set(found.silent) - set(_missing_of(found, positions)))
    if found.silent:
        lines.append(f"{format_ranks(found.silent)} never entered {where}; "
                     f"{format_ranks(entered)} did.")
        lines.extend(_last_seen(found.silent, positions))
    for item in found.mismatch:
        values = "; ".join(f"{value} on {format_ranks(ranks)}" for value, ranks in item.values)
        lines.append(f"At {where} the ranks disagree on {item.field}: {values}.")
    if found.stuck:
        lines.append(f"{format_ranks(found.stuck)} entered {where} and never completed it "
                     "while the others moved on or started it.")
    if found.suspected:
        lines.append(f"Every rank with a dump entered {where} and waits; "
                     f"{format_ranks(found.suspected)} left no dump and is the likely silent rank.")
    if found.waiting:
        lines.append(f"{format_ranks(found.waiting)} wait in {where}: their timeouts are collateral.")
    if not (found.silent or found.stuck or found.mismatch or found.suspected):
        lines.append(f"All ranks entered {where} and none completed it: the dumps single out "
                     "no rank; look at the transport or at a rank stuck below PyTorch.")
    return lines


def _missing_of(found: _Finding, positions) -> list[int]:
    dumped = {position.rank for position in positions}
    return [rank for rank in found.members if rank not in dumped]


def _last_seen(ranks, positions) -> list[str]:
    lines = []
    for position in positions:
        if position.rank not in ranks or position.seq_id is None:
            continue
        frame = user_frame(position.frames)
        called = f", called from {short(frame)}" if frame else ""
        lines.append(f"Rank {position.rank}'s last recorded collective: {position.op} seq "
                     f"{position.seq_id} ({position.state}){called}.")
    return lines
