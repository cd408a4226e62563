"""The app in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright), real engine.

Each flow a user takes: paste a multi-rank log, upload a log-folder archive, try a sample, open an
entry, search, compare, delete a history item. Screenshots of the main pages go to
test-artifacts/screenshots/ at the repository root. Every request the pages make must go to the
app itself (no CDN), and the browser console must stay free of errors (CSP violations included).

Without Chromium or Playwright these tests skip, unless FIRSTFAULT_REQUIRE_BROWSER=1 (CI) makes
that a failure.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .helpers import combined_console, free_port, log_folder_tar_gz

CHROMIUM = os.environ.get("FIRSTFAULT_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
REQUIRED = os.environ.get("FIRSTFAULT_REQUIRE_BROWSER") == "1"
pytestmark = pytest.mark.timeout(240)  # a hung browser or server fails the test instead of the run


def _unavailable() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; never `playwright install`)"
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return ""


if _unavailable():
    if REQUIRED:
        raise RuntimeError(_unavailable())
    pytest.skip(_unavailable(), allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`firstfault serve` in a subprocess on a free loopback port, with its own history file."""
    port = free_port()
    folder = tmp_path_factory.mktemp("serve")
    log = open(folder / "serve.log", "wb")  # a file, not a pipe: a full pipe would stall the server
    process = subprocess.Popen(
        [sys.executable, "-m", "firstfault.cli", "serve", "--port", str(port), "--db", str(folder / "history.sqlite3")],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/api/entries", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = (folder / "serve.log").read_text(errors="replace")
                    pytest.fail(f"firstfault serve did not start: {output[-2000:]}")
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, timeout=60_000)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, server):
    """A fresh page that records every request and every console error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.requests, page.problems = [], []
    page.on("request", lambda request: page.requests.append(request.url))
    page.on("console", lambda message: message.type == "error" and page.problems.append(message.text))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    yield page
    context.close()
    outside = [url for url in page.requests if not url.startswith((server, "data:", "blob:", "about:"))]
    assert outside == [], f"the pages loaded something from outside: {outside}"
    assert page.problems == [], f"browser console errors: {page.problems}"


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_paste_a_multi_rank_log(page, server):
    page.goto(server + "/")
    shot(page, "01-diagnose")
    page.fill("#text", combined_console())
    page.click("#diagnose-button")
    page.wait_for_url(re.compile(r"/history/\d+$"))
    verdict = page.locator("#verdict")
    assert "CUDA out of memory" in verdict.inner_text()
    assert page.inner_text("#initiating-rank") == "rank 1"
    # the timeline: one row per rank, the first fault marked on rank 1's row
    timeline = page.locator("svg.timeline")
    assert timeline.is_visible()
    assert timeline.locator("circle.mark.first").count() == 1
    assert timeline.locator("rect.mark.collateral").count() >= 3
    labels = timeline.locator("text.row-label").all_text_contents()
    assert {"rank 0", "rank 1", "rank 2", "rank 3"} <= {label.split(" · ")[0] for label in labels}
    assert "rank 1 · failed" in labels  # each row says how its rank ended (the rank table)
    # the rank table, collapsed to the ranks that differ
    assert "failed" in page.inner_text("#ranks") and "rank" in page.inner_text("#ranks").lower()
    first_y = float(timeline.locator("circle.mark.first").get_attribute("cy"))
    rank1_y = float(timeline.locator("text.row-label", has_text="rank 1").get_attribute("y")) - 4
    assert abs(first_y - rank1_y) < 1
    # evidence with file and line, collateral, fix with copy buttons, verification
    assert "pasted.log:" in page.inner_text("table.evidence")
    assert "Collateral" in page.content()
    page.locator("#fix button.copy").first.click()
    # a selector, not wait_for_function: the page's CSP forbids the eval that a JS predicate needs
    page.wait_for_selector("#fix button.copy.done", state="attached")
    assert page.locator("#fix button.copy").first.inner_text() == "Copied"
    assert page.locator("#verify").is_visible()
    shot(page, "02-result-paste")


def test_upload_a_folder_archive(page, server, tmp_path):
    archive = tmp_path / "job-1234-logs.tar.gz"
    archive.write_bytes(log_folder_tar_gz())
    page.goto(server + "/")
    page.set_input_files("#files", str(archive))
    assert "job-1234-logs.tar.gz" in page.inner_text("#chosen")
    page.click("#diagnose-button")
    page.wait_for_url(re.compile(r"/history/\d+$"))
    assert page.inner_text("#initiating-rank") == "rank 1"
    # the shortest path that tells the files apart is shown; the whole path is its tooltip
    first_line = page.locator("#verdict dd code").first
    assert first_line.inner_text().startswith("rank1.log:")
    assert first_line.get_attribute("title").endswith("job-1234/logs/rank1.log")
    shot(page, "03-result-archive")


def test_fix_and_verify_commands_are_never_cut_off(page, server):
    """Every code box of the Fix and Verify cards shows its whole text, even on a narrow window."""
    page.set_viewport_size({"width": 760, "height": 900})
    page.goto(server + "/")
    page.fill("#text", combined_console())
    page.click("#diagnose-button")
    page.wait_for_url(re.compile(r"/history/\d+$"))
    boxes = page.locator("#fix pre, #verify pre")
    assert boxes.count() >= 2
    for index in range(boxes.count()):
        box = boxes.nth(index)
        scroll, client = box.evaluate("element => [element.scrollWidth, element.clientWidth]")
        assert scroll <= client, f"code box {index} is cut off: {box.inner_text()[:80]!r}"
    shot(page, "02b-result-narrow")


def test_try_a_sample(page, server):
    page.goto(server + "/")
    page.click("button[data-sample=bad-batch]")
    page.wait_for_url(re.compile(r"/history/\d+$"))
    assert page.locator("svg.timeline circle.mark.first").count() == 1
    shot(page, "04-result-sample")


def test_open_an_entry(page, server):
    page.goto(server + "/entries")
    shot(page, "05-encyclopedia")
    page.click("a[href='/entries/cuda-oom']")
    page.wait_for_url(server + "/entries/cuda-oom")
    assert page.inner_text("h1") == "CUDA out of memory"
    for heading in ("Summary", "How to confirm", "Fix", "Verification"):
        assert page.locator("h2", has_text=heading).count() >= 1
    shot(page, "06-entry")


def test_search(page, server):
    page.goto(server + "/entries")
    page.fill("#q", "NCCL watchdog collective operation timeout")
    page.press("#q", "Enter")
    page.wait_for_url(re.compile(r"/entries\?q="))
    results = page.locator("#results ol.hits > li")
    assert results.count() >= 1
    assert "timeout" in results.first.inner_text().lower()
    shot(page, "07-search")


def test_compare_page(page, server):
    page.goto(server + "/entries")
    page.click("a[href='/compare/nccl']")
    assert "NCCL failures side by side" in page.inner_text("h1")
    assert page.locator("table.sides tbody tr").count() >= 3
    shot(page, "08-compare-nccl")


def test_delete_a_history_item(page, server):
    page.goto(server + "/")
    page.fill("#text", combined_console())
    page.click("#diagnose-button")
    page.wait_for_url(re.compile(r"/history/\d+$"))
    record = page.url.rsplit("/", 1)[1]
    page.goto(server + "/history")
    row = page.locator(f"#history-{record}")
    assert row.is_visible()
    shot(page, "09-history")
    row.locator("button", has_text="Delete").click()
    page.wait_for_url(re.compile(r"/history\?deleted=1$"))
    assert page.locator(f"#history-{record}").count() == 0
    assert page.locator(".notice").inner_text() == "Deleted."
    response = page.goto(server + f"/history/{record}")
    assert response.status == 404
    page.problems.clear()  # the 404 is expected; Chromium logs it as a console error


def test_api_page(page, server):
    page.goto(server + "/api")
    assert page.locator("code", has_text="/api/diagnose").count() >= 1
    shot(page, "10-api")


def test_ask_a_follow_up_from_the_result_page(page, server):
    """Under a result, each collateral rank has its "Why not rank N?": it opens an answer that
    names the rule and cites the first fault's line; the question box asks anything else."""
    page.goto(server + "/")
    page.fill("#text", combined_console())
    page.click("#diagnose-button")
    page.wait_for_url(re.compile(r"/history/\d+$"))
    assert page.locator("#ask").is_visible()
    page.click("#ask-why-not-rank-0")
    page.wait_for_url(re.compile(r"/history/\d+/ask\?q=why\+not\+rank\+0$"))
    answer = page.inner_text("#answer")
    assert "Rank 0's errors are collateral" in answer and "rank 1" in answer and "rule" in answer
    assert "pasted.log:" in answer  # the cited lines
    shot(page, "10-ask-why-not-rank-0")
    page.fill("#answer input[name=q]", "is it safe to restart?")
    page.click("#answer button[type=submit]")
    page.wait_for_url(re.compile(r"/ask\?q=is\+it\+safe"))
    assert "restart" in page.inner_text("#answer").lower()
