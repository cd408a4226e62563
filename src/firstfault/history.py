"""Past diagnoses in SQLite: the masked diagnosis (its JSON contract) and a title, never a raw log.

One writer: every write goes through one lock and one short transaction. The schema evolves by
numbered migrations recorded in `schema_version`; a database from a newer firstfault is refused
rather than guessed at.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import FirstfaultError

MIGRATIONS: tuple[str, ...] = (
    # 1: one row per diagnosis; `document` is the masked contract JSON (plus the page's timeline)
    """
    CREATE TABLE diagnosis (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        created REAL NOT NULL,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        failure_id TEXT,
        document TEXT NOT NULL
    );
    CREATE INDEX diagnosis_created ON diagnosis (created DESC);
    """,
)


def default_path() -> Path:
    """history.sqlite3 in the user's data directory ($XDG_DATA_HOME/firstfault on Linux)."""
    try:
        from platformdirs import user_data_dir

        return Path(user_data_dir("firstfault", appauthor=False)) / "history.sqlite3"
    except ImportError:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        return Path(base) / "firstfault" / "history.sqlite3"


@dataclass(frozen=True)
class Record:
    id: int
    created: float
    title: str
    status: str
    failure_id: str | None
    document: dict

    def summary(self) -> dict:
        return {"id": self.id, "created": self.created, "title": self.title, "status": self.status, "failure_id": self.failure_id}


class HistoryError(FirstfaultError):
    """The history database cannot be opened or is from a newer firstfault."""


class History:
    """The history database at `path`; `:memory:` keeps it for the life of the object."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA secure_delete = ON")  # a deleted diagnosis leaves no bytes behind
            self._migrate()
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open the history database {self.path}: {exc}", "move it with --db PATH, or run with --no-history") from None
        if self.path != ":memory:":
            os.chmod(self.path, 0o600)

    def _migrate(self) -> None:
        with self._lock:
            self._db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = row[0] or 0
            if current > len(MIGRATIONS):
                raise HistoryError(
                    f"{self.path} has schema version {current}; this firstfault knows up to {len(MIGRATIONS)}",
                    "upgrade firstfault, or use another file with --db PATH",
                )
            for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for statement in filter(str.strip, script.split(";")):
                        self._db.execute(statement)
                    self._db.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    @property
    def version(self) -> int:
        return self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0

    def add(self, document: dict, title: str) -> int:
        """Store a masked diagnosis document (the contract); return its id."""
        primary = document.get("primary") or {}
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO diagnosis (created, title, status, failure_id, document) VALUES (?, ?, ?, ?, ?)",
                (time.time(), title[:200], document.get("status", "unknown"), primary.get("failure_id"),
                 json.dumps(document, ensure_ascii=False, sort_keys=True)),
            )
            return int(cursor.lastrowid)

    def list(self, limit: int = 200) -> list[Record]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, created, title, status, failure_id, document FROM diagnosis ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [self._record(row) for row in rows]

    def get(self, record_id: int) -> Record | None:
        if not _storable(record_id):
            return None
        with self._lock:
            row = self._db.execute(
                "SELECT id, created, title, status, failure_id, document FROM diagnosis WHERE id = ?", (record_id,)
            ).fetchone()
        return self._record(row) if row else None

    def delete(self, record_id: int) -> bool:
        if not _storable(record_id):
            return False
        with self._lock:
            cursor = self._db.execute("DELETE FROM diagnosis WHERE id = ?", (record_id,))
        return cursor.rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def _record(row) -> Record:
        return Record(id=row[0], created=row[1], title=row[2], status=row[3], failure_id=row[4], document=json.loads(row[5]))


def _storable(record_id: int) -> bool:
    """Whether SQLite can hold the id at all (a signed 64-bit integer, ids from 1): any other is
    no record, not an error (an id of 2**63 in a URL is a 404)."""
    return 0 < record_id < 1 << 63
