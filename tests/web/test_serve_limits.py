"""A real `firstfault serve` process against slow and hostile clients: slow connections are
closed, a 300 MiB chunked upload is cut off long before its end, hostile bodies are refused with
the server's memory bounded, and normal requests are answered meanwhile."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .helpers import RANK_LOGS, free_port
from .test_hostile_requests import inner_bomb, nested_bomb

CLIENT_TIMEOUT = 2.0
MiB = 1 << 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "stderr.log"
    with open(log, "wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "firstfault.cli", "serve", "--port", str(port), "--no-history",
             "--client-timeout", str(CLIENT_TIMEOUT)], stdout=subprocess.DEVNULL, stderr=errors)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/entries", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(f"the server did not start: {log.read_text()}")
    yield {"port": port, "pid": process.pid, "log": log}
    process.terminate()
    process.wait(timeout=20)


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


def _post(port: int, body: bytes, content_type: str, timeout: float = 60):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/diagnose", data=body, method="POST",
                                     headers={"content-type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, ConnectionError) as error:  # answered and closed while we still sent
        if isinstance(getattr(error, "reason", error), (BrokenPipeError, ConnectionResetError)):
            return None, b""
        raise


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""  # an orderly close
    except ConnectionError:
        return True
    except (BlockingIOError, TimeoutError, socket.timeout):
        return False


def test_slow_connections_are_closed_and_others_are_served(server):
    port = server["port"]
    slow = []
    for _ in range(200):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"GET /api/entries HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # a head that never ends
        slow.append(sock)
    status, _ = _post(port, RANK_LOGS["rank1.log"].encode(), "text/plain", timeout=30)  # served meanwhile
    assert status == 200
    time.sleep(CLIENT_TIMEOUT + 1.0)
    deadline = time.monotonic() + 15
    open_ones = list(slow)
    while open_ones and time.monotonic() < deadline:
        for sock in open_ones:
            sock.settimeout(0.05)
        open_ones = [sock for sock in open_ones if not _closed(sock)]
    for sock in slow:
        sock.close()
    assert not open_ones, f"{len(open_ones)} of 200 slow connections still open"


def test_a_stalled_body_gets_408(server):
    sock = socket.create_connection(("127.0.0.1", server["port"]), timeout=CLIENT_TIMEOUT + 15)
    sock.sendall(b"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nabc")
    started = time.monotonic()
    answer = sock.recv(200)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert time.monotonic() - started < CLIENT_TIMEOUT + 10


def test_a_300_mib_chunked_upload_is_cut_off_early(server):
    sock = socket.create_connection(("127.0.0.1", server["port"]), timeout=30)
    sock.sendall(b"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * MiB
    sent, answer = 0, b""
    started = time.monotonic()
    try:
        while sent < 300 * MiB:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
            sock.setblocking(False)
            try:
                answer += sock.recv(4096)
                if not answer:
                    break  # closed
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
            if answer:
                break
    except (ConnectionError, BrokenPipeError):
        pass
    finally:
        sock.close()
    assert sent < 100 * MiB, f"{sent >> 20} MiB were accepted before the refusal"
    assert not answer or answer.startswith(b"HTTP/1.1 413")
    assert time.monotonic() - started < 30


def test_hostile_bodies_are_refused_with_memory_bounded(server):
    port, pid = server["port"], server["pid"]
    before = _rss_mib(pid)
    started = time.monotonic()
    boundary = "----firstfault"
    bomb = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"logs.gz\"\r\n"
            f"Content-Type: application/gzip\r\n\r\n").encode() + nested_bomb() + f"\r\n--{boundary}--\r\n".encode()
    status, body = _post(port, bomb, f"multipart/form-data; boundary={boundary}")
    assert status == 413, body[:300]
    status, body = _post(port, json.dumps({"text": inner_bomb().decode("utf-8", "surrogateescape")}).encode(), "application/json")
    assert status == 413, body[:300]
    status, body = _post(port, b"text=" + b"%41" * (20 * MiB), "application/x-www-form-urlencoded")
    assert status in (413, None), body[:300]  # refused by its declared length, maybe before it was sent
    assert time.monotonic() - started < 60
    grown = _rss_mib(pid, "VmHWM") - before
    assert grown < 200, f"the server grew by {grown:.0f} MiB"
    status, _ = _post(port, RANK_LOGS["rank1.log"].encode(), "text/plain")
    assert status == 200


def test_no_traceback_in_the_server_log(server):
    text = server["log"].read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
