"""The planted set (tests/fixtures/planted_secrets.json) through the output paths that are not a
report: `watch`'s alert lines (terminal and JSON lines) and the body its webhook posts (to a real
HTTP server on this machine), the Markdown report the editor server saves, and the fleet table
(written as Parquet, read back with DuckDB through `fleet sql`). The terminal, JSON and Markdown
reports are checked in test_planted_secrets.py, the web app in tests/web."""
from __future__ import annotations

import http.server
import io
import json
import threading

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.lsp.links import EntryLinks
from firstfault.pipeline import diagnose_paths, diagnose_texts
from firstfault.render.markdown import render as render_markdown
from firstfault.watch.alerts import AlertBook
from firstfault.watch.sinks import JsonLinesSink, render_alert
from firstfault.watch.webhook import WebhookSink

from .test_planted_secrets import FAULT, PLANTED, _leaks

KB = load_knowledge_base()


def leaked(text: str) -> list[str]:
    """The planted forms found in `text` (the home path is checked by its user name)."""
    return [name for name, _, secret in PLANTED if name != "home-path" and _leaks(secret, text)]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One job: a rank file per form, under a user's home, in a folder whose name holds a token."""
    folder = tmp_path_factory.mktemp("fleet") / "home" / "alice" / "runs" / "run-hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456"
    folder.mkdir(parents=True)
    for index, (_, planted, _) in enumerate(PLANTED):
        (folder / f"rank{index}.log").write_text(f"{FAULT.replace('rank1', f'rank{index}')} ({planted})\n")
    return folder


@pytest.fixture(scope="module")
def diagnosis(job):
    return diagnose_paths([str(job)], kb=KB)


class Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 (the standard library's name)
        Receiver.bodies.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_watch_alerts_and_webhook_bodies_hold_no_planted_secret():
    """Each form on the line an alert quotes (an alert quotes one line: one job per form)."""
    alerts = []
    for index, (name, planted, _) in enumerate(PLANTED):
        diagnosis = diagnose_texts([("home/alice/rank1.log", f"{FAULT} ({planted})\n")], kb=KB)
        alert = AlertBook().from_diagnosis(diagnosis, now=0.0, settled=True)
        assert alert is not None and "device-side assert" in alert.text, name
        alerts.append(alert)
    lines = io.StringIO()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sink = WebhookSink(f"http://127.0.0.1:{server.server_port}/hook")
        for alert in alerts:
            JsonLinesSink(lines).emit(alert)
            sink.emit(alert)
        sink.close(wait_seconds=60)
    finally:
        server.shutdown()
    assert sink.delivered == len(PLANTED) and len(Receiver.bodies) == len(PLANTED)
    json_lines = lines.getvalue().splitlines()
    for index, (name, _, secret) in enumerate(PLANTED):  # the webhook posts in order, one at a time
        for output in (render_alert(alerts[index]), json_lines[index], Receiver.bodies[index]):
            assert "/home/alice" not in output
            assert name == "home-path" or not _leaks(secret, output), f"{name}: {output}"


def test_the_report_the_editor_server_saves_holds_none(diagnosis, job, tmp_path):
    links = EntryLinks(KB, web_url=None, folder=tmp_path / "editor")
    saved = links.report_file(str(job / "rank0.log"), render_markdown(diagnosis, KB))
    text = saved.read_text()
    assert "device-side assert" in text
    assert leaked(text) == [] and "/home/alice" not in text and "hf_QwErTyUiOp" not in text
    assert "alice" not in saved.name and "QwErTyUiOp" not in saved.name


def test_the_fleet_table_holds_none(job, tmp_path):
    pytest.importorskip("duckdb")
    from firstfault.fleet.jobs import find_jobs
    from firstfault.fleet.sql import run_query
    from firstfault.fleet.table import TableWriter
    from firstfault.fleet.task import diagnose_job

    jobs, _ = find_jobs([str(job.parent)])
    assert [item.path for item in jobs] == [str(job)]
    table = tmp_path / "fleet.parquet"
    writer = TableWriter(table)
    writer.add(diagnose_job(jobs[0]))
    writer.close()
    columns, rows = run_query(table, "SELECT * FROM jobs")
    stored = json.dumps([dict(zip(columns, row)) for row in rows], default=str)
    assert '"status": "failure"' in stored and "device-side-assert" in stored
    assert leaked(stored) == []
    assert "/home/alice" not in stored and "hf_QwErTyUiOp" not in stored
    raw = b"".join(part.read_bytes() for part in table.iterdir())
    assert b"QwErTyUiOp" not in raw and b"/home/alice" not in raw  # not in the file either


def test_two_users_runs_of_one_name_stay_two_jobs(tmp_path):
    pytest.importorskip("duckdb")
    from firstfault.fleet.jobs import find_jobs
    from firstfault.fleet.sql import run_query
    from firstfault.fleet.table import TableWriter
    from firstfault.fleet.task import diagnose_job

    for user in ("alice", "bob"):
        run = tmp_path / "home" / user / "run1"
        run.mkdir(parents=True)
        (run / "rank0.log").write_text(FAULT + "\n")
    table = tmp_path / "fleet.parquet"
    writer = TableWriter(table)
    for root in ("alice", "bob"):
        jobs, _ = find_jobs([str(tmp_path / "home" / root)])
        writer.add(diagnose_job(jobs[0]))
    writer.close()
    _, rows = run_query(table, "SELECT job_path, job_key FROM jobs ORDER BY job_key")
    assert len(rows) == 2 and rows[0][0] == rows[1][0] and rows[0][1] != rows[1][1]
    assert rows[0][0].endswith("home/<user>/run1")


def test_the_history_the_cli_keeps_holds_none(tmp_path):
    """`diagnose --save` stores the masked contract: the database file holds no planted secret."""
    from firstfault.history import History
    from firstfault.render.contract import to_contract

    history = History(tmp_path / "history.sqlite3")
    for name, planted, _ in PLANTED:
        diagnosis = diagnose_texts([("home/alice/rank1.log", f"{FAULT} ({planted})\n")], kb=KB)
        history.add(to_contract(diagnosis), name, origin="cli")
    history.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert b"device-side assert" in stored
    for name, _, secret in PLANTED:
        if name != "home-path":
            assert secret.encode() not in stored, name
    assert b"/home/alice" not in stored
