"""Past diagnoses in SQLite: the masked diagnosis (its JSON contract) and a title, never a raw log.

One writer: every write goes through one lock and one short transaction. The schema evolves by
numbered migrations recorded in `schema_version`; a database from a newer firstfault is refused
rather than guessed at.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
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
    # 2: one entry per distinct diagnosis, seen N times; its fingerprint (class + masked first-
    # fault line) to say when a failure was seen before; the hosts it started on; who recorded it
    """
    ALTER TABLE diagnosis ADD COLUMN fingerprint TEXT;
    ALTER TABLE diagnosis ADD COLUMN digest TEXT;
    ALTER TABLE diagnosis ADD COLUMN seen INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE diagnosis ADD COLUMN last_seen REAL;
    ALTER TABLE diagnosis ADD COLUMN hosts TEXT NOT NULL DEFAULT '';
    ALTER TABLE diagnosis ADD COLUMN origin TEXT NOT NULL DEFAULT 'web';
    CREATE INDEX diagnosis_fingerprint ON diagnosis (fingerprint);
    CREATE INDEX diagnosis_digest ON diagnosis (digest);
    """,
    # 3: which job a diagnosis is of (the folder its logs share), to compare with the job's last
    # healthy run
    """
    ALTER TABLE diagnosis ADD COLUMN job TEXT NOT NULL DEFAULT '';
    CREATE INDEX diagnosis_job ON diagnosis (job);
    """,
    # 4: a team server (web/auth.py): whose each diagnosis is; API tokens (scrypt hashes, never
    # the tokens), the sessions they sign in, and the audit log of who did what
    """
    ALTER TABLE diagnosis ADD COLUMN team TEXT NOT NULL DEFAULT '';
    CREATE INDEX diagnosis_team ON diagnosis (team);
    CREATE TABLE tokens (name TEXT PRIMARY KEY, lookup TEXT NOT NULL UNIQUE, team TEXT NOT NULL,
                         admin INTEGER NOT NULL, salt BLOB NOT NULL, hash BLOB NOT NULL,
                         created REAL NOT NULL, revoked REAL);
    CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL, expires REAL NOT NULL);
    CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, who TEXT NOT NULL,
                        team TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL DEFAULT '');
    """,
    # 5: a team's alerts: a webhook for its failures (all, or those of one fingerprint)
    """
    CREATE TABLE alerts (id INTEGER PRIMARY KEY AUTOINCREMENT, team TEXT NOT NULL, webhook TEXT NOT NULL,
                         fingerprint TEXT, created REAL NOT NULL);
    CREATE INDEX alerts_team ON alerts (team);
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
    seen: int = 1
    last_seen: float | None = None
    hosts: tuple[str, ...] = ()
    origin: str = "web"
    fingerprint: str | None = None

    def summary(self) -> dict:
        return {"id": self.id, "created": self.created, "title": self.title, "status": self.status,
                "failure_id": self.failure_id, "seen": self.seen, "last_seen": self.last_seen or self.created,
                "hosts": list(self.hosts), "origin": self.origin}


@dataclass(frozen=True)
class Recurrence:
    """Earlier diagnoses with the same fingerprint: how many times, since when, on which hosts."""

    times: int
    first_seen: float
    hosts: dict  # host -> times

    def sentence(self) -> str:
        """`3rd time since 2026-11-28, twice on gpu-b07` (the diagnosis at hand counted)."""
        since = time.strftime("%Y-%m-%d", time.gmtime(self.first_seen))
        text = f"{_ordinal(self.times + 1)} time since {since}"
        if self.hosts:
            host, times = max(self.hosts.items(), key=lambda item: (item[1], item[0]))
            text += f", {_times(times)} on {host}"
        return text


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _times(number: int) -> str:
    return {1: "once", 2: "twice"}.get(number, f"{number} times")


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

    def add(self, document: dict, title: str, origin: str = "web", team: str = "") -> int:
        """Store a masked diagnosis document (the contract); return its id. The same document
        again (identical logs diagnosed again) is the same entry, seen once more."""
        from .fleet.fingerprint import contract_fingerprint

        primary = document.get("primary") or {}
        text = json.dumps(_stored(document), ensure_ascii=False, sort_keys=True)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        now = time.time()
        with self._lock:
            known = self._db.execute("SELECT id FROM diagnosis WHERE digest = ? AND team = ?", (digest, team)).fetchone()
            if known:
                self._db.execute("UPDATE diagnosis SET seen = seen + 1, last_seen = ? WHERE id = ?", (now, known[0]))
                return int(known[0])
            cursor = self._db.execute(
                "INSERT INTO diagnosis (created, title, status, failure_id, document, fingerprint, digest, last_seen, hosts, origin,"
                " job, team) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (now, title[:200], document.get("status", "unknown"), primary.get("failure_id"), text,
                 contract_fingerprint(document)[0], digest, now, ",".join(_started_on(document)), origin, job_of(document),
                 team),
            )
            return int(cursor.lastrowid)

    def recurrence(self, document: dict, before: int | None = None, team: str | None = None) -> Recurrence | None:
        """Earlier diagnoses of the same failure (same fingerprint) than entry `before` (or all)."""
        from .fleet.fingerprint import contract_fingerprint

        fingerprint = contract_fingerprint(document)[0]
        if fingerprint is None:
            return None
        with self._lock:  # what the sentence needs, not the documents
            rows = self._db.execute(
                f"SELECT created, seen, hosts FROM diagnosis WHERE fingerprint = ? AND id != ?{_TEAM}",
                (fingerprint, before or 0, *_of(team))).fetchall()
        if not rows:
            return None
        hosts: dict = {}
        for _, seen, named in rows:
            for host in filter(None, named.split(",")):
                hosts[host] = hosts.get(host, 0) + seen
        return Recurrence(sum(seen for _, seen, _ in rows), min(created for created, _, _ in rows), hosts)

    def list(self, limit: int = 200, team: str | None = None) -> list[Record]:
        return self.search(limit=limit, team=team)

    def search(self, text: str = "", since: float | None = None, host: str = "", failure_class: str = "",
               limit: int = 200, team: str | None = None) -> list[Record]:
        """Newest first: entries whose title or document holds `text`, seen since `since`, that
        started on `host`, of class `failure_class` (each optional)."""
        clauses, values = [], []
        if text:
            clauses.append("(title LIKE ? ESCAPE '\\' OR document LIKE ? ESCAPE '\\')")
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            values += [pattern, pattern]
        if since is not None:
            clauses.append("COALESCE(last_seen, created) >= ?")
            values.append(since)
        if host:
            clauses.append("(',' || hosts || ',') LIKE ? ESCAPE '\\'")
            values.append("%," + host.replace("%", "\\%").replace("_", "\\_") + ",%")
        if failure_class:
            clauses.append("failure_id = ?")
            values.append(failure_class)
        if team is not None:
            clauses.append("team = ?")
            values.append(team)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM diagnosis {where} ORDER BY id DESC LIMIT ?",
                                    (*values, limit)).fetchall()
        return [self._record(row) for row in rows]

    def last_healthy(self, document: dict, before: int | None = None, team: str | None = None) -> Record | None:
        """The latest healthy diagnosis of the same job (the folder its logs share), other than `before`."""
        job = job_of(document)
        if not job:
            return None
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM diagnosis WHERE job = ? AND status = 'healthy' AND id != ?{_TEAM}"
                " ORDER BY COALESCE(last_seen, created) DESC LIMIT 1", (job, before or 0, *_of(team))).fetchone()
        return self._record(row) if row else None

    def last(self, team: str | None = None) -> Record | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM diagnosis WHERE 1 = 1{_TEAM} "
                                   "ORDER BY COALESCE(last_seen, created) DESC, id DESC LIMIT 1", _of(team)).fetchone()
        return self._record(row) if row else None

    def get(self, record_id: int, team: str | None = None) -> Record | None:
        """Entry `record_id`; with `team`, only if it is that team's (None: any team's)."""
        if not _storable(record_id):
            return None
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM diagnosis WHERE id = ?{_TEAM}", (record_id, *_of(team))).fetchone()
        return self._record(row) if row else None

    def delete(self, record_id: int, team: str | None = None) -> bool:
        if not _storable(record_id):
            return False
        with self._lock:
            cursor = self._db.execute(f"DELETE FROM diagnosis WHERE id = ?{_TEAM}", (record_id, *_of(team)))
        return cursor.rowcount > 0

    def execute(self, statement: str, values: tuple = ()):
        """One statement under the writer's lock (web/auth.py keeps its tables here)."""
        with self._lock:
            return self._db.execute(statement, values)

    def forget(self, record_id: int, team: str | None = None) -> bool:
        """Delete an entry and rewrite the file, so that none of its bytes stay on disk."""
        deleted = self.delete(record_id, team)
        if deleted:
            with self._lock:
                self._db.execute("VACUUM")
        return deleted

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def _record(row) -> Record:
        return Record(id=row[0], created=row[1], title=row[2], status=row[3], failure_id=row[4], document=json.loads(row[5]),
                      seen=row[6] or 1, last_seen=row[7], hosts=tuple(filter(None, (row[8] or "").split(","))),
                      origin=row[9] or "web", fingerprint=row[10])


_COLUMNS = "id, created, title, status, failure_id, document, seen, last_seen, hosts, origin, fingerprint"
_TEAM = " AND (? IS NULL OR team = ?)"  # every query of entries: one team's (a value), or all (None)


def _of(team: str | None) -> tuple:
    return team, team


def _stored(document: dict) -> dict:
    """What identifies a diagnosis: the document without what this run adds about the history."""
    return {key: value for key, value in document.items() if key != "history"}


def title_of(document: dict, kb=None) -> str:
    """A short line for the history list: the failure, where it started, what was read."""
    primary = document.get("primary")
    files = (document.get("inputs") or {}).get("files") or []
    read = files[0] if len(files) == 1 else f"{len(files)} files"
    if not primary:
        return f"{'no failure found' if document.get('status') == 'healthy' else 'unexplained failure'} · {read}"
    failure = primary.get("entry_id") or primary.get("failure_id") or "failure"
    if kb is not None and failure in kb:
        failure = kb.get(failure).title
    where = primary.get("initiating") or {}
    at = f" on rank {where['rank']}" if where.get("rank") is not None else (f" on {where['host']}" if where.get("host") else "")
    return f"{failure}{at} · {read}"


def job_of(document: dict) -> str:
    """The job a diagnosis is of: the folder its input files share ('' when they share none)."""
    folders = [posixpath.dirname(str(name).replace("\\", "/")) for name in (document.get("inputs") or {}).get("files") or []]
    if not folders or not all(folders):
        return ""
    try:
        return posixpath.commonpath(folders)
    except ValueError:  # absolute and relative names mixed
        return ""


def _started_on(document: dict) -> list[str]:
    """The host the failure started on, else the hosts the logs name."""
    primary = document.get("primary") or {}
    initiating = primary.get("initiating") or document.get("initiating") or {}
    if initiating.get("host"):
        return [initiating["host"]]
    return [str(host) for host in (document.get("inputs") or {}).get("hosts") or []][:20]


def _storable(record_id: int) -> bool:
    """Whether SQLite can hold the id at all (a signed 64-bit integer, ids from 1): any other is
    no record, not an error (an id of 2**63 in a URL is a 404)."""
    return 0 < record_id < 1 << 63
