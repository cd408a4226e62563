"""A planted secret never reaches the database, a temporary file or a response."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from firstfault.web.app import create_app

from .helpers import RANK_LOGS, tar_gz, zip_bytes

HF = "hf_" + "Zq9" * 12  # a Hugging Face token
PASSWORD = "Tr0ub4dor-and-3"
AWS = "AKIA" + "QWERTYUIOPASDFGH"
SECRETS = (HF, PASSWORD, AWS)
# The secrets sit on the very line that is the evidence, so a leak would show there first.
PLANTED = RANK_LOGS["rank1.log"].replace(
    "GPU 1 has a total capacity", f"HF_TOKEN={HF} password={PASSWORD} key {AWS} GPU 1 has a total capacity"
) + f"export WANDB_API_KEY={PASSWORD}\n"
# over 1 MiB: the size at which a spooled upload would roll over into a temporary file
BIG = PLANTED + "".join(f"step {i} loss {1 / (i + 1):.6f}: padding the upload\n" for i in range(25_000))


def contents_of(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())


@pytest.fixture
def spy_tempfiles(monkeypatch, tmp_path):
    """Point every temporary file at an empty folder and record any that is created at all."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    created = []
    for name in ("TemporaryFile", "NamedTemporaryFile", "mkstemp", "mkdtemp"):
        original = getattr(tempfile, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            created.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(tempfile, name, spy)
    return folder, created


def test_planted_secret_goes_nowhere(tmp_path, spy_tempfiles):
    assert len(BIG) > 1024 * 1024
    temp_folder, created = spy_tempfiles
    db = tmp_path / "data" / "history.sqlite3"
    responses = []
    with TestClient(create_app(db_path=db)) as client:
        html = {"accept": "text/html"}
        # the page: paste and upload (a plain file, a .tar.gz and a .zip), each stored in the history
        responses.append(client.post("/diagnose", data={"text": PLANTED}, headers=html))
        responses.append(client.post("/diagnose", files={"files": ("rank1.log", BIG.encode())}, headers=html))
        responses.append(client.post("/diagnose", files={"files": ("logs.tar.gz", tar_gz({"logs/rank1.log": PLANTED}))}, headers=html))
        responses.append(client.post("/diagnose", files={"files": (f"logs-{HF}.zip", zip_bytes({f"logs/{HF}/rank1.log": PLANTED}))}, headers=html))
        # the API, saved and not
        responses.append(client.post("/api/diagnose?save=true", content=PLANTED.encode(), headers={"content-type": "text/plain"}))
        responses.append(client.post("/api/diagnose", json={"text": PLANTED, "name": f"rank1-{HF}.log"}))
        responses.append(client.post("/api/diagnose", files={"files": ("rank1.log", BIG.encode())}))
        # everything a user can read back
        for record in client.get("/api/history").json()["history"]:
            responses.append(client.get(f"/api/history/{record['id']}"))
            responses.append(client.get(f"/history/{record['id']}", headers=html))
        responses.append(client.get("/history", headers=html))
        # errors must not echo the input either
        responses.append(client.post("/api/diagnose", content=PLANTED.encode(), headers={"content-type": "application/xml"}))
        responses.append(client.post("/api/diagnose", content=b"{" + PLANTED.encode(), headers={"content-type": "application/json"}))
        responses.append(client.post("/api/diagnose", files={"files": ("x.zip", b"PK\x03\x04" + PLANTED.encode())}))

    assert [r.status_code for r in responses[:7]] == [200] * 7, [(r.status_code, r.text[-600:]) for r in responses[:7] if r.status_code != 200]
    records = client.app.state.history.list()
    assert sum(record.seen for record in records) == 5  # identical diagnoses are one entry, seen again
    first = responses[0]
    assert first.status_code == 200 and "CUDA out of memory" in first.text  # the redirect was followed to the result
    assert "Tried to allocate 2.00 GiB" in first.text and "HF_TOKEN=" in first.text  # the evidence line is there, masked

    stored = b"".join(path.read_bytes() for path in db.parent.iterdir())  # the db and any journal next to it
    assert b"CUDA out of memory" in stored
    for secret in SECRETS:
        assert secret.encode() not in stored, f"{secret} reached the database"
        for response in responses:
            assert secret not in response.text, f"{secret} in the response to {response.request.method} {response.request.url}"
        assert secret.encode() not in contents_of(temp_folder)
    assert created == [], f"temporary files were created: {created}"
    assert not list(temp_folder.iterdir())


def test_history_file_is_private(tmp_path):
    db = tmp_path / "h.sqlite3"
    create_app(db_path=db)
    assert os.stat(db).st_mode & 0o077 == 0
