"""A real HTTP receiver on 127.0.0.1 for the webhook tests."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A real HTTP server on 127.0.0.1 that records POST bodies; the first `fail_first` get a 500."""

    def __init__(self, fail_first: int = 0) -> None:
        self.bodies: list[dict] = []
        self.attempts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                receiver.attempts += 1
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.attempts <= fail_first:
                    self.send_response(500)
                    self.end_headers()
                    return
                receiver.bodies.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.bodies) < count and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
