"""The watch loop: poll the follower, feed the engine, hand alerts to the sinks, until told to stop."""
from __future__ import annotations

import threading
import time

from .engine import LiveEngine
from .follower import Follower
from .sinks import Sink

POLL_SECONDS = 0.2


def watch_loop(follower: Follower, engine: LiveEngine, sink: Sink, *, stop: threading.Event,
               poll_seconds: float = POLL_SECONDS, deadline: float | None = None, observer=None) -> None:
    """Run until `stop` is set (or the monotonic `deadline` passes); then read what is left once more."""
    backlog = True  # the first read is what the files held before watching began
    while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
        started = time.monotonic()
        step(follower, engine, sink, started, observer, backlog=backlog)
        backlog = False
        stop.wait(max(0.0, poll_seconds - (time.monotonic() - started)))


def step(follower: Follower, engine: LiveEngine, sink: Sink, now: float, observer=None, *, settled: bool = False,
         backlog: bool = False) -> None:
    engine.ingest(follower.poll(), now, backlog=backlog)
    if observer is not None:
        for event in follower.events:
            observer(event)
    follower.events.clear()
    for alert in engine.evaluate(now, settled=settled, catching_up=follower.behind):
        sink.emit(alert)
    sink.observe(engine, now)


def finish(follower: Follower, engine: LiveEngine, sink: Sink, observer=None) -> None:
    """A last read, partial last lines included, and a last evaluation with nothing more to come."""
    now = time.monotonic()
    step(follower, engine, sink, now, observer)
    engine.ingest(follower.close(), now)
    for alert in engine.evaluate(now, settled=True):
        sink.emit(alert)
    sink.observe(engine, now)
