"""Who is asking: API tokens (stored hashed with scrypt) and the sessions a token signs in.

    store = TokenStore(history)                  # the server's SQLite file (--db)
    token = store.add("ci-bot", team="vision")   # printed once, never stored in clear
    identity = store.identify(token)             # Identity(name, team, admin) or None

A token reads `ff1.<lookup>.<secret>`: the lookup finds its row, the secret is checked against an
scrypt hash (memory-hard; a stolen database does not give the tokens). A revoked token is refused
at its next request: each request reads the row again, only the scrypt check is remembered.
Sessions (the web pages' cookie) are random ids stored hashed (SHA-256), with an expiry.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass

from ..errors import UsageError

PREFIX = "ff1"
SCRYPT = {"n": 1 << 14, "r": 8, "p": 1, "dklen": 32}  # about 16 MiB and 30-60 ms per check
SESSION_SECONDS = 12 * 3600
SESSION_COOKIE = "ff_session"
NAME_CHARACTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@")


@dataclass(frozen=True)
class Identity:
    name: str
    team: str
    admin: bool = False

    def sees(self, team: str) -> bool:
        return self.admin or team == self.team


LOCAL = Identity("local", "", admin=True)  # loopback without tokens: the user of this machine


class TokenStore:
    """Tokens, sessions and the audit log, in the history's database."""

    def __init__(self, history) -> None:
        self.history = history
        self._checked: dict[str, float] = {}  # sha256(token) -> when its scrypt check passed
        self._lock = threading.Lock()

    # -- tokens ------------------------------------------------------------------------------------

    def add(self, name: str, team: str, admin: bool = False) -> str:
        _check_name(name, "name")
        _check_name(team, "team")
        lookup, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        try:
            self.history.execute(
                "INSERT INTO tokens (name, lookup, team, admin, salt, hash, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, lookup, team, int(admin), salt, _scrypt(secret, salt), time.time()))
        except sqlite3.IntegrityError:  # the name is taken
            raise UsageError(f"a token called {name!r} exists", "revoke it first, or choose another name") from None
        self.audit(Identity(name, team, admin), "token-created", name)
        return f"{PREFIX}.{lookup}.{secret}"

    def revoke(self, name: str) -> bool:
        changed = self.history.execute("UPDATE tokens SET revoked = ? WHERE name = ? AND revoked IS NULL",
                                       (time.time(), name)).rowcount
        if changed:
            self.history.execute("DELETE FROM sessions WHERE name = ?", (name,))
            self.audit(Identity(name, self.team_of(name)), "token-revoked", name)
        return bool(changed)

    def team_of(self, name: str) -> str:
        row = self.history.execute("SELECT team FROM tokens WHERE name = ?", (name,)).fetchone()
        return row[0] if row else ""

    def list(self) -> list[dict]:
        rows = self.history.execute("SELECT name, team, admin, created, revoked FROM tokens ORDER BY created").fetchall()
        return [{"name": name, "team": team, "admin": bool(admin), "created": created, "revoked": revoked}
                for name, team, admin, created, revoked in rows]

    def active(self) -> bool:
        """Whether any token can sign in (the server then requires one)."""
        return self.history.execute("SELECT 1 FROM tokens WHERE revoked IS NULL LIMIT 1").fetchone() is not None

    def identify(self, token: str) -> Identity | None:
        parts = token.strip().split(".")
        if len(parts) != 3 or parts[0] != PREFIX or len(token) > 200:
            return None
        row = self.history.execute("SELECT name, team, admin, salt, hash FROM tokens WHERE lookup = ? AND revoked IS NULL",
                                   (parts[1],)).fetchone()
        if row is None:
            return None
        name, team, admin, salt, stored = row
        key = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            known = key in self._checked
        if not known:
            if not hmac.compare_digest(_scrypt(parts[2], salt), stored):
                return None
            with self._lock:
                self._checked[key] = time.time()
        return Identity(name, team, bool(admin))

    # -- sessions ----------------------------------------------------------------------------------

    def open_session(self, identity: Identity) -> str:
        session = secrets.token_urlsafe(32)
        self.history.execute("INSERT INTO sessions (id, name, expires) VALUES (?, ?, ?)",
                             (_digest(session), identity.name, time.time() + SESSION_SECONDS))
        self.audit(identity, "signed-in")
        return session

    def session(self, session: str) -> Identity | None:
        row = self.history.execute(
            "SELECT tokens.name, tokens.team, tokens.admin FROM sessions JOIN tokens ON tokens.name = sessions.name "
            "WHERE sessions.id = ? AND sessions.expires > ? AND tokens.revoked IS NULL",
            (_digest(session), time.time())).fetchone()
        return Identity(row[0], row[1], bool(row[2])) if row else None

    def close_session(self, session: str) -> None:
        self.history.execute("DELETE FROM sessions WHERE id = ?", (_digest(session),))

    # -- audit -------------------------------------------------------------------------------------

    def audit(self, identity: Identity, action: str, target: str = "") -> None:
        from ..mask import mask_secrets

        self.history.execute("INSERT INTO audit (at, who, team, action, target) VALUES (?, ?, ?, ?, ?)",
                             (time.time(), identity.name, identity.team, action, mask_secrets(str(target))[:300]))

    def prune_audit(self, days: float) -> int:
        """Drop audit rows older than `days` (the server's --audit-days); how many went."""
        return self.history.execute("DELETE FROM audit WHERE at < ?", (time.time() - days * 86400,)).rowcount

    def audit_log(self, limit: int = 500) -> list[dict]:
        rows = self.history.execute("SELECT at, who, team, action, target FROM audit ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [{"at": at, "who": who, "team": team, "action": action, "target": target} for at, who, team, action, target in rows]

    def diagnoses_today(self, identity: Identity) -> int:
        return self.history.execute("SELECT COUNT(*) FROM audit WHERE who = ? AND action = 'diagnosed' AND at > ?",
                                    (identity.name, time.time() - 86400)).fetchone()[0]


def _scrypt(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, maxmem=64 * 1024 * 1024, **SCRYPT)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _check_name(value: str, what: str) -> None:
    if not value or len(value) > 64 or not set(value) <= NAME_CHARACTERS:
        raise UsageError(f"{what} {value!r} is not a name", f"a {what} is 1-64 letters, digits, '.', '_', '-' or '@'")


@dataclass(frozen=True)
class TrustedProxy:
    """A proxy in front that signs users in (oauth2-proxy, Pomerium, a cloud access proxy): its
    user header names who asks, its team header (or the mapping file) the team. Headers from any
    other address are ignored (anyone can send them)."""

    user_header: str
    addresses: tuple[str, ...]
    team_header: str = ""
    teams: dict = None  # user -> team (a mapping file), when no team header
    admin_teams: tuple[str, ...] = ()

    def identity(self, request) -> Identity | None:
        client = request.client.host if request.client else ""
        if client not in self.addresses:
            return None
        user = (request.headers.get(self.user_header) or "").strip()
        if not user or len(user) > 200:
            return None
        team = (request.headers.get(self.team_header) or "").split(",")[0].strip() if self.team_header else ""
        team = team or (self.teams or {}).get(user, "")
        if not team:
            return None  # a user with no team sees nothing: refused as not signed in
        return Identity(user, team, admin=team in self.admin_teams)


def load_team_map(path: str) -> dict:
    """`user team` per line (# comments): who belongs to which team, for a proxy with no team header."""
    teams = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read the team map {path}: {exc.strerror}", "one `user team` pair per line") from None
    for number, line in enumerate(lines, start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2:
            raise UsageError(f"{path}:{number}: expected `user team`, got {line.strip()!r}", "one pair per line")
        teams[words[0]] = words[1]
    return teams


class TeamHistory:
    """The history as one identity sees it: its team's entries, an admin's all of them. Every
    route reaches the history through `team_history(request)`, so no route can read another
    team's entries by forgetting a filter."""

    def __init__(self, history, identity: Identity) -> None:
        self.history = history
        self.identity = identity
        self.team = None if identity.admin else identity.team  # None: every team's
        self.path = history.path

    def add(self, document: dict, title: str, origin: str = "web") -> int:
        return self.history.add(document, title, origin, team=self.identity.team)

    def list(self, limit: int = 200):
        return self.history.list(limit, team=self.team)

    def get(self, record_id: int):
        return self.history.get(record_id, team=self.team)

    def delete(self, record_id: int) -> bool:
        return self.history.delete(record_id, team=self.team)

    def recurrence(self, document: dict, before: int | None = None):
        return self.history.recurrence(document, before, team=self.team)

    def last_healthy(self, document: dict, before: int | None = None):
        return self.history.last_healthy(document, before, team=self.team)


def identity_of(request) -> Identity:
    """Who sent the request (set by the app's Guard for every request; LOCAL on loopback)."""
    return getattr(request.state, "identity", None) or LOCAL


def team_history(request) -> TeamHistory | None:
    """The history this request may see, or None when the server keeps none."""
    history = request.app.state.history
    return TeamHistory(history, identity_of(request)) if history is not None else None


def audit(request, action: str, target: str = "") -> None:
    store = getattr(request.app.state, "auth", None)
    if store is not None:
        store.audit(identity_of(request), action, target)


def required_history(request) -> TeamHistory:
    """team_history, or a 404 that says the history is off."""
    from .limits import InputRejected

    history = team_history(request)
    if history is None:
        raise InputRejected(404, "history_off", "the history is off on this server", "start it without --no-history")
    return history
