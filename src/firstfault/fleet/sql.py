"""`fleet sql`: DuckDB over the fleet table, with a `jobs` view that holds the latest row of each job.

    columns, rows = run_query("fleet.parquet", "SELECT failure_id, count(*) FROM jobs GROUP BY 1")

Any DuckDB client reads the table directly too: `SELECT * FROM 'fleet.parquet/*.parquet'`.
"""
from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

from ..errors import FirstfaultError, UsageError
from .table import PART_GLOB, parts


def jobs_view_sql(table: str | Path) -> str:
    pattern = str(Path(table) / PART_GLOB).replace("'", "''")
    return (
        "CREATE OR REPLACE VIEW jobs AS SELECT * EXCLUDE (latest) FROM ("
        f"SELECT *, row_number() OVER (PARTITION BY job_path ORDER BY scanned_at DESC) AS latest FROM read_parquet('{pattern}')"
        ") WHERE latest = 1"
    )


def connect(table: str | Path):
    """An in-memory DuckDB connection with the `jobs` view over the table."""
    from .cluster import require

    require(("duckdb",))
    import duckdb

    if not parts(table):
        raise UsageError(f"no fleet table at {table}", "make one first: firstfault fleet scan JOBS_ROOT --out " + str(table))
    connection = duckdb.connect(":memory:")
    connection.execute(jobs_view_sql(table))
    return connection


def run_query(table: str | Path, query: str) -> tuple[list[str], list[tuple]]:
    import duckdb

    connection = connect(table)
    try:
        result = connection.execute(query)
        columns = [column[0] for column in result.description or []]
        return columns, result.fetchall()
    except duckdb.Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FirstfaultError(f"query failed: {message}", "the table is the view `jobs`; `firstfault fleet sql \"DESCRIBE jobs\"` lists its columns") from None
    finally:
        connection.close()


def _plain(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def format_result(columns: list[str], rows: list[tuple], output_format: str = "terminal") -> str:
    """terminal: an aligned table; markdown: a Markdown table; json: a list of objects."""
    if output_format == "json":
        return json.dumps([dict(zip(columns, (_plain(value) for value in row))) for row in rows], indent=2, ensure_ascii=False) + "\n"
    cells = [[_text(value) for value in row] for row in rows]
    count = f"({len(rows)} row{'s' if len(rows) != 1 else ''})"
    if output_format == "markdown":
        escape = lambda text: text.replace("|", "\\|")  # noqa: E731
        lines = ["| " + " | ".join(escape(name) for name in columns) + " |", "|" + " --- |" * len(columns)]
        lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in cells]
        return "\n".join(lines + ["", count]) + "\n"
    widths = [max([len(name)] + [len(row[index]) for row in cells]) for index, name in enumerate(columns)]
    lines = ["  ".join(name.ljust(width) for name, width in zip(columns, widths)).rstrip(),
             "  ".join("-" * width for width in widths)]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.append(count)
    return "\n".join(lines) + "\n"


def _text(value) -> str:
    if value is None:
        return ""
    plain = _plain(value)
    if isinstance(plain, list):
        return ",".join(str(item) for item in plain)
    return str(plain)
