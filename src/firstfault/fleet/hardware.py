"""Which failures a host can be blamed for, and how much each weighs: the one place that says so,
read from the knowledge base, never from a list of our own.

Every entry says what to do with a failed job (`action`, the same field the diagnosis contract
carries; the engine's `relations.action` falls back to the entry's core class, then to
`fix-and-rerun`):
- `exclude-host-and-restart` -- the host's hardware (a GPU fallen off the bus, ECC errors,
  NVLink, GSP firmware, an InfiniBand port, its driver state): weight 1;
- `restart` in the `device` or `network` categories -- a transient fault of the host's hardware
  or fabric (InfiniBand retries exhausted): one is a restart, many on one host are a pattern,
  so weight 0.5;
- everything else -- code, data, configuration, framework, numerics, memory a job asked for,
  and transient events that are nobody's host (a preemption): weight 0, never blamed on a host.
A test checks the outcome against the knowledge base (hardware entries weigh 1, no entry of a
code-side category weighs anything).
"""
from __future__ import annotations

from functools import lru_cache

from ..correlate.rules.action import EXCLUDE as EXCLUDE_HOST

HARDWARE = 1.0
TRANSIENT_HARDWARE = 0.5
RESTART = "restart"
HOST_CATEGORIES = ("device", "network")


@lru_cache(maxsize=4)
def host_fault_weights(kb=None) -> dict[str, float]:
    """Entry id -> weight, for every entry that counts against a host (the others weigh 0)."""
    from ..correlate.relations import relations_of
    from ..kb import load_knowledge_base

    kb = kb or load_knowledge_base()
    relations = relations_of(kb)
    weights = {}
    for entry in kb.entries:
        action = relations.action(entry.id)
        if action == EXCLUDE_HOST:
            weights[entry.id] = HARDWARE
        elif action == RESTART and entry.category in HOST_CATEGORIES:
            weights[entry.id] = TRANSIENT_HARDWARE
    return weights


def host_fault_weight(failure_id: str | None, entry_id: str | None, kb=None) -> float:
    """How much a job's failure counts against the host it started on (0: never).

    The more specific entry decides; a failure the knowledge base no longer has is judged by
    its core class."""
    weights = host_fault_weights(kb)
    if entry_id and entry_id in weights:
        return weights[entry_id]
    if entry_id and _known(entry_id, kb):
        return 0.0
    return weights.get(failure_id or "", 0.0)


def _known(entry_id: str, kb) -> bool:
    from ..kb import load_knowledge_base

    return entry_id in (kb or load_knowledge_base())

