"""A team server over real HTTP: `firstfault serve` on all interfaces with API tokens. Two teams
and nobody call every route of the app with the other team's ids: nothing of another team is
read, changed or deleted (401/403/404, never 200); an admin sees all; a revoked token is refused
at once; the quota answers 429; the audit log records each action; tokens are kept as hashes."""
from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
import urllib.parse

import pytest

from firstfault.web.app import create_app

from .helpers import combined_console, free_port

PLANTED_TEAM_WORD = "vision-only-marker"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firstfault.cli", *args], capture_output=True, text=True, timeout=120)


class Client:
    def __init__(self, port: int, token: str | None = None) -> None:
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sent = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            sent.setdefault("Content-Type", "text/plain")
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, response.read().decode("utf-8", "replace"), dict(response.getheaders())
        finally:
            connection.close()


@pytest.fixture(scope="module")
def team_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("team")
    db = str(folder / "server.sqlite3")
    tokens = {}
    for name, team, admin in (("ana", "vision", False), ("bo", "speech", False), ("root", "ops", True)):
        made = cli("serve", "tokens", "add", name, "--team", team, "--db", db, *(["--admin"] if admin else []))
        assert made.returncode == 0, made.stderr
        tokens[name] = made.stdout.strip()
    port = free_port()
    log = open(folder / "serve.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
                                "--db", db, "--quota-per-day", "4"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            if Client(port).call("GET", "/signin")[0] == 200:
                break
        except OSError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, (folder / "serve.log").read_text()
        time.sleep(0.3)
    yield {"port": port, "db": db, "tokens": tokens, "log": folder / "serve.log"}
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture(scope="module")
def entries(team_server):
    """Each team saves one diagnosis; their ids."""
    port, tokens = team_server["port"], team_server["tokens"]
    ids = {}
    for name in ("ana", "bo"):
        # vision's upload is named by a word only vision's entry holds (its file name and title)
        upload = json.dumps({"text": combined_console(), "name": f"{PLANTED_TEAM_WORD}.log" if name == "ana" else "b.log"})
        status, _, headers = Client(port, tokens[name]).call("POST", "/api/diagnose?save=true", upload.encode(),
                                                             {"Content-Type": "application/json"})
        assert status == 200
        ids[name] = int(headers["location"].rsplit("/", 1)[1])
    return ids


def all_routes() -> list[tuple[str, str]]:
    app = create_app(history=False)
    found = []
    for route in app.routes:
        for inner in getattr(getattr(route, "original_router", None), "routes", [route]):
            for method in sorted(getattr(inner, "methods", None) or []):
                if method != "HEAD":
                    found.append((method, inner.path))
    return found


def filled(path: str, record_id: int) -> str:
    return (path.replace("{record_id}", str(record_id)).replace("{entry_id}", "cuda-oom").replace("{topic}", "nccl")
            + ("?q=why+not+rank+0" if path.endswith("/ask") else ""))


PUBLIC = {("GET", "/signin"), ("POST", "/signin")}


def test_every_route_refuses_nobody(team_server, entries):
    routes = all_routes()
    assert len(routes) >= 20
    for method, path in routes:
        if (method, path) in PUBLIC:
            continue
        status, body, headers = Client(team_server["port"]).call(method, filled(path, entries["ana"]),
                                                                 b"x" if method == "POST" else None)
        assert status in (401, 303), (method, path, status)
        assert PLANTED_TEAM_WORD not in body
        if status == 303:
            assert headers.get("location") == "/signin"


def test_every_route_keeps_one_teams_entries_from_the_other(team_server, entries):
    bo = Client(team_server["port"], team_server["tokens"]["bo"])
    for method, path in all_routes():
        if "{record_id}" not in path:
            continue
        status, body, _ = bo.call(method, filled(path, entries["ana"]), b"" if method == "POST" else None)
        assert status in (401, 403, 404), (method, path, status)
        assert PLANTED_TEAM_WORD not in body
    for path in ("/api/history", "/history"):
        status, body, _ = bo.call("GET", path, headers={"Accept": "text/html"} if not path.startswith("/api") else None)
        assert status == 200 and PLANTED_TEAM_WORD not in body
        assert f"history-{entries['ana']}\"" not in body and f'"id": {entries["ana"]},' not in body
    listed = json.loads(bo.call("GET", "/api/history")[1])["history"]
    assert [item["id"] for item in listed] == [entries["bo"]]
    ana = Client(team_server["port"], team_server["tokens"]["ana"])
    assert ana.call("GET", f"/api/history/{entries['ana']}")[0] == 200  # still there: nothing was deleted
    assert PLANTED_TEAM_WORD in ana.call("GET", f"/api/history/{entries['ana']}")[1]
    root = Client(team_server["port"], team_server["tokens"]["root"])
    seen = {item["id"] for item in json.loads(root.call("GET", "/api/history")[1])["history"]}
    assert {entries["ana"], entries["bo"]} <= seen  # an admin sees every team's


def test_the_audit_log_is_for_admins_and_records_each_action(team_server, entries):
    ana = Client(team_server["port"], team_server["tokens"]["ana"])
    ana.call("GET", f"/api/history/{entries['ana']}/ask?q=why+not+rank+0")
    assert ana.call("GET", "/api/audit")[0] == 403
    log = json.loads(Client(team_server["port"], team_server["tokens"]["root"]).call("GET", "/api/audit")[1])["audit"]
    actions = {(item["who"], item["action"]) for item in log}
    assert {("ana", "token-created"), ("ana", "diagnosed"), ("ana", "viewed"), ("ana", "asked"), ("bo", "diagnosed")} <= actions


def test_a_browser_signs_in_with_a_token_and_keeps_a_session(team_server, entries):
    port = team_server["port"]
    form = urllib.parse.urlencode({"token": team_server["tokens"]["ana"]}).encode()
    status, _, headers = Client(port).call("POST", "/signin", form, {"Content-Type": "application/x-www-form-urlencoded",
                                                                     "Sec-Fetch-Site": "same-origin", "Origin": "null"})
    assert status == 303
    cookie = headers["set-cookie"]
    assert "ff_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    session = cookie.split(";", 1)[0]
    status, body, _ = Client(port).call("GET", "/history", headers={"Cookie": session, "Accept": "text/html"})
    assert status == 200 and f'id="history-{entries["ana"]}"' in body and f'id="history-{entries["bo"]}"' not in body
    assert "Sign out ana (vision)" in body
    wrong = urllib.parse.urlencode({"token": "ff1.0000000000000000.nope"}).encode()
    assert Client(port).call("POST", "/signin", wrong, {"Content-Type": "application/x-www-form-urlencoded",
                                                         "Sec-Fetch-Site": "same-origin", "Origin": "null"})[0] == 401


def test_quota_then_revocation_then_no_token_in_clear(team_server, entries):
    port, tokens = team_server["port"], team_server["tokens"]
    bo = Client(port, tokens["bo"])
    statuses = [bo.call("POST", "/api/diagnose", combined_console().encode()) for _ in range(4)]
    limited = [item for item in statuses if item[0] == 429]
    assert limited and limited[0][2].get("retry-after") == "3600" and '"quota"' in limited[0][1]
    assert cli("serve", "tokens", "revoke", "ana", "--db", team_server["db"]).returncode == 0
    status, body, _ = Client(port, tokens["ana"]).call("GET", "/api/history")
    assert status == 401 and "revoked" in body
    stored = open(team_server["db"], "rb").read()
    assert all(token.encode() not in stored and token.split(".")[2].encode() not in stored for token in tokens.values())
    listing = cli("serve", "tokens", "list", "--db", team_server["db"])
    assert "ana\tteam vision\tmember\trevoked" in listing.stdout and "root\tteam ops\tadmin\tactive" in listing.stdout
    assert "Traceback" not in team_server["log"].read_text()


def test_a_trusted_proxy_signs_users_in_and_others_cannot(tmp_path):
    """SSO in front: the user and team headers are taken from the proxy's address only; the same
    headers from any other address are ignored (401)."""
    from .test_serve_fairness import outward_address

    other = outward_address()
    if other is None:
        pytest.skip("this machine has no address besides loopback")
    port = free_port()
    log = open(tmp_path / "serve.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
                                "--db", str(tmp_path / "h.sqlite3"), "--trust-proxy-header", "X-Forwarded-User",
                                "--trusted-proxy", "127.0.0.1", "--team-header", "X-Forwarded-Groups",
                                "--server-name", other], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if Client(port).call("GET", "/signin")[0] == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.3)
        signed = {"X-Forwarded-User": "ana@corp", "X-Forwarded-Groups": "vision,all-staff"}
        status, body, _ = Client(port).call("GET", "/api/history", headers=signed)
        assert status == 200 and json.loads(body) == {"history": []}
        assert Client(port).call("GET", "/api/history", headers={"X-Forwarded-User": "ana@corp"})[0] == 401  # no team
        connection = http.client.HTTPConnection(other, port, timeout=30)
        connection.request("GET", "/api/history", headers={"Host": other, **signed})
        assert connection.getresponse().status == 401  # the same headers from elsewhere: not trusted
        connection.close()
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
    assert "Traceback" not in (tmp_path / "serve.log").read_text()


def test_watch_sends_its_diagnosis_to_the_team_which_alerts_that_team(team_server, tmp_path):
    """A team's webhook (a real HTTP receiver here) is called when `watch --server --token-file`
    keeps a failure in that team's history; the other team's rules are not called."""
    import http.server
    import threading
    from pathlib import Path

    received: list[dict] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        port, tokens = team_server["port"], team_server["tokens"]
        hook = f"http://127.0.0.1:{receiver.server_port}/hook"
        root = Client(port, tokens["root"])
        assert root.call("POST", "/api/alerts", json.dumps({"webhook": hook + "?team=ops"}).encode(),
                         {"Content-Type": "application/json"})[0] == 201  # the admin's own team: ops
        bo = Client(port, tokens["bo"])
        status, _, _ = bo.call("POST", "/api/alerts", json.dumps({"webhook": hook}).encode(), {"Content-Type": "application/json"})
        assert status == 201
        assert len(json.loads(bo.call("GET", "/api/alerts")[1])["alerts"]) == 1  # its own rule only
        token_file = tmp_path / "token"
        token_file.write_text(tokens["bo"] + "\n")
        example = Path(__file__).resolve().parents[2] / "examples" / "nccl-timeouts-after-assert"
        watched = subprocess.run([sys.executable, "-m", "firstfault.cli", "watch", str(example), "--duration", "1",
                                  "--server", f"http://127.0.0.1:{port}", "--token-file", str(token_file)],
                                 capture_output=True, text=True, timeout=120)
        assert "firstfault: server: the first time the team sees this failure" in watched.stderr, watched.stderr
        deadline = time.monotonic() + 10
        while not received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [item["team"] for item in received] == ["speech"] and received[0]["failure_id"] == "cuda-device-side-assert"
        listed = json.loads(bo.call("GET", "/api/history")[1])["history"]
        assert any(item["origin"] == "watch" for item in listed)
        refused = subprocess.run([sys.executable, "-m", "firstfault.cli", "watch", str(example), "--duration", "1",
                                  "--server", f"http://127.0.0.1:{port}"], capture_output=True, text=True, timeout=120)
        assert "the server did not keep the diagnosis (HTTP 401)" in refused.stderr  # no token, not kept
    finally:
        receiver.shutdown()


def test_a_token_diagnoses_at_most_its_share_at_once_and_the_audit_log_is_pruned(tmp_path):
    import asyncio

    import httpx

    from firstfault.web.limits import Limits

    app = create_app(db_path=tmp_path / "h.sqlite3", sign_in=True, limits=Limits(concurrent_per_token=1))
    token = app.state.auth.add("ana", "vision")
    heavy = ("[rank1]: RuntimeError: CUDA error: device-side assert triggered\n" * 30_000).encode()

    async def post():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            response = await client.post("/api/diagnose", content=heavy, timeout=300,
                                         headers={"content-type": "text/plain", "authorization": f"Bearer {token}"})
        return response.status_code, response.headers.get("retry-after")

    async def both():
        return await asyncio.gather(post(), post())

    answers = sorted(asyncio.run(both()))
    assert answers == [(200, None), (429, "5")]
    store = app.state.auth
    store.history.execute("UPDATE audit SET at = at - 100 * 86400 WHERE action = 'token-created'")
    assert store.prune_audit(90) == 1
    assert "token-created" not in {row["action"] for row in store.audit_log()}
