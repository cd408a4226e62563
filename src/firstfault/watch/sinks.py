"""Where alerts go: the terminal, JSON lines, and (webhook.py, metrics.py) a webhook and Prometheus.

A sink has `emit(alert)`, `observe(engine, now)` (called every poll, for state such as the time
since each rank's progress) and `close()`. Sinks never raise into the watcher: a broken sink is
reported once on stderr and then left alone.
"""
from __future__ import annotations

import json
import sys
from datetime import datetime

from .alerts import Alert


class Sink:
    def emit(self, alert: Alert) -> None:  # pragma: no cover - interface
        pass

    def observe(self, engine, now: float) -> None:
        pass

    def close(self) -> None:
        pass


class TerminalSink(Sink):
    """A few readable lines per alert; the headline in colour when asked (--color)."""

    def __init__(self, stream, color: bool = False) -> None:
        self.stream = stream
        self.color = color

    def emit(self, alert: Alert) -> None:
        self.stream.write(render_alert(alert, self.color))
        self.stream.flush()


_HEADLINE_ROLE = {"failure": "critical", "hang": "critical", "update": "high", "resolved": "code"}


def render_alert(alert: Alert, color: bool = False) -> str:
    from ..render.diagnosis_text import clip
    from ..render.entry_terminal import Style

    style = Style(color)
    clock = datetime.fromtimestamp(alert.emitted_at).strftime("%H:%M:%S")
    lines = [f"[firstfault {clock}] " + style(_HEADLINE_ROLE.get(alert.kind, ""), alert.headline())]
    if alert.source and alert.kind in ("failure", "update", "hang"):
        where = f"{alert.source}:{alert.line}" if alert.line else alert.source
        lines.append(f"    at {where}" + (f"  {clip(alert.text)}" if alert.text and alert.kind != "hang" else ""))
    for item in alert.collateral[:6]:
        ranks = ", ".join(str(rank) for rank in item["ranks"][:16])
        more = f" +{len(item['ranks']) - 16}" if len(item["ranks"]) > 16 else ""
        on = f" on rank(s) {ranks}{more}" if ranks else ""
        lines.append(f"    collateral: {item['failure_id']}{on} ({item['count']} line(s))")
    return "\n".join(lines) + "\n"


class JsonLinesSink(Sink):
    """One JSON object per alert per line (`firstfault.alert/1`)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def emit(self, alert: Alert) -> None:
        self.stream.write(json.dumps(alert.to_dict(), ensure_ascii=False) + "\n")
        self.stream.flush()


class Fanout(Sink):
    """All sinks; one failing sink does not stop the others."""

    def __init__(self, sinks: list[Sink], errors=sys.stderr) -> None:
        self.sinks = sinks
        self.errors = errors
        self._broken: set[int] = set()

    def _each(self, method: str, *args) -> None:
        for index, sink in enumerate(self.sinks):
            if index in self._broken:
                continue
            try:
                getattr(sink, method)(*args)
            except Exception as exc:  # a sink must never stop the watcher
                self._broken.add(index)
                print(f"firstfault: warning: {type(sink).__name__} stopped: {exc}", file=self.errors)

    def emit(self, alert: Alert) -> None:
        self._each("emit", alert)

    def observe(self, engine, now: float) -> None:
        self._each("observe", engine, now)

    def close(self) -> None:
        self._each("close")
