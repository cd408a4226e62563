"""Nothing leaves `watch` unmasked: hang and failure alerts carry the last progress line and the
failure line, and each sink (terminal, JSON lines, the webhook's POST body, the metrics page)
gets them only through the masker; the terminal also gets no raw control characters."""
from __future__ import annotations

import io
import json
import urllib.request

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.watch.engine import LiveEngine
from firstfault.watch.follower import Chunk
from firstfault.watch.metrics import MetricsSink
from firstfault.watch.sinks import JsonLinesSink, TerminalSink
from firstfault.watch.webhook import WebhookSink

from .http_receiver import Receiver

HF = "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"
PASSWORD = "pw-in-argv-77"
SLACK = "xoxb-30802300253-157546453355-ot7UGAoKD1AFfDKZxCKu7SPC"
SECRETS = (HF, PASSWORD, SLACK, "alice")
OSC52 = "\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07"
KB = load_knowledge_base()


def _progress(rank: int, step: int) -> str:
    return (f"[rank{rank}]: step {step} loss 2.31 HF_TOKEN={HF} argv ['train.py', '--password', '{PASSWORD}'] "
            f"notify {SLACK} cwd /home/alice/run {OSC52}\n")


def _hang_alerts(mask_hosts: bool = False):
    """Rank 1 stops after step 2, rank 0 goes on: a hang alert naming rank 1."""
    engine = LiveEngine(KB, hang_after=5, mask_hosts=mask_hosts)
    name = "/home/alice/logs/gpu-node-a17/console.log"
    for now, lines in ((0.0, [_progress(0, 1), _progress(1, 1)]), (1.0, [_progress(0, 2), _progress(1, 2)]),
                       (4.0, [_progress(0, 3)]), (7.0, [_progress(0, 4)])):
        engine.ingest([Chunk((name, 0), name, "gpu-node-a17/console.log", "".join(lines).encode())], now=now)
        engine.evaluate(now)
    engine.evaluate(8.0)
    assert any(alert.kind == "hang" for alert in engine.alerts), engine.alerts
    return engine, engine.alerts


def _failure_alerts():
    engine = LiveEngine(KB, hang_after=300)
    line = f"[rank1]: RuntimeError: CUDA error: device-side assert triggered (--password {PASSWORD} {HF} {OSC52})\n"
    engine.ingest([Chunk(("rank1.log", 0), "/home/alice/rank1.log", "rank1.log", line.encode())], now=0.0)
    alerts = engine.evaluate(0.0, settled=True)
    assert alerts and alerts[0].kind == "failure"
    return engine, alerts


def _assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} reached the {where}: {text[:1500]}"


def _terminal_checks(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output  # control characters shown escaped


def _jsonl_checks(output: str) -> None:
    assert all(json.loads(line)["schema"] == "firstfault.alert/1" for line in output.splitlines())


@pytest.mark.parametrize("make_alerts", [_hang_alerts, _failure_alerts], ids=["hang", "failure"])
@pytest.mark.parametrize("sink_class,checks", [(TerminalSink, _terminal_checks), (JsonLinesSink, _jsonl_checks)],
                         ids=["terminal", "jsonl"])
def test_stream_sinks(make_alerts, sink_class, checks):
    _, alerts = make_alerts()
    stream = io.StringIO()
    sink = sink_class(stream)
    for alert in alerts:
        sink.emit(alert)
    _assert_clean(stream.getvalue(), sink_class.__name__)
    checks(stream.getvalue())


@pytest.mark.parametrize("make_alerts", [_hang_alerts, _failure_alerts], ids=["hang", "failure"])
def test_webhook_post_body(make_alerts):
    _, alerts = make_alerts()
    server = Receiver()
    try:
        sink = WebhookSink(server.url, backoff=(0.05,))
        for alert in alerts:
            sink.emit(alert)
        server.wait_for(len(alerts), timeout=10)
        sink.close()
        bodies = json.dumps(server.bodies)
    finally:
        server.close()
    _assert_clean(bodies, "webhook POST body")
    assert "step" in bodies or "device-side" in bodies


def test_metrics_page():
    engine, alerts = _hang_alerts()
    # a file whose name carries a token gets a label by name when no rank is known
    engine.ingest([Chunk(("x", 0), f"/home/alice/{HF}.log", f"{HF}.log",
                         b"step 1 loss 2\nstep 2 loss 2\n")], now=9.0)
    sink = MetricsSink(0)
    try:
        for alert in alerts:
            sink.emit(alert)
        sink.observe(engine, 20.0)
        with urllib.request.urlopen(f"http://127.0.0.1:{sink.port}/metrics", timeout=5) as response:
            page = response.read().decode()
    finally:
        sink.close()
    assert "firstfault_seconds_since_progress" in page
    _assert_clean(page, "metrics page")


def test_mask_hosts_reaches_the_alerts():
    engine, alerts = _hang_alerts(mask_hosts=True)
    text = json.dumps([alert.to_dict() for alert in alerts])
    assert "gpu-node-a17" not in text and "host-" in text
