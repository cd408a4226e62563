"""A team's alerts on the server: webhooks called when one of its saved diagnoses is a failure
(every failure, or only those of a fingerprint it follows). Posted in the background, so that a
slow receiver never holds a request; a failed delivery is logged by its status only.

    rules = alert_rules(history, team)
    notify(history, team, document, entry_id)     # after a save
"""
from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request

log = logging.getLogger("firstfault.web")
TIMEOUT_SECONDS = 5.0


def add_rule(history, team: str, webhook: str, fingerprint: str | None) -> int:
    cursor = history.execute("INSERT INTO alerts (team, webhook, fingerprint, created) VALUES (?, ?, ?, ?)",
                             (team, webhook, fingerprint or None, time.time()))
    return int(cursor.lastrowid)


def alert_rules(history, team: str | None) -> list[dict]:
    """The rules of one team (None: every team's, for an admin)."""
    rows = history.execute("SELECT id, team, webhook, fingerprint, created FROM alerts WHERE ? IS NULL OR team = ? ORDER BY id",
                           (team, team)).fetchall()
    return [{"id": rule_id, "team": owner, "webhook": webhook, "fingerprint": fingerprint, "created": created}
            for rule_id, owner, webhook, fingerprint, created in rows]


def delete_rule(history, rule_id: int, team: str | None) -> bool:
    return history.execute("DELETE FROM alerts WHERE id = ? AND (? IS NULL OR team = ?)", (rule_id, team, team)).rowcount > 0


def notify(history, team: str, document: dict, entry_id: int, title: str, seen: str = "") -> int:
    """Call the team's webhooks that this saved diagnosis matches; how many were called."""
    from ..fleet.fingerprint import contract_fingerprint

    if document.get("status") == "healthy":
        return 0
    fingerprint = contract_fingerprint(document)[0]
    rules = [rule for rule in alert_rules(history, team) if rule["fingerprint"] in (None, fingerprint)]
    body = json.dumps({"text": f"*firstfault* [{team}] {title}" + (f" ({seen})" if seen else ""),
                       "team": team, "entry": entry_id, "fingerprint": fingerprint, "status": document.get("status"),
                       "failure_id": (document.get("primary") or {}).get("failure_id")}).encode()
    for rule in rules:
        threading.Thread(target=_post, args=(rule["webhook"], body), daemon=True, name="firstfault-team-alert").start()
    return len(rules)


def _post(url: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (the team's own URL)
            response.read(1024)
    except (OSError, urllib.error.URLError, ValueError) as exc:
        log.warning("team alert not delivered: %s", type(exc).__name__)
