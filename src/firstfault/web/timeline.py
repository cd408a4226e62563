"""The per-rank timeline as inline SVG, drawn on the server from the document's points.

Ranks are rows (lines without a rank get a row per host or file), time runs left to right (or
the order in the logs when lines carry no time). The first fault is a large red mark with a
dashed line down the whole chart. Every mark is drawn at its own line's time, so collateral can
sit left of the first fault (another host's clock, a time known only to the second, a time carried
from an earlier line); `caption_of` says so whenever the chart shows it, rather than claiming that
everything right of the red mark followed. Colours come from CSS classes, so the page needs no
inline style (the CSP forbids it).
"""
from __future__ import annotations

import re

from markupsafe import Markup, escape

from .report import labels_of

WIDTH = 960
LABEL_WIDTH = 170
RIGHT_PAD = 30
ROW_HEIGHT = 30
TOP = 50
INSET = 18  # marks at the ends of the axis stay clear of the row labels
MAX_ROWS = 64
KIND_ORDER = {"first": 0, "primary": 1, "error": 2, "collateral": 3}


def anchor_id(source: str | None, line: int | None) -> str:
    """The id of an evidence row, shared by the marks that link to it."""
    return "ev-" + re.sub(r"[^A-Za-z0-9_.-]", "_", source or "") + f"-{line}"


def _row_key(point: dict, labels: dict | None = None) -> tuple:
    if point.get("rank") is not None:
        return (0, int(point["rank"]), "")
    source = point.get("source")
    return (1, 0, point.get("host") or (labels or {}).get(source, source) or "?")


def _row_label(key: tuple) -> str:
    return f"rank {key[1]}" if key[0] == 0 else str(key[2])


def _order_key(point: dict) -> tuple:
    return (point["t"] is None, point["t"] or 0.0, point.get("source") or "~", point.get("line") or 0, point.get("rank") or 0)


def _nice_step(span: float) -> float:
    for step in (0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400):
        if span / step <= 8:
            return step
    return span / 8


def _seconds_label(seconds: float) -> str:
    if seconds >= 3600:
        return f"+{seconds / 3600:g}h"
    if seconds >= 60:
        return f"+{seconds / 60:g}min"
    return f"+{seconds:g}s"


def caption_of(document: dict) -> str:
    """What the chart means, true of this chart: the red mark is the first fault; when collateral
    marks lie left of it, the caption says why instead of claiming all that followed is right of it."""
    points = document.get("timeline") or []
    first = next((point for point in points if point.get("kind") == "first"), None)
    if first is None:
        return "What each rank printed and when."
    earlier = [point for point in points if point.get("kind") == "collateral" and point.get("t") is not None
               and first.get("t") is not None and point["t"] < first["t"]]
    if not earlier:
        return ("What each rank printed and when. The red mark is where the failure started; everything "
                "to its right followed from it.")
    count = len(earlier)
    return (f"What each rank printed and when. The red mark is where the failure started. {count} collateral "
            f"mark{'s' if count != 1 else ''} lie{'s' if count == 1 else ''} left of it: "
            f"{'their lines carry' if count != 1 else 'its line carries'} an earlier time (another host's clock, "
            "a time known only to the second, or one carried from an earlier line), yet the engine judged "
            f"{'them consequences' if count != 1 else 'it a consequence'} of the first fault, as the collateral list below says.")


def render_timeline(document: dict) -> Markup:
    points = sorted(document.get("timeline") or [], key=_order_key)
    if not points:
        return Markup('<p class="muted">No evidence lines to draw.</p>')
    labels = labels_of(document)
    rows = sorted({_row_key(point, labels) for point in points})
    endings = {row["rank"]: row.get("ended") for row in document.get("ranks") or [] if isinstance(row.get("rank"), int)}
    seen_ranks = [rank for rank in (document.get("inputs") or {}).get("ranks") or [] if isinstance(rank, int)]
    seen_ranks += [rank for rank in endings if rank not in seen_ranks]
    quiet = sorted(set(seen_ranks) - {key[1] for key in rows if key[0] == 0})
    if len(rows) + len(quiet) <= MAX_ROWS:
        rows = sorted(set(rows) | {(0, rank, "") for rank in quiet})
        quiet = []
    rows = rows[:MAX_ROWS]
    row_index = {key: index for index, key in enumerate(rows)}
    extra_rows = 1 if quiet else 0
    height = TOP + ROW_HEIGHT * (len(rows) + extra_rows) + 46
    axis_left, axis_right = LABEL_WIDTH, WIDTH - RIGHT_PAD
    plot_left, plot_right = axis_left + INSET, axis_right - INSET
    plot_width = plot_right - plot_left

    times = [point["t"] for point in points if point["t"] is not None]
    by_time = len(times) == len(points) and max(times) > min(times)
    if by_time:
        start, span = min(times), max(times) - min(times)

        def x_of(index: int, point: dict) -> float:
            return plot_left + plot_width * (point["t"] - start) / span
    else:
        def x_of(index: int, point: dict) -> float:
            return plot_left + (plot_width * index / (len(points) - 1) if len(points) > 1 else plot_width / 2)

    out = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-labelledby="timeline-title" xmlns="http://www.w3.org/2000/svg">',
        '<title id="timeline-title">What each rank printed and when: the first fault and the errors that followed</title>',
    ]
    # legend
    legend = [("first", "first fault"), ("primary", "same failure"), ("collateral", "collateral"), ("error", "error line")]
    lx = plot_left
    for kind, label in legend:
        if kind == "collateral":
            out.append(f'<rect class="key {kind}" x="{lx + 1.5}" y="11.5" width="9" height="9" transform="rotate(45 {lx + 6} 16)"/>')
        else:
            out.append(f'<circle class="key {kind}" cx="{lx + 6}" cy="16" r="{7 if kind == "first" else 5}"/>')
        out.append(f'<text class="legend" x="{lx + 18}" y="20">{label}</text>')
        lx += 30 + 8 * len(label)
    # rows and grid
    for key, index in row_index.items():
        y = TOP + ROW_HEIGHT * index + ROW_HEIGHT / 2
        out.append(f'<line class="row-line{" alt" if index % 2 else ""}" x1="{axis_left}" x2="{axis_right}" y1="{y}" y2="{y}"/>')
        label = _row_label(key) + (f" · {endings[key[1]]}" if key[0] == 0 and endings.get(key[1]) not in (None, "unknown") else "")
        out.append(f'<text class="row-label" x="{axis_left - 10}" y="{y + 4}">{escape(label[:28])}</text>')
    if quiet:
        y = TOP + ROW_HEIGHT * len(rows) + ROW_HEIGHT / 2
        out.append(f'<text class="row-label quiet" x="{axis_left - 10}" y="{y + 4}">+{len(quiet)} ranks</text>')
        out.append(f'<text class="axis" x="{plot_left}" y="{y + 4}">printed no error lines</text>')
    axis_y = TOP + ROW_HEIGHT * (len(rows) + extra_rows) + 4
    out.append(f'<line class="axis-line" x1="{axis_left}" x2="{axis_right}" y1="{axis_y}" y2="{axis_y}"/>')
    if by_time:
        step = _nice_step(span)
        tick = 0.0
        while tick <= span + 1e-9:
            x = plot_left + plot_width * tick / span
            out.append(f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 4}" y2="{axis_y + 4}"/>')
            out.append(f'<text class="axis" x="{x:.1f}" y="{axis_y + 18}">{_seconds_label(tick)}</text>')
            tick += step
        caption = f"time since {points[0]['time'] or ''}"
    else:
        caption = "order in the logs (the lines carry no comparable timestamps)"
    out.append(f'<text class="axis caption" x="{axis_right}" y="{axis_y + 30}">{escape(caption)}</text>')
    # marks: the first fault last, so it is drawn on top
    drawn = sorted(enumerate(points), key=lambda item: -KIND_ORDER.get(item[1]["kind"], 9))
    for index, point in drawn:
        key = _row_key(point, labels)
        if key not in row_index:
            continue
        x = x_of(index, point)
        y = TOP + ROW_HEIGHT * row_index[key] + ROW_HEIGHT / 2
        kind = point["kind"] if point["kind"] in KIND_ORDER else "error"
        approx = bool(point.get("approx"))
        source = labels.get(point.get("source"), point.get("source"))
        tip = _row_label(key) if approx else f"{_row_label(key)} · {source}:{point.get('line')}"
        if point.get("time"):
            tip += f" · {point['time']}"
        tip += f"\n{(point.get('text') or '')[:300]}"
        anchor = "#collateral" if approx else "#" + anchor_id(point.get("source"), point.get("line"))
        out.append(f'<a href="{anchor}" class="mark-link"><title>{escape(tip)}</title>')
        if kind == "first":
            out.append(f'<line class="first-rule" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 6}" y2="{axis_y}"/>')
            out.append(f'<circle class="mark first-halo" cx="{x:.1f}" cy="{y:.1f}" r="15"/>')
            out.append(f'<circle class="mark first" cx="{x:.1f}" cy="{y:.1f}" r="8.5"/>')
            anchor_end = "end" if x > plot_left + plot_width * 0.8 else "start"
            dx = -14 if anchor_end == "end" else 14
            out.append(f'<text class="first-label" text-anchor="{anchor_end}" x="{x + dx:.1f}" y="{y - 10:.1f}">first fault</text>')
        elif kind == "collateral":
            s = 5.5
            out.append(f'<rect class="mark collateral{" approx" if approx else ""}" x="{x - s:.1f}" y="{y - s:.1f}" width="{2 * s}" height="{2 * s}" '
                       f'transform="rotate(45 {x:.1f} {y:.1f})"/>')
        else:
            out.append(f'<circle class="mark {kind}" cx="{x:.1f}" cy="{y:.1f}" r="6"/>')
        out.append("</a>")
    out.append("</svg>")
    return Markup("".join(out))
