"""Hostile requests are refused within seconds with memory bounded; odd ones get a 4xx, never a 500.

In process (TestClient): nested gzip, gzip bytes smuggled into JSON text, a 60 MiB urlencoded
form, 100,000-deep JSON, `Origin: null`, an unexpected error. The server's own memory, slow
clients and a 300 MiB chunked upload are measured against a real `firstfault serve` process:
test_serve_limits.py."""
from __future__ import annotations

import gzip
import json
import logging
import time
import zlib
from functools import lru_cache

import pytest
from fastapi.testclient import TestClient

from firstfault.web.app import create_app

from .helpers import RANK_LOGS

MiB = 1 << 20


@lru_cache(maxsize=1)
def inner_bomb() -> bytes:
    """gzip of 1 GiB of newlines (about 1 MB), made from a stream, never held expanded."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\n" * MiB
    return b"".join([*(packer.compress(block) for _ in range(1024)), packer.flush()])


@lru_cache(maxsize=1)
def nested_bomb() -> bytes:
    return gzip.compress(inner_bomb(), 9)


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(db_path=tmp_path / "history.sqlite3")) as client:
        yield client


def _timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_a_gzip_inside_a_gz_upload_counts_every_expanded_byte(client):
    upload = nested_bomb()
    assert len(upload) < 64 * 1024
    response, seconds = _timed(lambda: client.post("/api/diagnose", files={"files": ("logs.gz", upload)}))
    assert response.status_code == 413, response.text[:300]
    assert response.json()["error"]["code"] in ("decompression_bomb", "input_too_large")
    assert seconds < 20


def test_gzip_bytes_given_as_json_text_are_expanded_within_the_limit(client):
    text = inner_bomb().decode("utf-8", "surrogateescape")  # what `\udc8b`-style escapes carry
    body = json.dumps({"text": text})
    assert "\\udc8b" in body
    response, seconds = _timed(lambda: client.post("/api/diagnose", content=body, headers={"content-type": "application/json"}))
    assert response.status_code == 413, response.text[:300]
    assert seconds < 20


def test_a_small_gzip_given_as_json_text_is_read(client):
    text = gzip.compress(RANK_LOGS["rank1.log"].encode()).decode("utf-8", "surrogateescape")
    response = client.post("/api/diagnose", content=json.dumps({"text": text, "name": "rank1.log.gz"}),
                           headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["primary"]["failure_id"] == "cuda-oom"


def test_lone_surrogates_in_json_text_are_not_a_500(client):
    response = client.post("/api/diagnose", content=json.dumps({"text": "\ud800 " + RANK_LOGS["rank1.log"]}),
                           headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text[:300]


def test_a_60_mib_urlencoded_form_is_refused_early_with_memory_bounded(client):
    def body():
        yield b"text="
        for _ in range(60):
            yield b"%41" * (MiB // 3)

    response, seconds = _timed(lambda: client.post(
        "/api/diagnose", content=body(), headers={"content-type": "application/x-www-form-urlencoded"}))
    assert response.status_code == 413 and response.json()["error"]["code"] == "form_too_large"
    assert seconds < 20


def test_a_small_urlencoded_paste_still_works(client):
    response = client.post("/api/diagnose", data={"text": RANK_LOGS["rank1.log"]})
    assert response.status_code == 200 and response.json()["primary"]["failure_id"] == "cuda-oom"


def test_deeply_nested_json_is_422_not_500(client):
    body = '{"text": "x", "files": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = client.post("/api/diagnose", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "malformed_json"


FOREIGN = [{"origin": "null"}, {"origin": "null", "sec-fetch-site": "cross-site"}, {"origin": "https://evil.example"},
           {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}, {"sec-fetch-site": "cross-site"}]


@pytest.mark.parametrize("headers", FOREIGN, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_origin_null_is_a_foreign_origin(client, headers):
    """A sandboxed frame or a data: URL sends `Origin: null` (and `Sec-Fetch-Site: cross-site`)."""
    saved = client.post("/api/diagnose?save=true", content=RANK_LOGS["rank1.log"], headers={"content-type": "text/plain"})
    record = saved.headers["location"].rsplit("/", 1)[-1]
    assert client.delete(f"/api/history/{record}", headers=headers).status_code == 403
    stored = client.post("/api/diagnose?save=true", content=RANK_LOGS["rank1.log"], headers={"content-type": "text/plain", **headers})
    assert stored.status_code == 403
    assert client.post(f"/history/{record}/delete", headers=headers).status_code == 403
    assert client.get(f"/api/history/{record}").status_code == 200


@pytest.mark.parametrize("headers", [{"origin": "http://testserver"}, {"origin": "null", "sec-fetch-site": "same-origin"}, {}])
def test_the_apps_own_forms_and_plain_clients_may_write(client, headers):
    """Our pages send no referrer, so their form posts carry `Origin: null` with
    `Sec-Fetch-Site: same-origin`; curl sends no Origin at all."""
    saved = client.post("/api/diagnose?save=true", content=RANK_LOGS["rank1.log"], headers={"content-type": "text/plain"})
    record = saved.headers["location"].rsplit("/", 1)[-1]
    assert client.delete(f"/api/history/{record}", headers=headers).status_code == 204


def test_an_unexpected_error_is_a_500_logged_by_type_only(client, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("the raw line: HF_TOKEN=hf_SecretThatMustNotBeLogged000000")

    monkeypatch.setattr("firstfault.pipeline.diagnose_texts", broken)
    with caplog.at_level(logging.DEBUG):
        response = client.post("/api/diagnose", content=RANK_LOGS["rank1.log"], headers={"content-type": "text/plain"})
    assert response.status_code == 500 and response.json()["error"]["code"] == "internal_error"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "RuntimeError" in logged and "hf_Secret" not in logged
    assert all(record.exc_info is None for record in caplog.records)


def test_a_utf16_upload_is_read_not_skipped_as_binary(client):
    log = "\ufeff" + RANK_LOGS["rank1.log"].replace("\n", "\r\n")
    response = client.post("/api/diagnose", files={"files": ("rank1.log", log.encode("utf-16-le"))})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["primary"]["failure_id"] == "cuda-oom"
