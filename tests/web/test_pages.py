"""The HTML pages, fed from the canned diagnosis (the engine is tested elsewhere)."""
from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from firstfault.kb import load_knowledge_base
from firstfault.model import Diagnosis, Evidence, InputSummary
from firstfault.web.app import create_app
from firstfault.web.limits import Limits
from firstfault.web.report import build_document
from firstfault.web.timeline import render_timeline

from .conftest import canned_diagnosis

HTML = {"accept": "text/html"}
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe|source|video|audio|embed|object)\b[^>]*\b(?:src|href|data)=["']?(?:https?:)?//""", re.I)


def assert_self_contained(html: str) -> None:
    assert not EXTERNAL.search(html), EXTERNAL.search(html).group(0)
    assert "@import" not in html and "url(http" not in html


def test_diagnose_form(client):
    page = client.get("/", headers=HTML)
    assert page.status_code == 200
    assert 'name="text"' in page.text and 'type="file"' in page.text and "webkitdirectory" in page.text
    assert 'name="sample"' in page.text
    assert_self_contained(page.text)


def test_paste_redirects_to_the_stored_result(client, fake_pipeline):
    response = client.post("/diagnose", data={"text": "[rank1]: boom"}, headers=HTML, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/history/1"
    assert fake_pipeline == [[("pasted.log", b"[rank1]: boom")]]
    page = client.get("/history/1", headers=HTML)
    html = page.text
    # the answer first: failure, rank, host, confidence
    assert html.index("CUDA out of memory") < html.index("<svg")
    assert 'id="initiating-rank">rank 1<' in html and 'id="initiating-host">gpu-node-07<' in html and "93%" in html
    # the evidence with file and line, the collateral groups, the fix with copy buttons, the verification
    assert "rank1.log:790" in html and "rank0.log:900" in html
    assert "Collateral" in html and "ranks 0, 2, 3" in html
    assert html.count("data-copy") >= 3 and 'id="fix"' in html and 'id="verify"' in html
    # what to do with the job, and the reasoning with links to its lines
    assert 'id="action"' in html and "fix the cause, then rerun" in html
    assert 'id="because"' in html and "earliest-strong-root" in html and "rank1.log:790" in html[html.index('id="because"'):]
    assert_self_contained(html)


def test_timeline_draws_ranks_and_the_first_fault():
    svg = str(render_timeline(build_document(canned_diagnosis())))
    for rank in range(4):
        assert f">rank {rank}<" in svg
    assert svg.count('class="mark first"') == 1
    assert svg.count('class="mark collateral"') == 4
    assert "first fault" in svg and 'href="#ev-rank1.log-790"' in svg
    assert "+10min" in svg or "+5min" in svg  # a time axis, since every line has a time


def test_timeline_without_times_uses_log_order_and_collapses_many_quiet_ranks():
    evidence = tuple(Evidence(f"rank{rank}.log", 10, rank, None, None, "RuntimeError: x") for rank in (5, 7))
    diagnosis = Diagnosis("unknown", None, None, (), (), InputSummary(ranks=tuple(range(512))), error_lines=evidence)
    svg = str(render_timeline(build_document(diagnosis)))
    assert "order in the logs" in svg
    assert "+510 ranks" in svg
    assert svg.count('class="mark error"') == 2


def test_healthy_and_unknown_results(tmp_path, monkeypatch):
    line = Evidence("train.log", 7, None, None, None, "Segmentation fault (core dumped)")
    outcomes = {
        "healthy": Diagnosis("healthy", None, None, (), (), InputSummary(files=("a.log",), lines=3)),
        "unknown": Diagnosis("unknown", None, None, (), (), InputSummary(files=("train.log",), lines=9), error_lines=(line,)),
    }
    for status, diagnosis in outcomes.items():
        monkeypatch.setattr("firstfault.pipeline.diagnose_texts", lambda *args, _d=diagnosis, **kwargs: _d)
        with TestClient(create_app(history=False)) as client:
            page = client.post("/diagnose", data={"text": "x"}, headers=HTML)
        assert page.status_code == 200  # no history: the result is rendered at once
        if status == "healthy":
            assert "The logs show no failure" in page.text
        else:
            assert "no entry explains it" in page.text and "Segmentation fault" in page.text


def test_every_entry_has_a_page(client):
    kb = load_knowledge_base()
    for entry in kb.entries:
        page = client.get(f"/entries/{entry.id}", headers=HTML)
        assert page.status_code == 200, entry.id
        assert entry.title.replace("'", "&#39;").replace('"', "&#34;").split("&")[0][:20] in page.text
        for heading in ("Summary", "Mechanism", "How to confirm", "Fix", "Verification", "References"):
            assert f"<h2>{heading}</h2>" in page.text, (entry.id, heading)
        assert_self_contained(page.text)


def test_entry_page_escapes_and_links_related(client):
    page = client.get("/entries/cuda-oom", headers=HTML).text
    assert 'href="/entries/cuda-oom-fragmentation"' in page
    assert "firstfault explain cuda-oom" in page
    assert "<script>" not in page.split("</head>", 1)[1]


def test_index_and_search(client):
    index = client.get("/entries", headers=HTML).text
    assert "memory" in index and 'href="/entries/cuda-oom"' in index and 'href="/compare/nccl"' in index
    found = client.get("/entries", params={"q": "CUDA out of memory. Tried to allocate 2.00 GiB"}, headers=HTML).text
    assert 'id="results"' in found
    assert found.index('href="/entries/cuda-oom"') < found.index('id="cat-')
    nothing = client.get("/entries", params={"q": "zzzqqqxxx"}, headers=HTML).text
    assert "Nothing matches" in nothing


def test_comparison_page(client):
    page = client.get("/compare/nccl", headers=HTML)
    assert page.status_code == 200
    assert "NCCL failures side by side" in page.text and "NCCL_DEBUG" in page.text
    assert client.get("/compare/nothing-here", headers=HTML).status_code == 404


def test_history_list_and_delete(client, fake_pipeline, app):
    client.post("/diagnose", data={"text": "x"}, headers=HTML)
    client.post("/diagnose", data={"text": "y"}, headers=HTML)  # the same diagnosis: one entry, seen twice
    listing = client.get("/history", headers=HTML).text
    assert 'id="history-1"' in listing and 'id="history-2"' not in listing and 'id="seen-1"' in listing
    assert "seen 2 times" in listing
    app.state.history.add({"schema": "firstfault.diagnosis/1", "status": "healthy", "primary": None}, "another")
    listing = client.get("/history", headers=HTML).text
    assert 'id="history-1"' in listing and 'id="history-2"' in listing
    response = client.post("/history/1/delete", headers=HTML, follow_redirects=False)
    assert response.status_code == 303
    listing = client.get("/history", headers=HTML).text
    assert 'id="history-1"' not in listing and 'id="history-2"' in listing
    assert client.get("/history/1", headers=HTML).status_code == 404
    assert client.post("/history/1/delete", headers=HTML).status_code == 404


def test_no_history(fake_pipeline):
    with TestClient(create_app(history=False)) as client:
        assert "history is off" in client.get("/history", headers=HTML).text
        assert client.get("/history/1", headers=HTML).status_code == 404


def test_samples_run(client, fake_pipeline):
    page = client.get("/", headers=HTML).text
    samples = re.findall(r'name="sample" value="([^"]+)"', page)
    assert len(samples) >= 3
    for sample in samples:
        assert client.post("/diagnose", data={"sample": sample}, headers=HTML).status_code == 200
    assert len(fake_pipeline) == len(samples) and all(fake_pipeline)
    assert client.post("/diagnose", data={"sample": "nope"}, headers=HTML).status_code == 404


def test_sample_files_are_served(client):
    from firstfault.web.samples import SAMPLES

    for sample in SAMPLES:
        for _, static in sample.files:
            assert client.get(f"/static/{static}").status_code == 200


def test_limit_errors_are_pages_for_the_browser(tmp_path):
    with TestClient(create_app(history=False, limits=Limits(max_lines=5))) as client:
        page = client.post("/diagnose", data={"text": "a\n" * 10}, headers=HTML)
    assert page.status_code == 413
    assert "text/html" in page.headers["content-type"] and "10 lines; the limit is 5" in page.text


def test_unknown_host_refused_when_asked(tmp_path):
    with TestClient(create_app(history=False, allowed_hosts=("127.0.0.1",))) as client:
        assert client.get("/", headers={"host": "evil.example"}).status_code == 421
        assert client.get("/", headers={"host": "127.0.0.1:8000"}).status_code == 200


@pytest.mark.parametrize("path", ["/", "/entries", "/entries/cuda-oom", "/compare/nccl", "/history", "/api", "/nothing"])
def test_pages_load_nothing_from_outside(client, path):
    page = client.get(path, headers=HTML)
    assert_self_contained(page.text)
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_snapshots_of_the_result_page_and_timeline(fake_pipeline, snapshot):
    from .conftest import small_kb

    snapshot("timeline-canned.svg", str(render_timeline(build_document(canned_diagnosis()))) + "\n")
    with TestClient(create_app(history=False, kb=small_kb())) as client:
        page = client.post("/diagnose", data={"text": "x"}, headers=HTML).text
    from firstfault import __version__

    snapshot("result-canned.html", page.replace(f"firstfault {__version__}", "firstfault VERSION"))
    assert "Lower the micro-batch on rank 1" in page  # placeholders filled from the diagnosis


def test_a_failure_every_rank_raised_alike_starts_on_no_single_rank():
    """The real pipeline: both ranks refuse the nccl backend (a CPU-only build); the page says the
    failure started on every rank alike, not on a rank it does not know."""
    text = "".join(f"[rank{rank}]: RuntimeError: Distributed package doesn't have NCCL built in\n" for rank in range(2))
    with TestClient(create_app(history=False)) as client:
        page = client.post("/diagnose", data={"text": text}, headers=HTML)
    assert page.status_code == 200
    assert 'id="initiating-rank">every rank alike<' in page.text
