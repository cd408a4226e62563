"""One entry -> Markdown, the same sections as the terminal, for pasting into an issue. No I/O."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..model import Entry
from .entry_sections import (
    FixOption, Header, Item, Link, LogLines, Paragraph, Section, Step, build_sections, entry_header,
    numbered, paragraphs,
)

CODE_SPAN = re.compile(r"(`[^`]*`)")


def render_entry_markdown(
    entry: Entry,
    *,
    values: Mapping[str, object] | None = None,
    related_titles: Mapping[str, str] | None = None,
) -> str:
    """The entry as GitHub-flavoured Markdown, ending with a newline."""
    parts = [_header(entry_header(entry))]
    parts.extend(_section(section) for section in build_sections(entry, values, related_titles))
    return "\n\n".join(parts) + "\n"


def code_span(text: str) -> str:
    """`text` as inline code; text that already carries backticks is used as written."""
    return text if "`" in text else f"`{text}`"


def prose(text: str) -> str:
    """Text for Markdown outside code: `<rank>` placeholders and stray angle brackets must not
    turn into HTML tags (GitHub would hide them); code spans are left as written."""
    pieces = CODE_SPAN.split(text)
    return "".join(
        piece if piece.startswith("`") else piece.replace("<", "&lt;").replace(">", "&gt;") for piece in pieces
    )


def fenced(text: str, language: str = "") -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text}\n{fence}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table; pipes are escaped and line breaks become <br>."""
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", "<br>")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines.extend("| " + " | ".join(cell(value) for value in row) + " |" for row in rows)
    return "\n".join(lines)


def _header(header: Header) -> str:
    filed = f"{code_span(header.id)} · {header.category} · severity **{header.severity}** · {header.status}"
    lines = [f"## {prose(header.title)}", "", filed + "  ", f"Systems: {', '.join(header.systems)} · Tags: {', '.join(header.tags)}"]
    if header.redirect_from:
        lines[-1] += "  "
        lines.append(f"Formerly: {', '.join(code_span(old) for old in header.redirect_from)}")
    return "\n".join(lines)


def render_section(section: Section) -> str:
    """One section as Markdown (the diagnosis report shows Fix and Verification so)."""
    return _section(section)


def _section(section: Section) -> str:
    blocks = [_block(block, number) for number, block in numbered(section.blocks)]
    return f"### {section.heading}\n\n" + _join(section.blocks, blocks)


def _join(blocks: Sequence, texts: Sequence[str]) -> str:
    """List items sit on consecutive lines; anything else is its own paragraph."""
    joined = ""
    for index, (block, text) in enumerate(zip(blocks, texts)):
        if index:
            in_list = isinstance(block, (Item, Link)) and isinstance(blocks[index - 1], (Item, Link))
            joined += "\n" if in_list else "\n\n"
        joined += text
    return joined


def _block(block, number: int) -> str:
    if isinstance(block, Paragraph):
        return "\n\n".join(prose(paragraph) for paragraph in paragraphs(block.text))
    if isinstance(block, LogLines):
        return fenced("\n".join(block.lines), "text")
    if isinstance(block, Item):
        text = code_span(block.text) if block.literal else prose(block.text)
        return f"- {text} — {prose(block.detail)}" if block.detail else f"- {text}"
    if isinstance(block, Step):
        # a list item's content starts after `N. `: CommonMark keeps the code block in the item
        # only when it is indented that far (3 spaces for 1-9, 4 from 10)
        command = "\n\n" + indent(fenced(block.command, "bash"), len(f"{number}. ")) if block.command else ""
        return f"{number}. {prose(block.text)}{command}"
    if isinstance(block, FixOption):
        return _fix(block, number)
    if isinstance(block, Link):
        return f"- [{prose(block.title)}]({block.url})"
    raise TypeError(f"no Markdown rendering for {type(block).__name__}")


def _fix(option: FixOption, number: int) -> str:
    parts = [f"#### {number}. {prose(option.title)} ({option.stack})", f"*Why:* {prose(option.why)}"]
    if option.steps:
        parts.append("\n".join(f"- {prose(step)}" for step in option.steps))
    parts.extend(fenced(code.text, code.language) for code in option.blocks)
    return "\n\n".join(parts)


def indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line else line for line in text.splitlines())
