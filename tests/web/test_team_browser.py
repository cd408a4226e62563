"""A team server in a real Chromium: a member signs in with a token, diagnoses, finds the result
in the history, and does not see the other team's diagnosis (by the list or by its URL)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from .helpers import combined_console, free_port
from .test_browser import CHROMIUM, LAUNCH_ARGS, REQUIRED, _unavailable

if _unavailable():
    if REQUIRED:
        raise RuntimeError(_unavailable())
    pytest.skip(_unavailable(), allow_module_level=True)

pytestmark = pytest.mark.timeout(240)


def token(db: str, name: str, team: str) -> str:
    made = subprocess.run([sys.executable, "-m", "firstfault.cli", "serve", "tokens", "add", name, "--team", team, "--db", db],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@pytest.fixture(scope="module")
def team_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("team-browser")
    db = str(folder / "server.sqlite3")
    tokens = {"ana": token(db, "ana", "vision"), "bo": token(db, "bo", "speech")}
    port = free_port()
    log = open(folder / "serve.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
                                "--db", db], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/signin", timeout=5).read()
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, (folder / "serve.log").read_text()
            time.sleep(0.3)
    # the other team's diagnosis, saved through the API with its token
    upload = json.dumps({"text": combined_console(), "name": "speech-team-run.log"}).encode()
    request = urllib.request.Request(base + "/api/diagnose?save=true", data=upload, method="POST",
                                     headers={"content-type": "application/json", "authorization": f"Bearer {tokens['bo']}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        other = response.headers["location"].replace("/api", "")
    yield {"base": base, "tokens": tokens, "other": other}
    process.terminate()
    process.wait(timeout=20)
    log.close()


def test_sign_in_diagnose_see_own_history_only(team_server):
    from playwright.sync_api import sync_playwright

    base = team_server["base"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, timeout=60_000)
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(30_000)
            page.goto(base + "/history")
            page.wait_for_url(re.compile(r"/signin$"))  # not signed in: sent to sign in
            page.fill("#token", "ff1.0000000000000000.wrong")
            page.click("#signin-button")
            assert page.locator("#signin-failed").is_visible()
            page.fill("#token", team_server["tokens"]["ana"])
            page.click("#signin-button")
            page.wait_for_url(base + "/")
            page.fill("#text", combined_console())
            page.click("#diagnose-button")
            page.wait_for_url(re.compile(r"/history/\d+$"))
            assert "CUDA out of memory" in page.inner_text("#verdict")
            page.goto(base + "/history")
            listing = page.inner_text("main")
            assert "pasted.log" in listing and "speech-team-run.log" not in listing
            response = page.goto(base + team_server["other"])
            assert response.status == 404 and "speech-team-run" not in page.content()
            page.goto(base + "/history")
            assert "Sign out ana (vision)" in page.inner_text("#signout")
            page.click("#signout")
            page.wait_for_url(re.compile(r"/signin$"))
            page.goto(base + "/history")
            page.wait_for_url(re.compile(r"/signin$"))  # signed out: the session is gone
        finally:
            browser.close()
