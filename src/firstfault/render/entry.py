"""One knowledge-base entry -> terminal text, Markdown or JSON. The public door to entry rendering.

    render_entry(entry, "terminal", color=True, width=100)
    fill_placeholders("rank {rank} on {host}", {"rank": 3})   # -> "rank 3 on <host>"

No I/O: callers print or serve what these return.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from ..kb.schema import FIELDS
from ..model import Entry
from .entry_markdown import render_entry_markdown
from .entry_sections import REQUIRED_SECTIONS, fill_placeholders
from .entry_terminal import render_entry_terminal, use_color

__all__ = [
    "ENTRY_FORMATS", "REQUIRED_SECTIONS", "entry_to_dict", "fill_placeholders", "render_entry",
    "render_entry_json", "render_entry_markdown", "render_entry_terminal", "use_color",
]

ENTRY_FORMATS = ("terminal", "markdown", "json")

# The documented order of the keys inside list items (docs/knowledge-base.md), so JSON is stable.
ITEM_KEYS = {
    "symptoms": ("text", "meaning"),
    "confirm": ("check", "command"),
    "verify": ("check", "command"),
    "fix": ("title", "stack", "why", "steps", "command", "env", "config", "code"),
    "faq": ("q", "a"),
    "references": ("title", "url"),
    "verified": ("by", "scenario"),
    "diagnostics": ("tool", "use"),
    "signatures": ("name", "role", "weight", "pattern", "prefilter", "message", "examples", "near_misses"),
}


def entry_to_dict(entry: Entry) -> dict:
    """The entry's data as plain JSON-ready values, keys in the documented order."""
    return {key: _ordered(entry.data[key], ITEM_KEYS.get(key, ())) for key in FIELDS if key in entry.data}


def _ordered(value, keys: tuple[str, ...]):
    if isinstance(value, list):
        return [_ordered(item, keys) for item in value]
    if isinstance(value, dict):
        known = [key for key in keys if key in value]
        rest = [key for key in value if key not in keys]  # e.g. env variable names: as written
        return {key: _ordered(value[key], ()) for key in known + rest}
    return value


def render_entry_json(entry: Entry) -> str:
    return json.dumps(entry_to_dict(entry), indent=2, ensure_ascii=False, default=str) + "\n"


def render_entry(
    entry: Entry,
    fmt: str = "terminal",
    *,
    values: Mapping[str, object] | None = None,
    color: bool = False,
    width: int = 100,
    related_titles: Mapping[str, str] | None = None,
) -> str:
    """`entry` in `fmt` (one of ENTRY_FORMATS). JSON is the raw data: no placeholders filled."""
    if fmt == "terminal":
        return render_entry_terminal(entry, values=values, color=color, width=width, related_titles=related_titles)
    if fmt == "markdown":
        return render_entry_markdown(entry, values=values, related_titles=related_titles)
    if fmt == "json":
        return render_entry_json(entry)
    raise ValueError(f"unknown entry format {fmt!r}; choose from {', '.join(ENTRY_FORMATS)}")
