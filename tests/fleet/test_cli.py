"""`firstfault fleet ...` as a user runs it: the commands in a subprocess, stdout for results,
stderr for progress and problems, exit status 0 / 1 / 2, one line and a hint on errors."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
import sys

import pytest

FIRSTFAULT = [sys.executable, "-m", "firstfault.cli"]


def run(*arguments: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(FIRSTFAULT + list(arguments), capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    made = run("fleet", "demo", str(folder / "fleet"), "--jobs", "40", "--hosts", "10", "--bad-hosts", "1", "--seed", "4")
    assert made.returncode == 0, made.stderr
    assert "planted bad hosts: " in made.stdout and "next: firstfault fleet scan" in made.stdout
    return folder


@pytest.fixture(scope="module")
def scanned_demo(demo):
    table = str(demo / "fleet.parquet")
    scan = run("fleet", "scan", str(demo / "fleet" / "jobs"), "--out", table, "--workers", "1")
    return demo, table, scan


def test_quick_start_scan_then_report(scanned_demo):
    demo, table, scan = scanned_demo
    assert scan.returncode == 0, scan.stderr
    assert scan.stdout.startswith("40 jobs: 40 diagnosed, 0 unchanged") and "Traceback" not in scan.stderr
    report = run("fleet", "report", table, "--format", "json")
    truth = json.loads((demo / "fleet" / "truth.json").read_text())
    document = json.loads(report.stdout)
    assert report.returncode == (1 if document["suspect_hosts"] else 0)
    assert {entry["host"] for entry in document["suspect_hosts"]} <= set(truth["bad_hosts"])
    assert document["jobs"]["total"] == 40
    terminal = run("fleet", "report", table)
    assert terminal.stdout.startswith(f"Fleet report: {table}") and "Failures by class" in terminal.stdout
    again = run("fleet", "scan", str(demo / "fleet" / "jobs"), "--out", table, "--format", "json", "-q")
    summary = json.loads(again.stdout)
    assert again.returncode == 0 and (summary["found"], summary["diagnosed"], summary["unchanged"]) == (40, 0, 40)
    assert again.stderr == ""
    markdown = run("fleet", "report", table, "--format", "markdown", "-o", str(demo / "report.md"))
    assert markdown.stdout == "" and (demo / "report.md").read_text().startswith(f"# Fleet report: `{table}`")


def test_sql_on_the_table(scanned_demo):
    _, table, _ = scanned_demo
    counted = run("fleet", "sql", "SELECT count(*) AS jobs FROM jobs", "--table", table, "--format", "json")
    assert counted.returncode == 0 and json.loads(counted.stdout) == [{"jobs": 40}]
    plain = run("fleet", "sql", "SELECT status, count(*) FROM jobs GROUP BY 1 ORDER BY 1", "--table", table)
    assert plain.stdout.splitlines()[0].split() == ["status", "count_star()"] and plain.stdout.rstrip().endswith("rows)")
    markdown = run("fleet", "sql", "SELECT status FROM jobs LIMIT 1", "--table", table, "--format", "markdown")
    assert markdown.stdout.splitlines()[:2] == ["| status |", "| --- |"]
    bad = run("fleet", "sql", "SELECT nope FROM jobs", "--table", table)
    assert bad.returncode == 2 and bad.stderr.startswith("firstfault: error: query failed: ") and "hint: " in bad.stderr
    assert "Traceback" not in bad.stderr


# what an unrestricted DuckDB connection would do: read or write any file, reach the network,
# load code, change its own limits; each is refused before or while it runs
ESCAPES = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM glob('/root/*')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM read_parquet('{table}/../*.parquet')",
    "SELECT * FROM read_csv('https://example.com/data.csv')",
    "COPY (SELECT * FROM jobs) TO '{tmp}/leak.csv'",
    "COPY (SELECT * FROM jobs) TO '{table}/inside.csv'",
    "ATTACH '{tmp}/other.duckdb' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET allowed_directories = ['/']",
    "RESET lock_configuration",
    "SELECT 1; COPY (SELECT 1) TO '{tmp}/second.csv'",
    "CREATE TABLE copy AS SELECT * FROM jobs",
    "DROP VIEW jobs",
    "PRAGMA enable_profiling",
    "EXPORT DATABASE '{tmp}/export'",
]


@pytest.mark.parametrize("query", ESCAPES)
def test_sql_refuses_what_is_not_a_query_of_the_table(scanned_demo, query, tmp_path):
    from firstfault.errors import FirstfaultError
    from firstfault.fleet.sql import run_query

    _, table, _ = scanned_demo
    before = sorted(path.name for path in tmp_path.iterdir())
    with pytest.raises(FirstfaultError) as refused:
        run_query(table, query.format(table=table, tmp=tmp_path))
    message = str(refused.value)
    assert "\n" not in message and message
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # nothing written
    assert not any(path.suffix == ".csv" for path in Path(table).iterdir())


def test_sql_documented_queries_still_run_and_csv_is_offered(scanned_demo, tmp_path):
    _, table, _ = scanned_demo
    for query in ("DESCRIBE jobs", "SUMMARIZE jobs", "EXPLAIN SELECT * FROM jobs",
                  "SELECT date_trunc('week', first_fault_time) AS week, failure_id, count(*) AS jobs FROM jobs "
                  "WHERE status = 'failure' GROUP BY ALL ORDER BY week, jobs DESC"):
        done = run("fleet", "sql", query, "--table", table)
        assert done.returncode == 0, (query, done.stderr)
    csv_file = tmp_path / "out.csv"
    done = run("fleet", "sql", "SELECT job_id, status FROM jobs ORDER BY job_id", "--table", table, "--format", "csv",
               "-o", str(csv_file))
    lines = csv_file.read_text().splitlines()
    assert done.returncode == 0 and lines[0] == "job_id,status" and len(lines) == 41
    refused = run("fleet", "sql", "COPY (SELECT * FROM jobs) TO 'x.csv'", "--table", table, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.startswith("firstfault: error: fleet sql only reads: COPY")
    assert "--format csv" in refused.stderr and not (tmp_path / "x.csv").exists()
    reading = run("fleet", "sql", "SELECT * FROM read_csv('/etc/passwd')", "--table", table)
    assert reading.returncode == 2 and reading.stderr.startswith("firstfault: error: refused: ")
    assert "root:" not in reading.stdout + reading.stderr and "Traceback" not in reading.stderr


@pytest.mark.parametrize("arguments,message", [
    (("fleet", "scan", "/nonexistent/jobs", "--out", "{tmp}/t.parquet", "--workers", "1"), "no jobs found"),
    (("fleet", "report", "{tmp}/missing.parquet"), "no fleet table at"),
    (("fleet", "sql", "SELECT 1", "--table", "{tmp}/missing.parquet"), "no fleet table at"),
    (("fleet", "scan", "{tmp}", "--out", "{tmp}/file.txt", "--workers", "1"), "is a file"),
])
def test_errors_are_one_line_and_a_hint(tmp_path, arguments, message):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "job-1").mkdir()
    result = run(*(argument.format(tmp=tmp_path) for argument in arguments))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("firstfault: error: ") and message in lines[0], result.stderr
    assert lines[-1].startswith("hint: ") and "Traceback" not in result.stderr


def test_the_fleet_command_lists_its_subcommands():
    result = run("fleet", "--help")
    assert result.returncode == 0
    for name in ("scan", "report", "sql", "demo", "serve"):
        assert name in result.stdout


def test_the_fleet_install_lines_name_the_extra_serve_needs():
    """`fleet serve` is the web app: the Fleet section's install lines name the web extra too."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    fleet_section = readme.split("## Fleet", 1)[1].split("\n## ", 1)[0]
    for text in (fleet_section, (root / "docs" / "fleet.md").read_text()):
        install = next(line for line in text.splitlines() if "pip install" in line)
        extras = set(re.search(r"\[([\w,]+)\]", install).group(1).split(","))
        assert {"fleet", "web"} <= extras, install
