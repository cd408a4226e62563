"""`--format markdown` is what people paste into issues: rendered by a CommonMark parser
(markdown-it-py), every multi-line code block must arrive whole, and a command that belongs to
a numbered step must stay inside that step's list item."""
from __future__ import annotations

import json

import pytest

markdown_it = pytest.importorskip("markdown_it", reason="pip install 'firstfault[test]' (markdown-it-py)")

from firstfault.render.entry import render_entry  # noqa: E402
from firstfault.render.entry_sections import FIX, VERIFY, FixOption, Step, build_sections  # noqa: E402

from .conftest import FIRST_USER, run_cli  # noqa: E402


def fences(markdown: str) -> list[tuple[str, bool]]:
    """(content, inside a list item) of every fenced code block, as CommonMark parses them."""
    tokens = markdown_it.MarkdownIt("commonmark").parse(markdown)
    depth, found = 0, []
    for token in tokens:
        if token.type == "list_item_open":
            depth += 1
        elif token.type == "list_item_close":
            depth -= 1
        elif token.type == "fence":
            found.append((token.content.rstrip("\n"), depth > 0))
    return found


def expected_code(sections) -> tuple[list[str], list[str]]:
    """(code of the fixes, commands of numbered steps) that the Markdown must carry whole."""
    fix_code, step_commands = [], []
    for section in sections:
        for block in section.blocks:
            if isinstance(block, FixOption):
                fix_code += [code.text for code in block.blocks]
            elif isinstance(block, Step) and block.command:
                step_commands.append(block.command)
    return fix_code, step_commands


def check(markdown: str, sections) -> None:
    parsed = fences(markdown)
    fix_code, step_commands = expected_code(sections)
    contents = [content for content, _ in parsed]
    for code in fix_code:
        assert code in contents, f"code block broken by the Markdown:\n{code}\n--- parsed as ---\n{contents}"
    for command in step_commands:
        assert (command, True) in parsed, f"step command not whole inside its list item:\n{command}"


def test_diagnosis_markdown_keeps_multi_line_fix_code_whole(kb):
    """A real diagnosis whose fixes carry multi-line code: every fix the report shows (by its
    title) has each of its code and config blocks whole in one fenced block."""
    log = FIRST_USER / "single-gpu3.txt"
    markdown = run_cli("diagnose", str(log), "--format", "markdown").stdout.decode()
    contract = json.loads(run_cli("diagnose", str(log), "--format", "json").stdout)
    entry = kb.get(contract["primary"]["entry_id"])
    shown = [item for item in entry.get("fix") or () if item["title"] in markdown]
    code = [str(item[key]).rstrip("\n") for item in shown for key in ("code", "config") if item.get(key)]
    assert any("\n" in text for text in code), "the case must show a multi-line fix"
    contents = [content for content, _ in fences(markdown)]
    for text in code:
        assert text in contents, f"code block broken by the Markdown:\n{text}\n--- parsed as ---\n{contents}"


def test_every_entry_markdown_keeps_its_code_whole(kb):
    for entry in kb.entries:
        check(render_entry(entry, "markdown"), build_sections(entry))


def test_a_tenth_step_keeps_its_command_in_its_item(kb):
    """`10. ` is four characters wide: the command must be indented four spaces, not three."""
    from firstfault.render.entry_markdown import render_section
    from firstfault.render.entry_sections import Section

    steps = tuple(Step(f"check {n}", f"echo {n}\necho again {n}") for n in range(1, 12))
    section = Section(VERIFY, steps)
    check(render_section(section), [section])
