"""Snapshots of what a person reads: the fleet report in the terminal, in Markdown and as JSON,
from one canned table (tests/fleet/rows.py). FIRSTFAULT_UPDATE_SNAPSHOTS=1 rewrites them."""
from __future__ import annotations

import json
from pathlib import Path

from firstfault.fleet.render import render_json, render_markdown, render_terminal
from firstfault.fleet.report import REPORT_SCHEMA, build_report

from snapshot_check import check_snapshot

from .rows import T0, canned_rows

SNAPSHOTS = Path(__file__).parent / "snapshots"


def check(name: str, text: str) -> None:
    check_snapshot(SNAPSHOTS, name, text)


def canned_report() -> dict:
    return build_report(canned_rows(), table="fleet.parquet", now=T0 + 30 * 86400)


def test_terminal_snapshot():
    check("report.txt", render_terminal(canned_report()))


def test_markdown_snapshot():
    check("report.md", render_markdown(canned_report()))


def test_json_snapshot_and_its_documented_fields():
    text = render_json(canned_report())
    check("report.json", text)
    report = json.loads(text)
    assert report["schema"] == REPORT_SCHEMA
    suspect = report["suspect_hosts"][0]
    assert {"host", "jobs", "classes", "score", "commands"} <= set(suspect)
    assert suspect["host"] == "gpu-02" and suspect["classes"] == {"gpu-fallen-off-bus": 5} and len(suspect["jobs"]) == 5
    assert [entry["host"] for entry in report["watch_hosts"]] == ["gpu-04"]
    assert {entry["failure_id"]: entry["jobs"] for entry in report["by_class"]} == {
        "user-code-exception": 6, "gpu-fallen-off-bus": 5, "gpu-ecc-error": 2}
    assert report["recurring"][0]["failure_id"] == "user-code-exception" and report["recurring"][0]["hosts"] == ["gpu-00"]
    assert report["errors"] == [{"job_id": "job-broken", "job_path": "/j/job-broken.tar.gz",
                                 "error": "job-broken.tar.gz: not a readable tar file (unexpected end of data)"}]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    for field in list(report) + list(suspect) + list(report["by_class"][0]) + list(report["by_week"][0]) + list(report["recurring"][0]):
        assert f"`{field}`" in docs, f"docs/fleet.md does not document `{field}`"


def test_every_table_column_is_documented():
    from firstfault.fleet.table import COLUMNS

    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    for name, _ in COLUMNS:
        assert f"| `{name}` |" in docs, f"docs/fleet.md does not document the column `{name}`"
