"""The fleet table: one row per job, a folder of Parquet files that DuckDB (or any Parquet reader) reads.

    writer = TableWriter("fleet.parquet"); writer.add(row) ...; writer.close()
    rows = read_rows("fleet.parquet")          # latest row per job, times as epoch seconds

Rows are streamed to disk as they arrive: every `batch_rows` rows (or `flush_seconds`) become a
new part file, written under a temporary name and renamed, so an interrupted scan keeps what it
finished and a reader never sees half a file. When the scan ends the parts are compacted into one
file with the latest row of each job; a table left with several parts (an interrupted scan) is
compacted by the next scan. Between scans, `SELECT * FROM 'fleet.parquet/*.parquet'` has one
row per job; `firstfault fleet sql` always reads the latest row of each job.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import UsageError

TABLE_SCHEMA = "firstfault.fleet-table/3"  # 2: log_time; 3: job_key, job_path and job_id masked
TABLE_VARIABLE = "FIRSTFAULT_FLEET_TABLE"  # the table `fleet sql` and the web app's /fleet page read by default
PART_GLOB = "*.parquet"
TIME_COLUMNS = ("scanned_at", "modified_at", "first_fault_time", "log_time")
COLUMNS = (
    # (name, pyarrow type name) -- the documented columns, in order (docs/fleet.md)
    ("job_path", "string"), ("job_key", "string"), ("job_id", "string"), ("scanned_at", "time"), ("input_files", "int32"),
    ("input_bytes", "int64"), ("modified_at", "time"), ("stamp", "string"), ("engine_version", "string"),
    ("status", "string"), ("failure_id", "string"), ("entry_id", "string"), ("confidence", "float64"),
    ("action", "string"), ("summary", "string"), ("initiating_rank", "int32"), ("initiating_host", "string"),
    ("first_fault_time", "time"), ("log_time", "time"), ("evidence_source", "string"), ("evidence_line", "int32"),
    ("fingerprint", "string"), ("fingerprint_text", "string"), ("hosts", "strings"), ("ranks", "int32"),
    ("skipped_inputs", "int32"), ("error", "string"),
)


def arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(),
             "time": pa.timestamp("ms", tz="UTC"), "strings": pa.list_(pa.string())}
    return pa.schema([(name, types[kind]) for name, kind in COLUMNS], metadata={"schema": TABLE_SCHEMA})


def check_table_path(path: str | Path) -> Path:
    """The table folder; refuses a path that is a file (a table is a folder of Parquet parts)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file; a fleet table is a folder of Parquet files",
                         "give a new name, e.g. --out fleet.parquet (it is created as a folder)")
    return folder


def parts(path: str | Path) -> list[Path]:
    folder = Path(path)
    return sorted(folder.glob(PART_GLOB)) if folder.is_dir() else []


class TableWriter:
    """Appends rows as part files; `close()` compacts the table into one file."""

    def __init__(self, path: str | Path, batch_rows: int = 500, flush_seconds: float = 10.0, clock=time.monotonic) -> None:
        self.folder = check_table_path(path)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.batch_rows = batch_rows
        self.flush_seconds = flush_seconds
        self.clock = clock
        self.buffer: list[dict] = []
        self.last_flush = clock()
        self.written = 0

    def add(self, row: dict) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= self.batch_rows or self.clock() - self.last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        self.last_flush = self.clock()
        if not self.buffer:
            return
        write_part(self.folder, self.buffer)
        self.written += len(self.buffer)
        self.buffer = []

    def close(self) -> None:
        self.flush()
        compact(self.folder)


def write_part(folder: Path, rows: list[dict], prefix: str = "part") -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()
    columns = {}
    for name, kind in COLUMNS:
        values = [row.get(name) for row in rows]
        if kind == "time":
            values = [None if value is None else int(round(value * 1000)) for value in values]
        columns[name] = pa.array(values, type=schema.field(name).type)
    table = pa.Table.from_pydict(columns, schema=schema)
    final = folder / f"{prefix}-{time.time_ns()}-{os.getpid()}.parquet"
    temporary = final.with_name(final.name + ".tmp")
    pq.write_table(table, temporary, compression="zstd")
    os.replace(temporary, final)
    return final


def read_table(path: str | Path):
    """The latest row of each job as a pyarrow Table (empty when there is no table yet)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = parts(path)
    if not files:
        return arrow_schema().empty_table()
    tables = []
    for file in files:
        table = pq.read_table(file)
        found = (table.schema.metadata or {}).get(b"schema", b"").decode()
        if found != TABLE_SCHEMA:
            raise UsageError(f"{file} is not a firstfault fleet table ({found or 'no schema'}; expected {TABLE_SCHEMA})",
                             "scan into a new table: firstfault fleet scan ROOT --out NEW.parquet")
        tables.append(table)
    table = pa.concat_tables(tables)
    if len(files) == 1:
        return table
    # keep the latest row of each job: sort by (job_key, scanned_at desc), take the first of each job
    order = pc.sort_indices(table, sort_keys=[("job_key", "ascending"), ("scanned_at", "descending")])
    table = table.take(order)
    paths = table.column("job_key").to_pylist()
    keep = [index for index, value in enumerate(paths) if index == 0 or paths[index - 1] != value]
    return table.take(pa.array(keep, type=pa.int64()))


def read_rows(path: str | Path) -> list[dict]:
    """The latest row of each job, times as epoch seconds (float) or None."""
    rows = read_table(path).to_pylist()
    for row in rows:
        for name in TIME_COLUMNS:
            value = row.get(name)
            row[name] = value.timestamp() if value is not None else None
    return rows


def compact(path: str | Path) -> None:
    """Rewrite the parts as one file holding the latest row of each job."""
    import pyarrow.parquet as pq

    folder = Path(path)
    old = parts(folder)
    if len(old) <= 1:
        return
    table = read_table(folder)
    final = folder / f"jobs-{time.time_ns()}.parquet"
    temporary = final.with_name(final.name + ".tmp")
    pq.write_table(table, temporary, compression="zstd")
    os.replace(temporary, final)
    for file in old:
        file.unlink(missing_ok=True)


def known_stamps(path: str | Path) -> dict[str, str]:
    """job_key -> stamp of every job in the table (what an incremental scan compares)."""
    if not parts(path):
        return {}
    table = read_table(path).select(["job_key", "stamp", "status"])
    return {job: stamp for job, stamp, status in zip(*(table.column(name).to_pylist() for name in ("job_key", "stamp", "status")))
            if status != "error"}


def job_key(path: str) -> str:
    """Which job a row is: a digest of its path as found (the path is stored masked, and two
    users' `/home/<user>/run1` must stay two jobs)."""
    import hashlib

    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:24]
