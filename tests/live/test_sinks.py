"""The webhook against a real local HTTP receiver; the metrics endpoint by a real scrape."""
from __future__ import annotations

import io
import json
import time
import urllib.request
from dataclasses import replace
from datetime import datetime

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.watch.alerts import Alert, AlertBook
from firstfault.watch.engine import LiveEngine
from firstfault.watch.follower import Chunk
from firstfault.watch.metrics import MetricsSink
from firstfault.watch.sinks import JsonLinesSink, TerminalSink, render_alert
from firstfault.watch.webhook import WebhookSink

from .http_receiver import Receiver
from .sample_logs import LOGS


@pytest.fixture
def receiver():
    made = []

    def make(**options):
        made.append(Receiver(**options))
        return made[-1]

    yield make
    for item in made:
        item.close()


ALERT = Alert(kind="failure", failure_id="user-code-exception", summary="rank 1 raised IndexError", rank=1,
              source="rank1.log", line=7, text="[rank1]: IndexError: list index out of range", sequence=1)


def test_webhook_posts_slack_compatible_json(receiver):
    server = receiver()
    sink = WebhookSink(server.url)
    sink.emit(ALERT)
    server.wait_for(1, timeout=10)
    sink.close()
    body = server.bodies[0]
    assert "user-code-exception" in body["text"] and "rank 1" in body["text"]
    assert body["alert"]["schema"] == "firstfault.alert/1" and body["alert"]["rank"] == 1


def test_webhook_retries_a_failing_receiver(receiver):
    server = receiver(fail_first=2)
    sink = WebhookSink(server.url, backoff=(0.05,))
    sink.emit(ALERT)
    server.wait_for(1, timeout=10)
    sink.close()
    assert server.attempts == 3 and len(server.bodies) == 1 and sink.delivered == 1


def test_webhook_never_blocks_the_watcher():
    errors = io.StringIO()
    # a port nobody listens on, and a timeout far longer than emit may take
    sink = WebhookSink("http://127.0.0.1:9/hook", errors=errors, backoff=(0.05,))
    started = time.monotonic()
    for _ in range(500):  # more than the queue holds: the oldest are dropped, emit stays instant
        sink.emit(ALERT)
    assert time.monotonic() - started < 0.5
    sink.close(wait_seconds=0.5)
    assert sink.dropped > 0


def _engine_with_failure():
    engine = LiveEngine(load_knowledge_base(), hang_after=1)
    chunks = [Chunk((name, 0), name, name, text.encode()) for name, text in LOGS.items()]
    engine.ingest(chunks, now=0.0)
    return engine


def test_metrics_scrape(tmp_path):
    engine = _engine_with_failure()
    metrics = MetricsSink(0, "127.0.0.1")
    try:
        for alert in engine.evaluate(now=0.5):
            metrics.emit(alert)
        metrics.observe(engine, now=1.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics.port}/metrics", timeout=5) as response:
            content_type = response.headers["Content-Type"]
            page = response.read().decode()
    finally:
        metrics.close()
    assert content_type.startswith("text/plain; version=0.0.4")
    assert 'firstfault_alerts_total{kind="failure",failure_id="user-code-exception"} 1' in page
    assert 'firstfault_failure{failure_id="user-code-exception",rank="1",role="primary"} 1' in page
    assert 'firstfault_failure{failure_id="collective-timeout-peer-crash",rank="0",role="collateral"} 1' in page
    assert 'firstfault_initiating_rank{failure_id="user-code-exception"} 1' in page
    assert 'firstfault_seconds_since_progress{rank="0"} 1.500' in page
    for line in page.splitlines():  # every sample line is `name{labels} value`
        if line and not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])


def test_engine_alerts_once_then_updates_only_on_change():
    engine = _engine_with_failure()
    first = engine.evaluate(now=0.5)
    assert [alert.kind for alert in first] == ["failure"]
    assert first[0].rank == 1 and first[0].collateral[0]["failure_id"] == "collective-timeout-peer-crash"
    assert engine.evaluate(now=0.7) == []
    assert engine.evaluate(now=60) == []  # silence after a failure is not a hang


def test_terminal_and_jsonl_renderings():
    terminal, jsonl = io.StringIO(), io.StringIO()
    TerminalSink(terminal).emit(ALERT)
    JsonLinesSink(jsonl).emit(ALERT)
    assert "FIRST FAULT: user-code-exception on rank 1" in terminal.getvalue()
    assert "rank1.log:7" in terminal.getvalue()
    assert json.loads(jsonl.getvalue())["failure_id"] == "user-code-exception"


def test_unexplained_failure_is_alerted_once_settled():
    engine = LiveEngine(load_knowledge_base())
    text = b"2026-12-02 17:00:00,000 step 1\nthe trainer exited with exit code 3\n"
    engine.ingest([Chunk(("rank0.log", 0), "rank0.log", "rank0.log", text)], now=0.0)
    assert engine.evaluate(now=0.5) == []
    alerts = engine.evaluate(now=2.5)
    assert [(alert.kind, alert.failure_id, alert.line) for alert in alerts] == [("failure", "unknown", 2)]
    assert engine.evaluate(now=5) == []


def test_terminal_alert_snapshot():
    alert = replace(ALERT, emitted_at=1796230800.0, collateral=(
        {"failure_id": "collective-timeout-peer-crash", "ranks": [0, 2, 3], "count": 6},))
    clock = datetime.fromtimestamp(1796230800.0).strftime("%H:%M:%S")
    assert render_alert(alert) == (
        f"[firstfault {clock}] FIRST FAULT: user-code-exception on rank 1: rank 1 raised IndexError\n"
        "    at rank1.log:7  [rank1]: IndexError: list index out of range\n"
        "    collateral: collective-timeout-peer-crash on rank(s) 0, 2, 3 (6 line(s))\n"
    )
    hang = Alert(kind="hang", failure_id="hang", summary="no progress for 3.1 s; last: 'step 5 loss 1.2'",
                 rank=1, source="rank1.log", ranks=(1,), emitted_at=1796230800.0)
    assert render_alert(hang) == (
        f"[firstfault {clock}] HANG: rank 1 stopped making progress first (no progress for 3.1 s; last: 'step 5 loss 1.2')\n"
        "    at rank1.log\n"
    )


def test_a_rank_less_re_anchoring_of_the_same_failure_keeps_the_rank():
    engine = _engine_with_failure()
    book = AlertBook()
    diagnosis = engine.current_diagnosis()
    first = book.from_diagnosis(diagnosis, now=0)
    assert first.rank == 1
    summary_line = replace(diagnosis.initiating, rank=None, source="console.log", line=59)
    assert book.from_diagnosis(replace(diagnosis, initiating=summary_line), now=1) is None


def test_a_failure_every_rank_raised_alike_is_alerted_as_such():
    """Every rank refused the nccl backend: the alert names no rank, and says every rank alike
    (as the reports, the web page and the editor do), not a rank it does not know."""
    engine = LiveEngine(load_knowledge_base())
    text = "".join(f"[rank{rank}]: RuntimeError: Distributed package doesn't have NCCL built in\n" for rank in range(3))
    engine.ingest([Chunk(("console.log", 0), "console.log", "console.log", text.encode())], now=0.0)
    [alert] = engine.evaluate(now=0.5)
    assert (alert.failure_id, alert.rank) == ("cuda-unavailable", None)
    assert alert.no_single_rank == "every rank alike"
    assert "FIRST FAULT: cuda-unavailable on every rank alike" in render_alert(alert)
    stream = io.StringIO()
    JsonLinesSink(stream).emit(alert)
    assert json.loads(stream.getvalue())["no_single_rank"] == "every rank alike"


def test_a_launcher_error_before_its_workers_start_waits_for_the_input_to_settle():
    """torch 2.0-2.4's second agent on the rendezvous host logs that the store's port is taken,
    then joins as a client and starts its workers: no alert for the port until the input settles,
    and the first alert is the workers' own failure."""
    agent = ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29511 (errno: 98 - Address already in use).\n"
             "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.\n")
    workers = ("[trainer0]:2026-12-06 06:52:15,547 INFO train: rank 2/4 (local rank 0) joined the process group\n"
               "[trainer1]:Traceback (most recent call last):\n"
               "[trainer1]:  File \"/srv/job/train.py\", line 390, in train\n"
               "[trainer1]:IndexError: list index out of range\n")
    engine = LiveEngine(load_knowledge_base())
    engine.ingest([Chunk(("node1.log", 0), "node1.log", "node1.log", agent.encode())], now=0.0)
    assert engine.evaluate(now=0.5) == []
    engine.ingest([Chunk(("node1.log", 0), "node1.log", "node1.log", workers.encode())], now=1.0)
    [alert] = engine.evaluate(now=1.5)
    assert (alert.kind, alert.failure_id, alert.rank) == ("failure", "user-code-exception", 3)
    # no worker ever starts (the port was really taken): said once the input settled
    alone = LiveEngine(load_knowledge_base())
    alone.ingest([Chunk(("node1.log", 0), "node1.log", "node1.log", agent.encode())], now=0.0)
    assert alone.evaluate(now=0.5) == []
    assert [alert.failure_id for alert in alone.evaluate(now=3.0)] == ["port-in-use"]
