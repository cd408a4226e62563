"""Many entries at once: the terminal table, `firstfault list` and `firstfault search` output. No I/O.

`render_table` fits columns to the terminal width: short columns keep their width, long ones
wrap inside their cells, and a terminal too narrow for the table gets one record per row.
"""
from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence

from ..kb.search import SearchHit
from ..model import Entry
from .entry_sections import fill_placeholders
from .entry_terminal import INDENT, Style, wrap

GAP = "  "
MIN_COLUMN = 20  # a wrapped column narrower than this is hard to read: use records instead


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    width: int,
    style: Style,
    roles: Mapping[int, Callable[[str], str]] | None = None,
    spaced: bool = False,
    whole_words: Sequence[int] = (),
    too_narrow: str = "records",
) -> str:
    """A plain-text table; a cell's "\\n" starts a new paragraph in it (a "• " one hangs).

    `roles` colours a column by its cell values; `spaced` puts a blank line between rows;
    `whole_words` columns (ids) are never narrower than their longest word. When even the
    narrowest columns do not fit, `too_narrow` says what to do: "records" shows each row as
    blocks of `header:` and value, "overflow" keeps the table unwrapped and lets lines run long.
    """
    widths = fit_widths(headers, rows, width - len(GAP) * (len(headers) - 1), whole_words)
    if widths is None and too_narrow == "records":
        return _records(headers, rows, width, style)
    if widths is None:
        widths = fit_widths(headers, rows, sys.maxsize)
    lines = [_join(segments, lambda i, text: style("title", text)) for segments in _row_lines(headers, widths)]
    lines.append(GAP.join("─" * w for w in widths)[:width])
    for number, row in enumerate(rows):
        if spaced and number:
            lines.append("")
        lines.extend(
            _join(segments, lambda i, text: _role(roles, i, row[i], style, text)) for segments in _row_lines(row, widths)
        )
    return "\n".join(lines) + "\n"


def fit_widths(
    headers: Sequence[str], rows: Sequence[Sequence[str]], available: int, whole_words: Sequence[int] = (),
) -> list[int] | None:
    """Column widths that fit `available`, or None when even the narrowest do not.

    Every column starts at its floor; each spare character then goes to the column whose longest
    cell would wrap into the most lines, so the tallest cell shrinks first.
    """
    columns = list(zip(headers, *rows))
    natural = [max(len(line) for cell in column for line in str(cell).split("\n")) for column in columns]
    if sum(natural) <= available:
        return natural
    floor = [
        _longest_word(column) if i in whole_words else min(natural[i], MIN_COLUMN)
        for i, column in enumerate(columns)
    ]
    if sum(floor) > available:
        return None
    need = [max(len(str(cell)) for cell in column) for column in columns]
    widths = list(floor)
    for _ in range(available - sum(floor)):
        growable = [i for i, w in enumerate(widths) if w < natural[i]]
        if not growable:
            break
        tallest = max(growable, key=lambda i: need[i] / widths[i])
        widths[tallest] += 1
    return widths


def _longest_word(cells: Sequence[str]) -> int:
    return max((len(word) for cell in cells for word in str(cell).split()), default=0)


def _row_lines(cells: Sequence[str], widths: Sequence[int]) -> list[list[str]]:
    """The printed lines of one row: each a list of padded segments, one per column."""
    wrapped = [_wrap_cell(cell, width) for cell, width in zip(cells, widths)]
    return [
        [(cell[depth] if depth < len(cell) else "").ljust(width) for cell, width in zip(wrapped, widths)]
        for depth in range(max(len(cell) for cell in wrapped))
    ]


def _records(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, style: Style) -> str:
    """Rows as blocks of `header:` and the indented value: for terminals too narrow for a table."""
    lines = []
    for number, row in enumerate(rows):
        if number:
            lines.append("")
        for header, cell in zip(headers, row):
            lines.append(style("title", f"{header}:"))
            lines.extend(INDENT + line for line in _wrap_cell(cell, width - len(INDENT)))
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _wrap_cell(cell: str, width: int) -> list[str]:
    lines = []
    for paragraph in str(cell).split("\n"):
        hanging = "  " if paragraph.startswith("• ") else ""
        lines.extend(textwrap.wrap(paragraph, width, subsequent_indent=hanging, break_on_hyphens=False) or [""])
    return lines


def _join(segments: list[str], paint: Callable[[int, str], str]) -> str:
    """Segments joined by the gap, without trailing blanks (empty last columns dropped)."""
    segments = list(segments)
    segments[-1] = segments[-1].rstrip()
    while len(segments) > 1 and not segments[-1]:
        segments.pop()
        segments[-1] = segments[-1].rstrip()
    return GAP.join(paint(i, text) for i, text in enumerate(segments))


def _role(roles, column: int, value: str, style: Style, text: str) -> str:
    role = roles.get(column) if roles else None
    return style(role(value), text) if role else text


def entry_row(entry: Entry) -> dict:
    return {"id": entry.id, "category": entry.category, "severity": entry.severity, "status": entry.status, "title": entry.title}


def render_list(entries: Sequence[Entry], fmt: str = "terminal", *, width: int = 100, color: bool = False) -> str:
    """`firstfault list`: id, category, severity, status, title."""
    rows = [entry_row(entry) for entry in entries]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    headers = ("id", "category", "severity", "status", "title")
    if fmt == "markdown":
        from .entry_markdown import markdown_table, prose

        cells = [[f"`{row['id']}`", row["category"], row["severity"], row["status"], prose(row["title"])] for row in rows]
        return markdown_table(headers, cells) + "\n"
    return render_table(
        headers, [[row[key] for key in headers] for row in rows], width=width, style=Style(color),
        roles={0: lambda value: "literal", 2: lambda value: value}, whole_words=range(len(headers) - 1),
        too_narrow="overflow",  # like `pip list`: a long title may run past the edge, the ids stay aligned
    )


def signature_message(hit: SearchHit) -> str:
    """The matched signature's one-line message, filled from what it captured in the query."""
    signature = next((s for s in hit.entry.signatures if s.name == hit.signature), None)
    return fill_placeholders(signature.message, hit.captures) if signature and signature.message else ""


def render_search(hits: Sequence[SearchHit], fmt: str = "terminal", *, width: int = 100, color: bool = False) -> str:
    """`firstfault search`: best first, with why each entry was found."""
    if fmt == "json":
        return json.dumps([_hit_dict(hit) for hit in hits], indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        from .entry_markdown import prose

        return "".join(f"{number}. `{hit.entry.id}` {prose(hit.entry.title)} ({hit.entry.category}, "
                       f"{hit.entry.severity}): {prose(_why(hit))}\n" for number, hit in enumerate(hits, start=1))
    style = Style(color)
    lines = []
    for number, hit in enumerate(hits, start=1):
        entry = hit.entry
        lines.append(f"{number:>2}. {style('literal', entry.id)}  {style('title', entry.title)}  "
                     + style("dim", f"({entry.category}, ") + style(entry.severity, entry.severity) + style("dim", ")"))
        lines.extend(style("dim", line) for line in wrap(_why(hit), width, INDENT * 2))
    return "\n".join(lines) + "\n" if lines else ""


def _why(hit: SearchHit) -> str:
    if hit.signature:
        message = signature_message(hit)
        return f"signature {hit.signature} matches" + (f": {message}" if message else "")
    return "matched: " + ", ".join(hit.terms[:6])


def _hit_dict(hit: SearchHit) -> dict:
    return {
        **entry_row(hit.entry),
        "signature": hit.signature or None,
        "signature_weight": hit.signature_weight,
        "message": signature_message(hit) or None,
        "captures": dict(hit.captures),
        "text_score": hit.text_score,
        "terms": list(hit.terms),
    }
