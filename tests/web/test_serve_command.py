"""`firstfault serve`: options, the missing-extra message, the warning without authentication."""
from __future__ import annotations

import pytest

from firstfault import cli


@pytest.fixture
def captured_run(monkeypatch):
    calls = []
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **options: calls.append((app, options)))
    return calls


def test_every_option_is_documented():
    parser = cli.build_parser()
    serve = parser._subparsers._group_actions[0].choices["serve"]
    options = {action.dest: action for action in serve._actions if action.dest != "help"}
    assert set(options) >= {"host", "port", "db", "no_history"}
    assert all(action.help for action in options.values())


def test_loopback_default_and_db(captured_run, tmp_path, capsys):
    db = tmp_path / "h.sqlite3"
    assert cli.main(["serve", "--port", "8123", "--db", str(db)]) == 0
    app, options = captured_run[0]
    assert options["host"] == "127.0.0.1" and options["port"] == 8123
    assert app.state.history.path == str(db) and db.exists()
    err = capsys.readouterr().err
    assert "warning" not in err and "http://127.0.0.1:8123/" in err


def test_default_db_in_the_user_data_dir(captured_run, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert cli.main(["serve"]) == 0
    assert captured_run[0][0].state.history.path == str(tmp_path / "firstfault" / "history.sqlite3")


def test_all_interfaces_need_tokens_or_an_explicit_insecure_flag(captured_run, capsys, tmp_path):
    assert cli.main(["serve", "--host", "0.0.0.0", "--no-history"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("firstfault: error: refusing to serve on 0.0.0.0 without authentication")
    assert "firstfault serve tokens add NAME --team TEAM" in err and not captured_run
    assert cli.main(["serve", "--host", "0.0.0.0", "--db", str(tmp_path / "h.sqlite3")]) == 2  # a database, no token
    assert cli.main(["serve", "--host", "0.0.0.0", "--no-history", "--insecure-no-auth"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "without authentication (--insecure-no-auth)" in err
    assert captured_run[0][0].state.history is None and captured_run[0][0].state.sign_in is False
    assert cli.main(["serve", "tokens", "add", "ci", "--team", "vision", "--db", str(tmp_path / "h.sqlite3")]) == 0
    assert capsys.readouterr().out.startswith("ff1.")
    assert cli.main(["serve", "--host", "0.0.0.0", "--db", str(tmp_path / "h.sqlite3")]) == 0
    assert captured_run[-1][0].state.sign_in is True


def test_missing_web_extra(monkeypatch, capsys):
    monkeypatch.setattr("firstfault.web.missing_requirements", lambda: ["fastapi", "uvicorn"])
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'firstfault[web]'" in err and "fastapi" in err


def test_bad_port(capsys):
    assert cli.main(["serve", "--port", "70000"]) == 2
    assert "not a port" in capsys.readouterr().err


def test_an_unusable_data_directory_is_one_line_and_a_hint(captured_run, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data directory would go")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "cannot open the history database" in err and "--no-history" in err and "Traceback" not in err
    assert not captured_run


def test_client_timeout_option(captured_run):
    assert cli.main(["serve", "--no-history", "--client-timeout", "3"]) == 0
    app, options = captured_run[0]
    assert options["limit_concurrency"] and options["http"].__name__ == "TimelyH11Protocol"
    assert cli.main(["serve", "--no-history", "--client-timeout", "0"]) == 2


def test_on_every_address_only_the_served_names_are_answered(tmp_path):
    """A real server on all interfaces: a page that rebinds its own DNS name to this machine
    reaches it under that name and is refused (421), in every bind mode; this machine's names, the
    names given with --server-name and loopback are answered; a history id SQLite cannot hold is
    a 404, not a 500."""
    import http.client
    import socket
    import subprocess
    import sys
    import time

    from .helpers import free_port

    port = free_port()
    log = open(tmp_path / "serve.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
                                "--db", str(tmp_path / "h.sqlite3"), "--server-name", "TrainBox.corp.lan", "--insecure-no-auth"],
                               stdout=log, stderr=subprocess.STDOUT)

    def status(host: str, path: str = "/api/history", method: str = "GET") -> int:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request(method, path, headers={"Host": host})
            return connection.getresponse().status
        finally:
            connection.close()

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status(f"127.0.0.1:{port}")
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                time.sleep(0.3)
        assert status("attacker.example:8000") == 421
        assert status("attacker.example", "/api/history/1", "DELETE") == 421
        assert status(f"trainbox.corp.lan:{port}") == 200  # names compare without case
        assert status(f"{socket.gethostname()}:{port}") == 200
        assert status(f"localhost:{port}") == 200
        assert status(f"127.0.0.1:{port}", f"/api/history/{2 ** 63}") == 404
        assert status(f"127.0.0.1:{port}", f"/api/history/{2 ** 63}", "DELETE") == 404
        assert status(f"127.0.0.1:{port}", f"/history/{2 ** 64 + 5}") == 404
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert "answering for" in output and "trainbox.corp.lan" in output and "Traceback" not in output
