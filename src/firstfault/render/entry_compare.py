"""A Comparison (kb.compare) -> terminal table, Markdown table or JSON. No I/O.

Two tables: the entries side by side, numbered; then the tool matrix, one row per tool and one
column per entry number, marked D (helps diagnose it) and/or F (set by one of its fixes).
"""
from __future__ import annotations

import json
from collections.abc import Callable

from ..kb.compare import Comparison, ComparedEntry, ToolRow
from .entry_markdown import code_span, markdown_table, prose
from .entry_sections import fill_placeholders
from .entry_tables import GAP, fit_widths, render_table
from .entry_terminal import Style, wrap

ENTRY_HEADERS = ("#", "entry", "what it really indicates", "message", "tells it apart")
LEGEND = "D: helps diagnose it · F: set by one of its fixes · columns: the entries numbered above"
NO_MARK = "·"
COMPARE_FORMATS = ("terminal", "markdown", "json")


def render_comparison(comparison: Comparison, fmt: str = "terminal", *, width: int = 100, color: bool = False) -> str:
    if fmt == "terminal":
        return render_comparison_terminal(comparison, width=width, color=color)
    if fmt == "markdown":
        return render_comparison_markdown(comparison)
    if fmt == "json":
        return render_comparison_json(comparison)
    raise ValueError(f"unknown comparison format {fmt!r}; choose from {', '.join(COMPARE_FORMATS)}")


def mark(tool: ToolRow, entry_id: str) -> str:
    marks = ("D" if entry_id in tool.diagnose else "") + ("F" if entry_id in tool.fix else "")
    return marks or NO_MARK


def _title(comparison: Comparison) -> str:
    count = len(comparison.entries)
    return f"{comparison.topic}: {count} look-alike {'entry' if count == 1 else 'entries'} compared"


def render_comparison_terminal(comparison: Comparison, *, width: int = 100, color: bool = False) -> str:
    style = Style(color)
    rows = [
        [str(number), f"{item.id}\n{item.title}", fill_placeholders(item.indicates), item.message,
         _apart(item, lambda tool, use: f"• {tool}: {use}")]
        for number, item in enumerate(comparison.entries, start=1)
    ]
    parts = [style("heading", _title(comparison)) + "\n", render_table(ENTRY_HEADERS, rows, width=width, style=style, spaced=True, whole_words=(0, 1))]
    if comparison.tools:
        headers, matrix = _matrix(comparison)
        if fit_widths(headers, matrix, width - len(GAP) * (len(headers) - 1), range(1, len(headers))) is None:
            parts.append(style("heading", "Tools") + "\n" + _tool_lines(comparison, width, style))
        else:
            parts.append(style("heading", "Tools") + "\n" + "\n".join(style("dim", line) for line in wrap(LEGEND, width)) + "\n")
            parts.append(render_table(
                headers, matrix, width=width, style=style, roles={0: lambda value: "literal"},
                whole_words=range(1, len(headers)),
            ))
    return "\n".join(parts)


def _tool_lines(comparison: Comparison, width: int, style: Style) -> str:
    """The tool matrix for a terminal too narrow for it: one line per tool, naming the entries
    (by their number above) it helps diagnose and those whose fixes set it."""
    numbers = {item.id: str(number) for number, item in enumerate(comparison.entries, start=1)}
    lines = []
    for tool in comparison.tools:
        uses = []
        if tool.diagnose:
            uses.append("diagnoses " + ", ".join(numbers[entry] for entry in tool.diagnose if entry in numbers))
        if tool.fix:
            uses.append("set by the fixes of " + ", ".join(numbers[entry] for entry in tool.fix if entry in numbers))
        lines.extend(wrap(f"{tool.name}: {'; '.join(uses)}", width, "  ", "      "))
    return "\n".join(lines) + "\n"


def render_comparison_markdown(comparison: Comparison) -> str:
    rows = [
        [str(number), f"{code_span(item.id)}\n{prose(item.title)}", prose(fill_placeholders(item.indicates)),
         code_span(item.message), _apart(item, lambda tool, use: f"{code_span(tool)}: {prose(use)}")]
        for number, item in enumerate(comparison.entries, start=1)
    ]
    parts = [f"## {_title(comparison)}", markdown_table(ENTRY_HEADERS, rows)]
    if comparison.tools:
        headers, matrix = _matrix(comparison)
        matrix = [[code_span(row[0]), *row[1:]] for row in matrix]
        parts += ["### Tools", LEGEND, markdown_table(headers, matrix)]
    return "\n\n".join(parts) + "\n"


def render_comparison_json(comparison: Comparison) -> str:
    document = {
        "topic": comparison.topic,
        "entries": [
            {
                "id": item.id, "title": item.title, "indicates": item.indicates, "message": item.message,
                "diagnostics": [{"tool": tool, "use": use} for tool, use in item.diagnostics],
            }
            for item in comparison.entries
        ],
        "tools": [
            {"tool": tool.name, "kind": tool.kind, "diagnose": list(tool.diagnose), "fix": list(tool.fix)}
            for tool in comparison.tools
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _apart(item: ComparedEntry, line: Callable[[str, str], str]) -> str:
    """The entry's diagnostics, one `line(tool, use)` each."""
    if not item.diagnostics:
        return "—"
    return "\n".join(line(tool, fill_placeholders(use)) for tool, use in item.diagnostics)


def _matrix(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    headers = ["tool", *(str(number) for number in range(1, len(comparison.entries) + 1))]
    rows = [[tool.name, *(mark(tool, item.id) for item in comparison.entries)] for tool in comparison.tools]
    return headers, rows
