"""The SQLite history: numbered migrations, one writer, list/get/delete, nothing but the document."""
from __future__ import annotations

import sqlite3
import threading

import pytest

from firstfault.history import MIGRATIONS, History, HistoryError, default_path

DOCUMENT = {"schema": "firstfault.diagnosis/1", "status": "failure", "primary": {"failure_id": "cuda-oom"}}


def test_add_list_get_delete(tmp_path):
    history = History(tmp_path / "h.sqlite3")
    first = history.add(DOCUMENT, "CUDA out of memory on rank 1")
    second = history.add({**DOCUMENT, "status": "healthy", "primary": None}, "no failure")
    assert [record.id for record in history.list()] == [second, first]
    record = history.get(first)
    assert record.document == DOCUMENT and record.failure_id == "cuda-oom" and record.status == "failure"
    assert history.get(second).failure_id is None
    assert history.delete(first) is True
    assert history.delete(first) is False
    assert history.get(first) is None
    assert [record.id for record in history.list()] == [second]


def test_schema_version_and_reopen(tmp_path):
    path = tmp_path / "h.sqlite3"
    History(path).add(DOCUMENT, "one")
    again = History(path)
    assert again.version == len(MIGRATIONS)
    assert len(again.list()) == 1
    versions = sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall()
    assert [row[0] for row in versions] == list(range(1, len(MIGRATIONS) + 1))


def test_newer_database_is_refused(tmp_path):
    path = tmp_path / "h.sqlite3"
    History(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (len(MIGRATIONS) + 5,))
    with pytest.raises(HistoryError, match="schema version"):
        History(path)


def test_unopenable_path_is_a_known_error(tmp_path):
    (tmp_path / "dir.sqlite3").mkdir()
    with pytest.raises(HistoryError):
        History(tmp_path / "dir.sqlite3")


def test_concurrent_writers_are_serialised(tmp_path):
    history = History(tmp_path / "h.sqlite3")

    def write(writer: int) -> None:
        for index in range(20):
            history.add({**DOCUMENT, "inputs": {"files": [f"w{writer}-{index}.log"]}}, "t")
            history.add(DOCUMENT, "the same every time")

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    records = history.list(limit=1000)
    assert len(records) == 81
    assert [record.seen for record in records if record.title == "the same every time"] == [80]


def test_deleted_rows_leave_no_bytes(tmp_path):
    path = tmp_path / "h.sqlite3"
    history = History(path)
    record = history.add({**DOCUMENT, "marker": "UNIQUE-MARKER-9731"}, "to delete")
    history.delete(record)
    history.close()
    assert b"UNIQUE-MARKER-9731" not in path.read_bytes()


def test_default_path_is_in_the_user_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_path() == tmp_path / "firstfault" / "history.sqlite3"
