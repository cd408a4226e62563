"""`fleet sql`: DuckDB over the fleet table, with a `jobs` view that holds the latest row of each job.

    columns, rows = run_query("fleet.parquet", "SELECT failure_id, count(*) FROM jobs GROUP BY 1")

It is a query tool over the table, not a file-system or network client: the connection is
sealed before the user's query runs (DuckDB's own settings: file access only inside the table's
folder, no external access, no extension installed or loaded, configuration locked), and only
one SELECT (DESCRIBE and SUMMARIZE are SELECTs) or EXPLAIN runs. Any DuckDB client reads the
table directly too: `SELECT * FROM 'fleet.parquet/*.parquet'`.
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
        f"SELECT *, row_number() OVER (PARTITION BY job_key ORDER BY scanned_at DESC) AS latest FROM read_parquet('{pattern}')"
        ") WHERE latest = 1"
    )


def connect(table: str | Path):
    """An in-memory DuckDB connection with the `jobs` view over the table."""
    from .cluster import require

    require(("duckdb",))
    import duckdb

    if not parts(table):
        raise UsageError(f"no fleet table at {table}", "make one first: firstfault fleet scan JOBS_ROOT --out " + str(table))
    connection = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                                    "autoload_known_extensions": False})
    connection.execute(jobs_view_sql(table))
    _seal(connection, table)
    return connection


def _seal(connection, table: str | Path) -> None:
    """From here on the connection reads the table's folder and nothing else, and cannot undo it."""
    folder = str(Path(table).resolve())
    connection.execute("SET allowed_directories = ?", [[folder.rstrip("/") + "/"]])
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")


QUERY_KINDS = ("SELECT", "EXPLAIN")


def check_query(connection, query: str) -> None:
    """One SELECT or EXPLAIN statement, else a UsageError that says what runs."""
    import duckdb

    try:
        statements = connection.extract_statements(query)
    except duckdb.Error as exc:
        raise FirstfaultError(f"query failed: {_first_line(exc)}", _SQL_HINT) from None
    if len(statements) != 1:
        raise UsageError(f"fleet sql runs one statement, this query has {len(statements)}",
                         "run each query on its own")
    kind = statements[0].type.name
    if kind not in QUERY_KINDS:
        raise UsageError(f"fleet sql only reads: {kind} statements are refused",
                         "query with SELECT (DESCRIBE jobs, SUMMARIZE jobs); for a file use --format csv -o FILE")


_SQL_HINT = "the table is the view `jobs`; `firstfault fleet sql \"DESCRIBE jobs\"` lists its columns"


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def run_query(table: str | Path, query: str) -> tuple[list[str], list[tuple]]:
    import duckdb

    connection = connect(table)
    try:
        check_query(connection, query)
        result = connection.execute(query)
        columns = [column[0] for column in result.description or []]
        return columns, result.fetchall()
    except duckdb.PermissionException as exc:
        raise UsageError(f"refused: {_first_line(exc)}",
                         "fleet sql reads the fleet table only (the view `jobs`); no other file, URL or extension") from None
    except duckdb.Error as exc:
        raise FirstfaultError(f"query failed: {_first_line(exc)}", _SQL_HINT) from None
    finally:
        connection.close()


def _plain(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def format_result(columns: list[str], rows: list[tuple], output_format: str = "terminal") -> str:
    """terminal: an aligned table; markdown: a Markdown table; json: a list of objects; csv."""
    if output_format == "csv":
        import csv
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_text(value) for value in row] for row in rows)
        return buffer.getvalue()
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
