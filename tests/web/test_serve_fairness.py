"""A real `firstfault serve` on all interfaces against clients that would take more than their
share: one address holding many connections, a body trickled in, more bodies at once than the
server may hold in memory; a diagnosis that outruns its time limit."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from fastapi.testclient import TestClient

from firstfault.web.app import create_app
from firstfault.web.limits import Limits
from firstfault.web.server import MAX_CONNECTIONS_PER_CLIENT

from .helpers import RANK_LOGS, free_port

CLIENT_TIMEOUT = 2.0
RANK_LOG = RANK_LOGS["rank0.log"].encode()


def outward_address() -> str | None:
    """This machine's address on its way out (not loopback), or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    address = outward_address()
    if address is None:
        pytest.skip("this machine has no address besides loopback")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "stderr.log"
    with open(log, "wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "firstfault.cli", "serve", "--host", "0.0.0.0", "--port", str(port), "--no-history",
             "--client-timeout", str(CLIENT_TIMEOUT), "--server-name", address, "--insecure-no-auth"],
            stdout=subprocess.DEVNULL, stderr=errors)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/entries", timeout=5) as response:
                assert response.status == 200
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the server did not start: {log.read_text()}")
            time.sleep(0.2)
    yield {"port": port, "address": address, "log": log}
    process.terminate()
    process.wait(timeout=20)


def closed_by_server(connection: socket.socket, wait: float) -> bool:
    connection.settimeout(wait)
    try:
        return connection.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def read_answer(connection: socket.socket) -> bytes:
    """What the server sends until it closes the connection (its answers close it)."""
    connection.settimeout(10)
    answer = b""
    while True:
        try:
            more = connection.recv(65536)
        except OSError:
            break
        if not more:
            break
        answer += more
    return answer


def test_one_address_holds_at_most_its_share_of_connections(server):
    extra = 8
    held = []
    try:
        for _ in range(MAX_CONNECTIONS_PER_CLIENT + extra):
            held.append(socket.create_connection((server["address"], server["port"]), timeout=5))
        time.sleep(0.5)  # well within the head timeout: only the connections over the share are closed
        closed = sum(closed_by_server(connection, 0.01) for connection in held)
        assert closed == extra
        with urllib.request.urlopen(f"http://127.0.0.1:{server['port']}/api/entries", timeout=10) as response:
            assert response.status == 200  # everyone else is still served
    finally:
        for connection in held:
            connection.close()
    time.sleep(0.5)
    again = socket.create_connection((server["address"], server["port"]), timeout=5)
    try:
        again.sendall(f"GET /api/entries HTTP/1.1\r\nHost: {server['address']}\r\nConnection: close\r\n\r\n".encode())
        assert again.recv(64).startswith(b"HTTP/1.1 200")  # the address got its share back
    finally:
        again.close()


def test_a_trickled_body_is_refused_once_the_grace_is_over(server):
    connection = socket.create_connection(("127.0.0.1", server["port"]), timeout=10)
    try:
        connection.sendall(b"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                           b"Content-Length: 100000\r\n\r\n")
        started = time.monotonic()
        answer = b""
        connection.settimeout(0.4)
        while time.monotonic() - started < 20 and not answer:
            try:
                connection.sendall(b"x" * 10)  # 25 bytes a second: each wait well under the idle timeout
                answer = connection.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
        elapsed = time.monotonic() - started
        answer += read_answer(connection)  # the rest of the answer: its JSON body
    finally:
        connection.close()
    assert answer.startswith(b"HTTP/1.1 408") and b"request_too_slow" in answer
    assert elapsed < 4 * CLIENT_TIMEOUT


def test_bodies_beyond_the_memory_budget_are_told_to_come_back(server):
    limits = Limits()
    declared = limits.max_request_bytes
    fit = limits.max_inflight_bytes // declared
    held = []
    try:
        for _ in range(fit):  # heads that promise the largest body, and send none of it yet
            connection = socket.create_connection(("127.0.0.1", server["port"]), timeout=10)
            connection.sendall(f"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                               f"Content-Length: {declared}\r\n\r\n".encode())
            held.append(connection)
        time.sleep(0.3)
        one_more = socket.create_connection(("127.0.0.1", server["port"]), timeout=10)
        one_more.sendall(f"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                         f"Content-Length: {declared}\r\n\r\n".encode())
        answer = read_answer(one_more)
        one_more.close()
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 5" in answer.lower() and b'"busy"' in answer
        assert limits.max_inflight_bytes - fit * declared > len(RANK_LOG)
        small = urllib.request.Request(f"http://127.0.0.1:{server['port']}/api/diagnose", data=RANK_LOG,
                                       headers={"content-type": "text/plain"}, method="POST")
        with urllib.request.urlopen(small, timeout=30) as response:
            assert response.status == 200  # what is left of the budget still takes a pasted log
    finally:
        for connection in held:
            connection.close()
    time.sleep(CLIENT_TIMEOUT + 0.5)  # the held bodies time out and give their share back
    again = socket.create_connection(("127.0.0.1", server["port"]), timeout=10)
    again.sendall(f"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                  f"Content-Length: {declared}\r\n\r\n".encode())
    time.sleep(0.3)
    again.settimeout(0.5)
    try:
        answered = again.recv(1)
    except socket.timeout:
        answered = None  # the server waits for the body: the budget came back
    finally:
        again.close()
    assert answered is None, f"answered at once ({answered!r}) after the held bodies went"


def test_the_server_log_holds_no_traceback(server):
    assert "Traceback" not in server["log"].read_text()


def test_a_diagnosis_past_its_time_limit_is_stopped_with_a_clear_answer(tmp_path):
    client = TestClient(create_app(history=False, limits=Limits(diagnosis_seconds=0.0)))
    response = client.post("/api/diagnose", content=RANK_LOG, headers={"content-type": "text/plain"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "diagnosis_stopped" and "longer than 0 seconds" in error["message"] and error["hint"]
    fine = TestClient(create_app(history=False)).post("/api/diagnose", content=RANK_LOG,
                                                      headers={"content-type": "text/plain"})
    assert fine.status_code == 200


def test_a_pasted_log_is_not_queued_behind_large_uploads():
    """Large requests (over 1 MiB) wait for the large lane's slots; a small one has its own lane,
    so a pasted log is answered while two large uploads take every large slot."""
    import asyncio

    import httpx

    app = create_app(history=False, limits=Limits(max_concurrent=1))
    heavy = ("[rank1]: RuntimeError: CUDA error: device-side assert triggered\n" * 25_000).encode()  # 1.6 MB
    finished: list[str] = []

    async def post(name: str, body: bytes):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            response = await client.post("/api/diagnose", content=body, headers={"content-type": "text/plain"},
                                         timeout=300)
        finished.append(name)
        return response.status_code

    async def scenario():
        large = [asyncio.create_task(post(f"large-{index}", heavy)) for index in range(2)]
        await asyncio.sleep(0.2)  # both large requests are in: one diagnosing, one waiting for its slot
        small = await post("small", RANK_LOG)
        return small, await asyncio.gather(*large)

    small, large = asyncio.run(scenario())
    assert small == 200 and large == [200, 200]
    assert finished.index("small") < finished.index("large-1")  # not behind the second large upload


def test_a_diagnosis_stops_when_its_client_goes_away():
    """The request's own ASGI channel says the client disconnected: the work stops at the next
    block of input instead of running to its end for nobody."""
    import asyncio

    from starlette.requests import Request

    from firstfault.web import service
    from firstfault.web.ingress import Submission
    from firstfault.web.limits import InputRejected

    app = create_app(history=False)
    heavy = ("[rank1]: RuntimeError: CUDA error: device-side assert triggered\n" * 200_000).encode()  # 13 MB

    async def gone():
        return {"type": "http.disconnect"}

    request = Request({"type": "http", "method": "POST", "path": "/api/diagnose", "headers": [], "app": app}, gone)

    async def scenario():
        try:
            await service.diagnose(app, Submission(files=[("rank1.log", heavy)], raw_bytes=len(heavy)), request)
        except InputRejected as exc:
            return exc
        return None

    stopped = asyncio.run(scenario())
    assert stopped is not None and stopped.code == "diagnosis_stopped" and "client went away" in stopped.message
