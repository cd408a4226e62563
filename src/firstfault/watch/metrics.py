"""Prometheus text exposition on `/metrics`, served by http.server on a daemon thread.

    firstfault_up 1
    firstfault_lines_total 123456
    firstfault_files_followed 8
    firstfault_alerts_total{kind="failure",failure_id="user-code-exception"} 1
    firstfault_failure{failure_id="user-code-exception",rank="1",role="primary"} 1
    firstfault_failure_lines{failure_id="collective-timeout-peer-crash",role="collateral"} 6
    firstfault_hang{rank="1"} 1
    firstfault_seconds_since_progress{rank="0"} 0.4

The watcher thread builds the page (`observe`); the server thread only returns the last one built.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..mask import mask_secrets
from .alerts import Alert
from .sinks import Sink

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _label(value, mask=mask_secrets) -> str:
    return mask(str(value)).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(mask=mask_secrets, **values) -> str:
    """Label values pass the masker: a file name may hold a user name, a host or a token."""
    return "{" + ",".join(f'{key}="{_label(value, mask)}"' for key, value in values.items()) + "}"


class MetricsSink(Sink):
    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.alerts = Counter()
        self.hang_ranks: tuple = ()
        self._page = b"firstfault_up 1\n"
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                with sink._lock:
                    body = sink._page
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # scrapes are not worth a line on stderr
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="firstfault-metrics", daemon=True)
        self._thread.start()

    def emit(self, alert: Alert) -> None:
        self.alerts[(alert.kind, alert.failure_id)] += 1
        if alert.kind == "hang":
            self.hang_ranks = alert.ranks or (alert.rank,)
        elif alert.kind == "resolved":
            self.hang_ranks = ()

    def observe(self, engine, now: float) -> None:
        page = self.render(engine, now)
        with self._lock:
            self._page = page.encode("utf-8")

    def render(self, engine, now: float) -> str:
        out = ["# TYPE firstfault_up gauge", "firstfault_up 1",
               "# TYPE firstfault_lines_total counter", f"firstfault_lines_total {engine.lines_seen}",
               "# TYPE firstfault_files_followed gauge", f"firstfault_files_followed {len(engine.scans)}",
               "# HELP firstfault_alerts_total alerts emitted, by kind and failure id",
               "# TYPE firstfault_alerts_total counter"]
        for (kind, failure_id), count in sorted(self.alerts.items()):
            out.append(f"firstfault_alerts_total{_labels(kind=kind, failure_id=failure_id)} {count}")
        out += ["# HELP firstfault_failure 1 for each rank a failure id was seen on (primary or collateral)",
                "# TYPE firstfault_failure gauge"]
        lines = ["# TYPE firstfault_failure_lines gauge"]
        diagnosis = engine.diagnosis
        if diagnosis is not None and diagnosis.primary is not None:
            findings = [("primary", diagnosis.primary)] + [("collateral", item) for item in diagnosis.collateral]
            for role, finding in findings:
                ranks = finding.ranks or ((diagnosis.initiating.rank,) if role == "primary" and diagnosis.initiating else ())
                for rank in ranks:
                    if rank is not None:
                        out.append(f"firstfault_failure{_labels(failure_id=finding.failure_id, rank=rank, role=role)} 1")
                lines.append(f"firstfault_failure_lines{_labels(failure_id=finding.failure_id, role=role)} {finding.count}")
            if diagnosis.initiating is not None and diagnosis.initiating.rank is not None:
                out += ["# TYPE firstfault_initiating_rank gauge",
                        f"firstfault_initiating_rank{_labels(failure_id=diagnosis.primary.failure_id)} {diagnosis.initiating.rank}"]
        out += lines
        out += ["# HELP firstfault_hang 1 for each rank named as having stopped first in a hang",
                "# TYPE firstfault_hang gauge"]
        out += [f"firstfault_hang{_labels(rank=rank)} 1" for rank in self.hang_ranks if rank is not None]
        out += ["# HELP firstfault_seconds_since_progress seconds since each rank's last progress line",
                "# TYPE firstfault_seconds_since_progress gauge"]
        for label, seconds in sorted(engine.tracker.seconds_since_progress(now).items()):
            entry = engine.tracker.ranks[label]
            key = _labels(rank=entry.rank) if entry.rank is not None else _labels(getattr(engine, "mask_text", mask_secrets), source=label)
            out.append(f"firstfault_seconds_since_progress{key} {seconds:.3f}")
        out.append(f"firstfault_last_update_seconds {time.time():.3f}")
        return "\n".join(out) + "\n"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=2)
