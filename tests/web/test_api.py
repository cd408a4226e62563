"""The JSON API: the contract, every limit, every malformed input, one error shape."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

from firstfault.web.app import create_app
from firstfault.web.limits import Limits

from .helpers import RANK_LOGS, combined_console, gz, log_folder_tar_gz, tar_gz, zip_bytes

CONTRACT_KEYS = {"schema", "status", "primary", "collateral", "candidates", "inputs"}


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["status"] == status and error["message"]
    if code:
        assert error["code"] == code, error
    return error


def assert_contract(body: dict) -> None:
    assert CONTRACT_KEYS <= set(body)
    assert body["schema"] == "firstfault.diagnosis/1"
    assert body["status"] in ("failure", "healthy", "unknown")
    for key in ("timeline", "upload_notes"):
        assert key not in body  # page-only extras never leak into the contract


# -- the contract -----------------------------------------------------------------------------

def test_multipart_rank_files_give_the_contract(client):
    files = [("files", (name, text.encode(), "text/plain")) for name, text in RANK_LOGS.items()]
    response = client.post("/api/diagnose", files=files)
    assert response.status_code == 200, response.text
    body = response.json()
    assert_contract(body)
    assert body["status"] == "failure"
    assert body["primary"]["failure_id"] == "cuda-oom"
    assert body["primary"]["initiating"]["rank"] == 1
    assert body["primary"]["initiating"]["source"] == "rank1.log"
    assert body["candidates"][0]["failure_id"] == "cuda-oom"
    assert sorted(body["inputs"]["files"]) == sorted(RANK_LOGS)
    assert {0, 2, 3} <= {rank for group in body["collateral"] for rank in group["ranks"]}


def test_plain_text_body(client):
    response = client.post("/api/diagnose", content=combined_console().encode(), headers={"content-type": "text/plain"})
    assert response.status_code == 200
    body = response.json()
    assert_contract(body)
    assert body["primary"]["initiating"]["rank"] == 1


def test_json_body_text_and_files(client):
    response = client.post("/api/diagnose", json={"files": [{"name": n, "text": t} for n, t in RANK_LOGS.items()]})
    assert response.status_code == 200
    assert response.json()["primary"]["failure_id"] == "cuda-oom"
    response = client.post("/api/diagnose", json={"text": "all good\nepoch 3 done\n"})
    assert response.status_code == 200
    assert response.json()["status"] == "healthy"
    assert response.json()["primary"] is None


def test_folder_archive_tar_gz_and_zip(client):
    for name, data in (("logs.tar.gz", log_folder_tar_gz()),
                       ("logs.zip", zip_bytes({f"logs/{n}": t for n, t in RANK_LOGS.items()}))):
        response = client.post("/api/diagnose", files={"files": (name, data, "application/octet-stream")})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["primary"]["initiating"]["rank"] == 1
        assert any(path.endswith("rank1.log") for path in body["inputs"]["files"])


def test_gz_file(client):
    response = client.post("/api/diagnose", files={"files": ("rank1.log.gz", gz(RANK_LOGS["rank1.log"].encode()), "application/gzip")})
    assert response.status_code == 200
    assert response.json()["primary"]["failure_id"] == "cuda-oom"


def test_save_puts_it_in_the_history(client):
    response = client.post("/api/diagnose?save=true", content=combined_console().encode(), headers={"content-type": "text/plain"})
    location = response.headers["location"]
    stored = client.get(location).json()
    assert stored["diagnosis"]["primary"]["failure_id"] == "cuda-oom"
    assert stored["diagnosis"]["schema"] == "firstfault.diagnosis/1"
    listed = client.get("/api/history").json()["history"]
    assert [item["id"] for item in listed] == [stored["id"]]
    assert client.delete(location).status_code == 204
    assert_error(client.get(location), 404, "not_found")
    assert_error(client.delete(location), 404, "not_found")


def test_without_save_nothing_is_stored(client):
    client.post("/api/diagnose", content=combined_console().encode(), headers={"content-type": "text/plain"})
    assert client.get("/api/history").json()["history"] == []


# -- limits -----------------------------------------------------------------------------------

@pytest.fixture
def small(tmp_path):
    from fastapi.testclient import TestClient

    limits = Limits(max_request_bytes=200_000, max_total_bytes=300_000, max_files=3, max_lines=50,
                    max_archive_members=8, max_compression_ratio=50)
    with TestClient(create_app(db_path=tmp_path / "h.sqlite3", limits=limits)) as test_client:
        yield test_client


def test_request_too_large_by_header(small):
    error = assert_error(small.post("/api/diagnose", content=b"x" * 300_000, headers={"content-type": "text/plain"}), 413, "request_too_large")
    assert "MiB" in error["message"] or "larger" in error["message"]


def test_request_too_large_while_streaming(small):
    def chunks():  # no content-length: the limit is counted as the body arrives
        for _ in range(30):
            yield b"y" * 10_000

    response = small.post("/api/diagnose", content=chunks(), headers={"content-type": "text/plain"})
    assert_error(response, 413, "request_too_large")


def test_too_many_files(small):
    files = [("files", (f"rank{i}.log", b"hello\n", "text/plain")) for i in range(4)]
    assert_error(small.post("/api/diagnose", files=files), 422, "too_many_files")


def test_too_many_files_inside_an_archive(small):
    archive = tar_gz({f"logs/rank{i}.log": "hello\n" for i in range(5)})
    assert_error(small.post("/api/diagnose", files={"files": ("logs.tar.gz", archive)}), 422, "too_many_files")


def test_too_many_archive_members(small):
    archive = zip_bytes({f"logs/empty{i}/": "" for i in range(12)})
    assert_error(small.post("/api/diagnose", files={"files": ("logs.zip", archive)}), 422, "too_many_members")


def test_too_many_lines(small):
    assert_error(small.post("/api/diagnose", content=b"line\n" * 60, headers={"content-type": "text/plain"}), 413, "too_many_lines")


def test_expanded_logs_too_large(small):
    archive = tar_gz({"logs/a.log": b"0123456789\n" * 20_000, "logs/b.log": b"0123456789\n" * 20_000})
    assert len(archive) < 200_000
    assert_error(small.post("/api/diagnose", files={"files": ("logs.tar.gz", archive)}), 413)


def test_zip_bomb(small):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("rank0.log", b"\n" * (50 * 1024 * 1024))
    assert len(buffer.getvalue()) < 200_000
    assert_error(small.post("/api/diagnose", files={"files": ("bomb.zip", buffer.getvalue())}), 413, "decompression_bomb")


def test_gzip_bomb(small):
    bomb = gz(b"\0" * (50 * 1024 * 1024))
    assert_error(small.post("/api/diagnose", files={"files": ("rank0.log.gz", bomb)}), 413, "decompression_bomb")


def test_tar_gz_bomb(small):
    bomb = tar_gz({"logs/rank0.log": b"a" * (20 * 1024 * 1024)})
    assert len(bomb) < 200_000
    assert_error(small.post("/api/diagnose", files={"files": ("logs.tar.gz", bomb)}), 413)


# -- malformed input --------------------------------------------------------------------------

@pytest.mark.parametrize("member", ["../../etc/passwd", "/etc/passwd", "logs/../../escape.log", "C:\\Windows\\evil.log", "..\\..\\evil.log"])
def test_path_traversal_in_zip(client, member):
    archive = zip_bytes({"logs/rank0.log": "ok\n", member: "owned\n"})
    error = assert_error(client.post("/api/diagnose", files={"files": ("logs.zip", archive)}), 422, "unsafe_archive_path")
    assert "outside the archive" in error["message"]


@pytest.mark.parametrize("member", ["../escape.log", "/abs/rank0.log"])
def test_path_traversal_in_tar(client, member):
    archive = tar_gz({"logs/rank0.log": "ok\n", member: "owned\n"})
    assert_error(client.post("/api/diagnose", files={"files": ("logs.tar.gz", archive)}), 422, "unsafe_archive_path")


def test_links_in_an_archive_are_skipped_not_followed(client):
    archive = tar_gz({"logs/rank1.log": RANK_LOGS["rank1.log"]}, links={"logs/passwd.log": "/etc/passwd"})
    response = client.post("/api/diagnose", files={"files": ("logs.tar.gz", archive)})
    assert response.status_code == 200
    assert response.json()["inputs"]["files"] == ["logs/rank1.log"]
    only_link = tar_gz({}, links={"logs/passwd.log": "/etc/passwd"})
    error = assert_error(client.post("/api/diagnose", files={"files": ("logs.tar.gz", only_link)}), 422, "no_readable_input")
    assert "passwd.log" in error["message"]  # what was skipped, and why


@pytest.mark.parametrize("data", [b"PK\x03\x04" + b"\x00garbage" * 10, b"\x1f\x8b\x08\x00garbage", gz(b"x" * 600)[:-12],
                                  log_folder_tar_gz()[:200]])
def test_damaged_archives(client, data):
    assert_error(client.post("/api/diagnose", files={"files": ("logs.tar.gz", data)}), 422, "bad_archive")


def test_truncated_tar_inside_gzip(client):
    import gzip
    import tarfile

    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as archive:
        info = tarfile.TarInfo("logs/rank0.log")
        info.size = 10_000
        archive.addfile(info, io.BytesIO(b"a" * 10_000))
    response = client.post("/api/diagnose", files={"files": ("logs.tar.gz", gzip.compress(plain.getvalue()[:3000]))})
    assert_error(response, 422, "bad_archive")


def test_binary_files_are_skipped(client):
    files = [("files", ("model.pt", b"\x80\x02\x00\x00binary", "application/octet-stream")),
             ("files", ("rank1.log", RANK_LOGS["rank1.log"].encode(), "text/plain"))]
    response = client.post("/api/diagnose", files=files)
    assert response.status_code == 200
    assert response.json()["inputs"]["files"] == ["rank1.log"]


@pytest.mark.parametrize("headers,body,code", [
    ({"content-type": "multipart/form-data"}, b"--x\r\n", "malformed_multipart"),  # no boundary
    ({"content-type": "multipart/form-data; boundary=xyz"}, b"--xyz\r\nContent-Disposition: form-data\r\n\r\nhi\r\n--xyz--\r\n", "malformed_multipart"),
    ({"content-type": "multipart/form-data; boundary=xyz"}, b"this is not multipart at all", None),
    ({"content-type": "application/json"}, b"{not json", "malformed_json"),
    ({"content-type": "application/json"}, b"[1, 2]", "malformed_json"),
    ({"content-type": "application/json"}, b'{"text": 5}', "malformed_json"),
    ({"content-type": "application/json"}, b'{"files": [{"name": "a"}]}', "malformed_json"),
    ({"content-type": "application/json"}, b'{"txt": "typo"}', "malformed_json"),
    ({"content-type": "application/json"}, b"{}", "no_input"),
    ({"content-type": "text/plain"}, b"", "no_input"),
    ({"content-type": "text/plain"}, b"   \n\n", "no_input"),
])
def test_malformed_bodies(client, headers, body, code):
    assert_error(client.post("/api/diagnose", content=body, headers=headers), 422, code)


def test_empty_multipart(client):
    assert_error(client.post("/api/diagnose", files={"files": ("", b"", "application/octet-stream")}), 422, "no_input")


def test_unsupported_media_type(client):
    assert_error(client.post("/api/diagnose", content=b"<x/>", headers={"content-type": "application/xml"}), 415, "unsupported_media_type")


def test_bad_query_parameter(client):
    assert_error(client.post("/api/diagnose?save=maybe", content=b"x", headers={"content-type": "text/plain"}), 422, "invalid_request")


def test_non_utf8_log_is_read(client):
    data = RANK_LOGS["rank1.log"].encode() + b"\xff\xfe broken bytes\n"
    response = client.post("/api/diagnose", files={"files": ("rank1.log", data)})
    assert response.status_code == 200
    assert response.json()["primary"]["failure_id"] == "cuda-oom"


def test_internal_errors_have_the_error_shape_and_no_input(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    def explode(named_texts, **options):
        raise RuntimeError("boom on line: " + "".join(str(text) for _, text in named_texts))

    monkeypatch.setattr("firstfault.pipeline.diagnose_texts", explode)
    with TestClient(create_app(db_path=tmp_path / "h.sqlite3"), raise_server_exceptions=False) as test_client:
        response = test_client.post("/api/diagnose", content=b"SECRET-LINE-42\n", headers={"content-type": "text/plain"})
    assert_error(response, 500, "internal_error")
    assert "SECRET-LINE-42" not in response.text


# -- entries, history, docs -------------------------------------------------------------------

def test_entries_list_and_search(client):
    entries = client.get("/api/entries").json()["entries"]
    ids = {entry["id"] for entry in entries}
    assert "cuda-oom" in ids
    assert all(entry["url"] == f"/entries/{entry['id']}" for entry in entries)
    found = client.get("/api/entries", params={"q": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}).json()["entries"]
    assert found[0]["id"] == "cuda-oom"
    memory = client.get("/api/entries", params={"category": "memory"}).json()["entries"]
    assert memory and all(entry["category"] == "memory" for entry in memory)


def test_entry_detail(client):
    body = client.get("/api/entries/cuda-oom").json()
    assert body["id"] == "cuda-oom"
    for key in ("summary", "mechanism", "fix", "verify", "signatures"):
        assert key in body
    assert_error(client.get("/api/entries/no-such-entry"), 404, "unknown_entry")


def test_history_api_when_off(tmp_path):
    from fastapi.testclient import TestClient

    with TestClient(create_app(history=False)) as test_client:
        assert_error(test_client.get("/api/history"), 404, "history_off")
        response = test_client.post("/api/diagnose?save=true", content=combined_console().encode(), headers={"content-type": "text/plain"})
        assert response.status_code == 200 and "location" not in response.headers


def test_openapi_describes_every_route(client):
    schema = client.get("/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in ("/api/diagnose", "/api/entries", "/api/entries/{entry_id}", "/api/history", "/api/history/{record_id}"):
        assert path in paths
    body = paths["/api/diagnose"]["post"]["requestBody"]["content"]
    assert {"multipart/form-data", "application/json", "text/plain"} <= set(body)
    docs = client.get("/api", headers={"accept": "text/html"})
    assert docs.status_code == 200 and "/api/diagnose" in docs.text


def test_unknown_api_path_is_json(client):
    assert_error(client.get("/api/nothing"), 404, "not_found")
    assert_error(client.put("/api/entries"), 405, "method_not_allowed")


def test_cross_site_posts_are_refused(client):
    response = client.post("/api/diagnose", content=b"x\n", headers={"content-type": "text/plain", "origin": "https://evil.example"})
    assert_error(response, 403, "cross_origin")
    same = client.post("/api/diagnose", content=b"x\n", headers={"content-type": "text/plain", "origin": "http://testserver"})
    assert same.status_code == 200


def test_security_headers(client):
    response = client.get("/")
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"


def test_json_error_for_limit_has_hint(small):
    error = assert_error(small.post("/api/diagnose", content=b"line\n" * 60, headers={"content-type": "text/plain"}), 413)
    assert error["hint"]
    json.dumps(error)


def test_upload_names_cannot_climb(client):
    response = client.post("/api/diagnose", files={"files": ("../../etc/rank1.log", RANK_LOGS["rank1.log"].encode())})
    assert response.status_code == 200
    assert response.json()["inputs"]["files"] == ["etc/rank1.log"]


def test_an_upload_with_nothing_readable_says_why_in_web_words(client):
    """A binary file alone: refused with its name and why, and a hint about what to upload
    (never the command line's 'check the paths')."""
    files = [("files", ("model.pt", bytes(range(256)) * 64, "application/octet-stream"))]
    error = assert_error(client.post("/api/diagnose", files=files), 422, "no_readable_input")
    assert "model.pt" in error["message"] and "binary" in error["message"]
    assert "path" not in error["hint"] and "upload" in error["hint"]
    page = client.post("/diagnose", files=files, headers={"accept": "text/html"})
    assert page.status_code == 422 and "model.pt" in page.text and "check the paths" not in page.text


def test_the_slow_client_timeout_is_the_one_the_readme_states():
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    stated = float(re.search(r"`--client-timeout` seconds \(default (\d+)\)", readme).group(1))
    limits = Limits()
    assert limits.head_timeout == stated and limits.body_idle_timeout == stated


def test_ask_a_past_diagnosis_through_the_api(tmp_path):
    """GET /api/history/{id}/ask?q=...: the answer and the lines it cites, from the stored diagnosis."""
    from fastapi.testclient import TestClient

    from firstfault.web.app import create_app

    from .helpers import combined_console

    client = TestClient(create_app(db_path=tmp_path / "h.sqlite3"))
    saved = client.post("/api/diagnose?save=true", content=combined_console().encode(), headers={"content-type": "text/plain"})
    record = saved.headers["location"]
    reply = client.get(f"{record}/ask", params={"q": "why not rank 0?"})
    assert reply.status_code == 200
    body = reply.json()
    assert body["intent"] == "why-not-rank" and "Rank 0's errors are collateral" in body["answer"][0]
    assert any(item["source"] == "pasted.log" for item in body["evidence"])
    page = client.get(record.replace("/api", "") + "/ask", params={"q": "why not rank 0?"}, headers={"accept": "text/html"})
    assert page.status_code == 200 and "Rank 0&#39;s errors are collateral" in page.text
    assert client.get(f"{record}/ask", params={"q": ""}).status_code == 422
    assert client.get("/api/history/999/ask", params={"q": "why"}).status_code == 404
