"""What the knowledge base says between entries, as the correlator needs it: which failure
explains which (a device-side assert explains its peers' timeouts), which class each entry
specialises, and what an on-call engineer should do with the job."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..kb.schema import DEFAULT_ACTION


@dataclass(frozen=True)
class Relations:
    explains: dict = field(default_factory=dict)  # entry id -> frozenset of ids it explains
    core_of: dict = field(default_factory=dict)  # entry id -> its core class (itself for a class)
    actions: dict = field(default_factory=dict)  # entry id -> restart | exclude-host-and-restart | fix-and-rerun
    titles: dict = field(default_factory=dict)
    categories: dict = field(default_factory=dict)  # entry id -> its category (device, network, ...)

    def category(self, entry_id: str) -> str:
        return self.categories.get(entry_id, "")

    def core(self, entry_id: str) -> str:
        return self.core_of.get(entry_id, entry_id)

    def explained_by(self, cause: str, effect: str) -> bool:
        """Whether failure `cause` explains failure `effect` (by entry or by core class)."""
        if cause == effect or not cause or not effect:
            return False
        explained = self.explains.get(cause, frozenset()) | self.explains.get(self.core(cause), frozenset())
        return effect in explained or self.core(effect) in explained

    def action(self, entry_id: str) -> str:
        return self.actions.get(entry_id) or self.actions.get(self.core(entry_id)) or DEFAULT_ACTION


@lru_cache(maxsize=4)
def relations_of(kb) -> Relations:
    return Relations(
        explains={entry.id: frozenset(entry.get("explains") or ()) for entry in kb.entries},
        core_of={entry.id: entry.get("core_class") or entry.id for entry in kb.entries},
        actions={entry.id: entry.get("action") for entry in kb.entries if entry.get("action")},
        titles={entry.id: entry.title for entry in kb.entries},
        categories={entry.id: entry.category for entry in kb.entries},
    )
