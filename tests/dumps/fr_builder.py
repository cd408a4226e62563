"""Flight-recorder dumps in the exact format c10d writes, for cases gloo on CPU cannot produce.

Every entry starts as a copy of an entry from a real torch 2.13 dump
(tests/fixtures/dumps/gloo_hang_sleep/fr_trace_rank_0), so keys, key order and value
types are the writer's own (FlightRecorder::getCollectiveTrace / dump_dict); only the
values a case needs are changed: NCCL's profiling names and started/completed states,
sizes, dtypes, sequence ids. Pickled with protocol 2, the protocol c10d's pickler writes.
"""
from __future__ import annotations

import copy
import pickle
from pathlib import Path

from firstfault.dumps.flight_recorder import restricted_loads

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"
TEMPLATE = FIXTURES / "gloo_hang_sleep" / "fr_trace_rank_0"


def files(folder: Path, pattern: str = "*") -> list[str]:
    return sorted(str(path) for path in folder.glob(pattern))


def template() -> dict:
    return restricted_loads(TEMPLATE.read_bytes(), str(TEMPLATE))


def entry(seq: int, op: str = "nccl:all_reduce", state: str = "completed", *,
          sizes=((8, 4),), dtype: str = "Float", pg=("0", "default_pg"), pg_id: int = 0,
          record_id: int | None = None, frames=None) -> dict:
    item = copy.deepcopy(template()["entries"][0])
    record_id = seq - 1 if record_id is None else record_id
    item.update(collective_seq_id=seq, op_id=seq, profiling_name=op, state=state,
                record_id=record_id, pg_id=pg_id, process_group=tuple(pg),
                time_created_ns=item["time_created_ns"] + record_id * 1000,
                input_sizes=[list(size) for size in sizes], input_dtypes=[dtype] * len(sizes),
                output_sizes=[list(size) for size in sizes], output_dtypes=[dtype] * len(sizes),
                retired=state == "completed",
                time_discovered_started_ns=None if state == "scheduled" else 1,
                time_discovered_completed_ns=1 if state == "completed" else None)
    if frames is not None:
        item["frames"] = [{"name": name, "filename": file, "line": line}
                          for name, file, line in frames]
    return item


def dump(entries: list[dict], ranks=(0, 1, 2, 3), pg_name: str = "0") -> dict:
    raw = copy.deepcopy(template())
    raw["pg_config"] = {pg_name: {"name": pg_name, "desc": "default_pg", "ranks": str(list(ranks))}}
    status: dict[str, dict] = {}
    for item in entries:
        group = status.setdefault(str(item["pg_id"]), {
            "last_enqueued_collective": -1, "last_started_collective": -1,
            "last_completed_collective": -1})
        seq = item["collective_seq_id"]
        group["last_enqueued_collective"] = max(group["last_enqueued_collective"], seq)
        if item["state"] in ("started", "completed"):
            group["last_started_collective"] = max(group["last_started_collective"], seq)
        if item["state"] == "completed":
            group["last_completed_collective"] = max(group["last_completed_collective"], seq)
    raw["pg_status"] = status
    raw["entries"] = entries
    return raw


def write_dumps(folder: Path, per_rank: dict[int, dict]) -> list[str]:
    """One pickle per rank, named as the dump writer names them."""
    paths = []
    for rank, raw in per_rank.items():
        path = folder / f"nccl_trace_rank_{rank}"
        path.write_bytes(pickle.dumps(raw, protocol=2))
        paths.append(str(path))
    return paths
