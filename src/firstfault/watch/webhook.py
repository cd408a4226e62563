"""The webhook sink: a JSON POST per alert from a background thread, retried, never blocking.

The body carries a Slack-compatible `text` field and the whole alert under `alert`. The queue is
bounded: when the receiver is down for long, the oldest alerts waiting are dropped (and counted),
the watcher never waits. `close()` gives the queue a few seconds to drain.
"""
from __future__ import annotations

import json
import queue
import sys
import threading
import time
import urllib.error
import urllib.request

from .alerts import Alert
from .sinks import Sink

QUEUE_SIZE = 256
ATTEMPTS = 4
BACKOFF_SECONDS = (0.5, 1.0, 2.0)
REQUEST_TIMEOUT = 5.0


def slack_text(alert: Alert) -> str:
    text = f"*firstfault* {alert.headline()}"
    if alert.source and alert.kind in ("failure", "update"):
        text += f"\n`{alert.source}:{alert.line}` {alert.text.strip()[:300]}"
    return text


class WebhookSink(Sink):
    def __init__(self, url: str, *, errors=sys.stderr, timeout: float = REQUEST_TIMEOUT,
                 backoff: tuple[float, ...] = BACKOFF_SECONDS) -> None:
        self.url = url
        self.errors = errors
        self.timeout = timeout
        self.backoff = backoff
        self.delivered = 0
        self.failed = 0
        self.dropped = 0
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="firstfault-webhook", daemon=True)
        self._thread.start()

    def emit(self, alert: Alert) -> None:
        body = json.dumps({"text": slack_text(alert), "alert": alert.to_dict()}).encode("utf-8")
        while True:
            try:
                self._queue.put_nowait(body)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self._queue.task_done()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def _run(self) -> None:
        while not (self._stop.is_set() and self._queue.empty()):
            try:
                body = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._deliver(body)
            finally:
                self._queue.task_done()

    def _deliver(self, body: bytes) -> None:
        last_error = ""
        for attempt in range(ATTEMPTS):
            request = urllib.request.Request(self.url, data=body, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "User-Agent": "firstfault-watch"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    response.read(65536)
                self.delivered += 1
                return
            except urllib.error.HTTPError as exc:
                last_error = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code != 429:
                    break  # the receiver refuses this body: retrying will not help
            except (OSError, ValueError) as exc:
                last_error = str(getattr(exc, "reason", exc))
            if attempt < ATTEMPTS - 1:
                self._stop.wait(self.backoff[min(attempt, len(self.backoff) - 1)])
        self.failed += 1
        print(f"firstfault: warning: webhook {self.url} failed ({last_error}); alert not delivered",
              file=self.errors)

    def close(self, wait_seconds: float = 5.0) -> None:
        deadline = time.monotonic() + wait_seconds
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()) + 0.5)
