"""One entry -> text for a terminal (`firstfault explain ID`). No I/O.

Colour is the caller's decision (`use_color`); prose is wrapped to `width`, log lines and code
never are (they are copied and pasted).
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping

from ..model import Entry
from .entry_sections import (
    Code, FixOption, Header, Item, Link, LogLines, Paragraph, Section, Step, build_sections, entry_header,
    numbered, paragraphs,
)

ANSI = {
    "title": "1", "heading": "1;36", "dim": "2", "literal": "33", "code": "32",
    "critical": "1;31", "high": "31", "medium": "33", "low": "2",
}
INDENT = "  "


def use_color(stream, environ: Mapping[str, str]) -> bool:
    """Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not environ.get("NO_COLOR")


class Style:
    """Wraps text in ANSI codes by role when enabled; the identity otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, role: str, text: str) -> str:
        code = ANSI.get(role)
        if not (self.enabled and code and text):
            return text
        return f"\x1b[{code}m{text}\x1b[0m"


def wrap(text: str, width: int, indent: str = "", rest: str | None = None) -> list[str]:
    """Prose wrapped at `width`: the first line starts with `indent`, later ones with `rest`."""
    rest = indent if rest is None else rest
    lines: list[str] = []
    for number, paragraph in enumerate(paragraphs(text)):
        if number:
            lines.append("")
        lines.extend(textwrap.wrap(
            paragraph, width=max(width, len(indent) + 20),
            initial_indent=rest if number else indent, subsequent_indent=rest,
            break_long_words=False, break_on_hyphens=False,
        ))
    return lines


def render_entry_terminal(
    entry: Entry,
    *,
    values: Mapping[str, object] | None = None,
    color: bool = False,
    width: int = 100,
    related_titles: Mapping[str, str] | None = None,
) -> str:
    """`firstfault explain ID` output, ending with a newline."""
    style = Style(color)
    lines = _header(entry_header(entry), style)
    for section in build_sections(entry, values, related_titles):
        lines.append("")
        lines.extend(_section(section, width, style))
    return "\n".join(lines) + "\n"


def _header(header: Header, style: Style) -> list[str]:
    filed = " · ".join((
        style("literal", header.id), header.category, style(header.severity, header.severity), header.status,
    ))
    lines = [style("title", header.title), filed, style("dim", f"systems: {', '.join(header.systems)}")]
    lines.append(style("dim", f"tags: {', '.join(header.tags)}"))
    if header.redirect_from:
        lines.append(style("dim", f"formerly: {', '.join(header.redirect_from)}"))
    return lines


def render_section(section: Section, width: int, style: Style) -> list[str]:
    """One section: its heading, then its blocks (the diagnosis report shows Fix and Verification so)."""
    return _section(section, width, style)


def _section(section: Section, width: int, style: Style) -> list[str]:
    lines = [style("heading", section.heading)]
    for number, block in numbered(section.blocks):
        lines.extend(_block(block, number, width, style))
    return lines



def _block(block, number: int, width: int, style: Style) -> list[str]:
    if isinstance(block, Paragraph):
        return wrap(block.text, width, INDENT)
    if isinstance(block, LogLines):
        return [style("literal", INDENT * 2 + line) for line in block.lines]
    if isinstance(block, Item):
        return _item(block, width, style)
    if isinstance(block, Step):
        label = f"{INDENT}{number}. "
        return wrap(block.text, width, label, " " * len(label)) + _code(Code(block.command), " " * (len(label) + 2), style)
    if isinstance(block, FixOption):
        return _fix(block, number, width, style)
    if isinstance(block, Link):
        return wrap(block.title, width, INDENT + "• ", INDENT + "  ") + [style("dim", f"{INDENT}  {block.url}")]
    raise TypeError(f"no terminal rendering for {type(block).__name__}")


def _item(item: Item, width: int, style: Style) -> list[str]:
    if item.literal:  # an id or a tool: kept on one line, as typed
        lines = [INDENT + "• " + style("literal", item.text)]
    else:
        lines = wrap(item.text, width, INDENT + "• ", INDENT + "  ")
    return lines + wrap(item.detail, width, INDENT + "  ")


def _fix(option: FixOption, number: int, width: int, style: Style) -> list[str]:
    label = f"{INDENT}{number}. "
    body = " " * len(label)
    lines = [label + style("title", option.title) + " " + style("dim", f"[{option.stack}]")]
    lines.extend(wrap(f"Why: {option.why}", width, body))
    for step in option.steps:
        lines.extend(wrap(step, width, body + "• ", body + "  "))
    for code in option.blocks:
        lines.extend(_code(code, body + INDENT, style))
    return lines


def _code(code: Code, indent: str, style: Style) -> list[str]:
    return [style("code", indent + line) if line.strip() else "" for line in code.text.splitlines()]
