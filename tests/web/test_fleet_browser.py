"""The /fleet page in a real headless Chromium (the harness of test_browser.py), served by
`firstfault fleet serve` on a table that a real `fleet demo` + `fleet scan` made: every request
stays on the app, the console stays free of errors, the suspects of the report are on the page."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

for module in ("dask", "distributed", "pyarrow", "duckdb"):
    pytest.importorskip(module, reason="needs the fleet extra: pip install -e '.[fleet]'")

from .test_browser import browser, free_port, page, shot  # noqa: E402,F401  (fixtures and helpers)

pytestmark = pytest.mark.timeout(300)
FIRSTFAULT = [sys.executable, "-m", "firstfault.cli"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`firstfault fleet serve` on a scanned synthetic fleet, on a free loopback port."""
    folder = tmp_path_factory.mktemp("fleet-serve")
    table = folder / "fleet.parquet"
    for command in (["fleet", "demo", str(folder / "demo")],  # the README's quick-start fleet
                    ["fleet", "scan", str(folder / "demo" / "jobs"), "--out", str(table), "--workers", "1"]):
        subprocess.run(FIRSTFAULT + command, check=True, capture_output=True, timeout=240)
    port = free_port()
    log = open(folder / "serve.log", "wb")
    process = subprocess.Popen(FIRSTFAULT + ["fleet", "serve", str(table), "--port", str(port)], stdout=log,
                               stderr=subprocess.STDOUT, env={**os.environ, "XDG_DATA_HOME": str(folder / "data")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/api/fleet/report", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("firstfault fleet serve did not start: " + (folder / "serve.log").read_text(errors="replace")[-2000:])
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def test_the_fleet_page(page, server):
    report = json.loads(urllib.request.urlopen(server + "/api/fleet/report", timeout=10).read())
    page.goto(server + "/")
    page.click("a[href='/fleet']")
    page.wait_for_url(server + "/fleet")
    planted = json.loads((Path(report["table"]).parent / "demo" / "truth.json").read_text())["bad_hosts"]
    assert {suspect["host"] for suspect in report["suspect_hosts"]} == set(planted)
    for suspect in report["suspect_hosts"]:
        block = page.locator(f"#host-{suspect['host']}")
        assert block.is_visible()
        assert block.locator(".jobs-count").inner_text() == str(len(suspect["jobs"]))
        assert block.locator("table.evidence tbody tr").count() == len(suspect["jobs"])
    weeks = page.locator("svg.fleet-chart.weekly")
    assert weeks.is_visible() and weeks.locator("rect.seg title").count() == sum(len(week["by_class"]) for week in report["by_week"])
    assert page.locator("svg.fleet-chart.classes rect.bar").count() == len(report["by_class"])
    first = report["suspect_hosts"][0]["host"]
    page.locator(f"#host-{first} button.copy").click()
    # a selector, not wait_for_function: the page's CSP forbids the eval that a JS predicate needs
    page.wait_for_selector(f"#host-{first} button.copy.done", state="attached")
    shot(page, "11-fleet")
