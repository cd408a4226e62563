"""The /fleet page and /api/fleet/report: through the app in process, and in a real headless
Chromium against `firstfault fleet serve` (Debian's /usr/bin/chromium driven by Playwright).

Without Chromium or Playwright the browser test skips, unless FIRSTFAULT_REQUIRE_BROWSER=1 (CI).
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")

from firstfault.fleet.report import build_report  # noqa: E402
from firstfault.fleet.table import TABLE_VARIABLE, read_rows, write_part  # noqa: E402

from .rows import canned_rows  # noqa: E402

HTML = {"accept": "text/html"}
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)
CHROMIUM = os.environ.get("FIRSTFAULT_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


@pytest.fixture
def table(tmp_path):
    folder = tmp_path / "fleet.parquet"
    folder.mkdir()
    write_part(folder, canned_rows())
    return folder


def _client(monkeypatch, table=None):
    from fastapi.testclient import TestClient

    from firstfault.web.app import create_app

    if table is None:
        monkeypatch.delenv(TABLE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(TABLE_VARIABLE, str(table))
    return TestClient(create_app(history=False))


def test_without_a_table_the_page_says_how_to_make_one(monkeypatch):
    with _client(monkeypatch) as client:
        page = client.get("/fleet", headers=HTML)
        assert page.status_code == 200 and 'id="fleet-empty"' in page.text
        assert "firstfault fleet scan" in page.text and 'aria-current="page">Fleet<' in page.text
        assert client.get("/api/fleet/report").status_code == 404


def test_the_page_shows_suspects_commands_and_charts(monkeypatch, table):
    with _client(monkeypatch, table) as client:
        response = client.get("/fleet", headers=HTML)
    html = response.text
    assert response.status_code == 200 and "content-security-policy" in response.headers
    assert not EXTERNAL.search(html) and " style=" not in html  # nothing from outside, no inline style
    assert 'id="host-gpu-02"' in html and 'class="jobs-count">5<' in html
    assert 'scontrol update NodeName=gpu-02 State=DRAIN Reason=&#34;firstfault: gpu-fallen-off-bus&#34;' in html
    assert "kubectl cordon gpu-02" in html and html.count("data-copy") == 1  # one suspect: its block only
    assert "gpu-04" in html.split('id="suspects"')[1].split("Watch")[1]  # the ECC host is only watched
    weekly = html.split('class="fleet-chart weekly"')[1].split("</svg>")[0]
    report = build_report(read_rows(table))
    segments = sum(len(week["by_class"]) for week in report["by_week"])
    assert weekly.count("<title>") == segments  # one bar segment (with its tooltip) per week and class
    classes = html.split('class="fleet-chart classes"')[1].split("</svg>")[0]
    assert classes.count('class="bar hardware"') == 2 and classes.count('class="bar code"') == 1


def test_the_api_serves_the_same_report_as_the_cli(monkeypatch, table):
    with _client(monkeypatch, table) as client:
        served = client.get("/api/fleet/report?min_jobs=2&alpha=0.05").json()
        invalid = client.get("/api/fleet/report?alpha=3")
    expected = build_report(read_rows(table), table=str(table), min_jobs=2, alpha=0.05)
    served.pop("generated_at"), expected.pop("generated_at")
    assert served == expected
    assert {entry["host"] for entry in served["suspect_hosts"]} == {"gpu-02", "gpu-04"}  # two ECC jobs pass at K=2, alpha 0.05
    assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "invalid_request"


def _browser_unavailable() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; never `playwright install`)"
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return ""


@pytest.mark.timeout(240)
def test_the_fleet_page_in_a_real_browser(table, tmp_path):
    if _browser_unavailable():
        if os.environ.get("FIRSTFAULT_REQUIRE_BROWSER") == "1":
            pytest.fail(_browser_unavailable())
        pytest.skip(_browser_unavailable())
    from playwright.sync_api import sync_playwright

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(tmp_path / "serve.log", "wb")
    environment = {**os.environ, "HOME": str(tmp_path)}  # the history file goes to a scratch data dir
    server = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "fleet", "serve", str(table), "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, env=environment)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/api/fleet/report", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("firstfault fleet serve did not start: " + (tmp_path / "serve.log").read_text(errors="replace")[-2000:])
                time.sleep(0.3)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, timeout=60_000,
                                                 args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            requests, problems = [], []
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: message.type == "error" and problems.append(message.text))
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.goto(base + "/")
            page.click("a[href='/fleet']")
            page.wait_for_url(base + "/fleet")
            assert page.locator("#host-gpu-02").is_visible()
            assert page.locator("svg.fleet-chart.weekly rect.seg").count() >= 3
            assert page.locator("svg.fleet-chart.classes rect.bar.hardware").count() == 2
            page.locator("#host-gpu-02 button.copy").click()
            page.wait_for_selector("#host-gpu-02 button.copy.done", state="attached")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "11-fleet.png"), full_page=True)
            browser.close()
        assert [url for url in requests if not url.startswith((base, "data:", "about:"))] == []
        assert problems == []
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()
