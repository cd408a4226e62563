"""The planted set (tests/fixtures/planted_secrets.json) through the web app: the API answer, the
stored history, every page that shows it, and the database file itself hold none of the secrets,
nor the user names in upload paths."""
from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from firstfault.web.app import create_app

PLANTED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "planted_secrets.json").read_text(encoding="utf-8"))
HTML = {"accept": "text/html"}


def _leaks(secret: str, text: str) -> bool:
    window = 10
    return secret in text or len(secret) >= 16 and any(secret[i:i + window] in text for i in range(len(secret) - window + 1))


def test_planted_secrets_go_nowhere_through_the_web(tmp_path):
    db = tmp_path / "history.sqlite3"
    files = []
    for index, row in enumerate(PLANTED):
        folder = ("home/alice/logs", "C:\\Users\\bob\\logs", "/Users/carol/logs")[index % 3]
        separator = "\\" if "\\" in folder else "/"
        line = f"[rank{index}]: RuntimeError: CUDA error: device-side assert triggered ({row['planted']})\n"
        files.append(("files", (f"{folder}{separator}rank{index}.log", line.encode())))
    responses = []
    with TestClient(create_app(db_path=db)) as client:
        answer = client.post("/api/diagnose?save=true", files=files)
        assert answer.status_code == 200, answer.text[:500]
        assert answer.json()["primary"]["failure_id"] == "cuda-device-side-assert"
        responses.append(answer)
        record = answer.headers["location"].rsplit("/", 1)[-1]
        responses.append(client.get(f"/api/history/{record}"))
        responses.append(client.get(f"/history/{record}", headers=HTML))
        responses.append(client.get("/history", headers=HTML))
        responses.append(client.post("/diagnose", files=files, headers=HTML))  # the page, stored and shown
    stored = b"".join(path.read_bytes() for path in db.parent.iterdir()).decode("utf-8", "replace")
    for response in responses:
        assert response.status_code == 200
    for row in PLANTED:
        if row["name"] == "home-path":
            continue
        for response in responses:
            assert not _leaks(row["secret"], response.text), f"{row['name']} in {response.request.url}"
        assert not _leaks(row["secret"], stored), f"{row['name']} in the history database"
    for name in ("alice", "bob", "carol"):
        for response in responses:
            assert f"/{name}/" not in response.text and f"\\{name}\\" not in response.text, (name, response.request.url)
