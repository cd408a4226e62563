"""The /fleet page and /api/fleet/report through the app, on a table written from canned rows.
(The page in a real browser, on a table a real scan made: tests/web/test_fleet_browser.py.)"""
from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("fastapi")
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")

from firstfault.fleet.report import build_report  # noqa: E402
from firstfault.fleet.table import TABLE_VARIABLE, read_rows, write_part  # noqa: E402

from .rows import canned_rows  # noqa: E402

HTML = {"accept": "text/html"}
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)


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
