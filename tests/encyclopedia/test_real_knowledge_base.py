"""Every real entry renders in every format, with every required section (grows with the KB).

Validation itself is `firstfault kb check`'s job; entries it rejects are skipped here.
"""
from __future__ import annotations

import json

import pytest

from firstfault.kb.compare import compare
from firstfault.kb.loader import KnowledgeBase, check_entries
from firstfault.render.entry import REQUIRED_SECTIONS, render_entry
from firstfault.render.entry_compare import COMPARE_FORMATS, render_comparison

ENTRIES, _PROBLEMS = check_entries()
KB = KnowledgeBase(ENTRIES)


def test_the_real_knowledge_base_has_entries():
    assert ENTRIES, "no valid entry in src/firstfault/kb/entries"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry.id)
def test_entry_renders_in_every_format(entry):
    terminal = render_entry(entry, "terminal", width=100)
    markdown = render_entry(entry, "markdown")
    data = json.loads(render_entry(entry, "json"))
    for heading in REQUIRED_SECTIONS:
        assert f"\n{heading}\n" in terminal, f"{entry.id}: terminal lacks {heading}"
        assert f"\n### {heading}\n" in markdown, f"{entry.id}: markdown lacks {heading}"
    assert terminal.startswith(entry.title + "\n")
    assert data["id"] == entry.id and data["signatures"] == json.loads(json.dumps(entry.data["signatures"]))


@pytest.mark.parametrize("category", KB.categories())
@pytest.mark.parametrize("fmt", COMPARE_FORMATS)
def test_every_category_compares(category, fmt):
    text = render_comparison(compare(KB, category), fmt, width=120)
    assert all(entry.id in text for entry in KB.in_category(category))


def test_verification_commands_are_runnable_as_printed():
    """A verification command is one to run, not a sketch: no literal `...` standing for code."""
    from firstfault.kb import load_knowledge_base

    sketches = [(entry.id, item["command"]) for entry in load_knowledge_base().entries
                for item in entry.get("verify") or [] if item.get("command")
                and ("..." in item["command"].split("#")[0] or "…" in item["command"].split("#")[0])]
    assert sketches == []
