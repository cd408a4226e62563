"""The fleet page's charts as inline SVG, drawn on the server from the fleet report document.

- `weekly_chart`: one stacked bar per week, its height the week's failure rate, split by class
  (the classes with the most failed jobs, the rest as "other"; hardware classes in reds at the
  bottom, the others in blues), the week's job count under it, and a legend;
- `class_chart`: one horizontal bar per failure class, coloured by what it says about hosts
  (hardware, transient hardware or fabric, never blamed on a host).
Colours come from CSS classes (the CSP forbids inline style); every bar has a <title> tooltip.
"""
from __future__ import annotations

from markupsafe import Markup, escape

WIDTH = 960
TOP_CLASSES = 6
PLOT_TOP = 16
PLOT_HEIGHT = 200
LEFT = 48
RIGHT = 16


def _text(x: float, y: float, text: str, css: str, anchor: str = "middle") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" class="{css}" text-anchor="{anchor}">{escape(text)}</text>'


def _percent_step(peak: float) -> float:
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5):
        if peak / step <= 5:
            return step
    return 0.5


def weekly_chart(report: dict) -> Markup:
    weeks = report.get("by_week") or []
    if not weeks:
        return Markup('<p class="muted">No jobs with a time to draw.</p>')
    totals: dict[str, int] = {}
    for week in weeks:
        for name, count in week["by_class"].items():
            totals[name] = totals.get(name, 0) + count
    shown = [name for name, _ in sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:TOP_CLASSES]]
    hardware = {entry["failure_id"] for entry in report.get("by_class") or [] if entry.get("hardware")}
    shown.sort(key=lambda name: (name not in hardware, -totals[name], name))  # hardware at the bottom of each bar
    series = shown + (["other"] if len(totals) > len(shown) else [])
    colours = _colours(series, hardware)
    peak = max(week["failure_rate"] for week in weeks) or 0.01
    step = _percent_step(peak)
    top = min(step * (int(peak / step) + 1), 1.0)  # a rate: never above 100 %
    plot_width = WIDTH - LEFT - RIGHT
    slot = plot_width / len(weeks)
    bar = max(4.0, min(48.0, slot * 0.7))
    base = PLOT_TOP + PLOT_HEIGHT
    parts = []
    level = 0.0
    while level <= top + 1e-9:
        y = base - level / top * PLOT_HEIGHT
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(_text(LEFT - 6, y + 4, f"{level * 100:g}%", "axis", "end"))
        level += step
    label_every = max(1, round(len(weeks) / 12))
    for index, week in enumerate(weeks):
        x = LEFT + slot * index + (slot - bar) / 2
        y = base
        counts = dict(week["by_class"])
        other = sum(count for name, count in counts.items() if name not in shown)
        for name in series:
            count = other if name == "other" else counts.get(name, 0)
            if not count or not week["jobs"]:
                continue
            height = count / week["jobs"] / top * PLOT_HEIGHT
            tip = f"week of {week['week']}: {name} in {count} of {week['jobs']} jobs"
            y -= height
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{height:.1f}" class="seg {colours[name]}">'
                         f'<title>{escape(tip)}</title></rect>')
        if index % label_every == 0:
            parts.append(_text(x + bar / 2, base + 16, week["week"][5:], "axis"))
            parts.append(_text(x + bar / 2, base + 29, f"{week['jobs']} job{'' if week['jobs'] == 1 else 's'}", "axis small"))
    legend_y = base + 52
    x = LEFT
    for name in series:
        parts.append(f'<rect x="{x}" y="{legend_y - 10}" width="12" height="12" class="seg {colours[name]}"/>')
        parts.append(_text(x + 18, legend_y, name, "legend", "start"))
        x += 30 + 7.2 * len(name)
    height = legend_y + 12
    return Markup(f'<svg class="fleet-chart weekly" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
                  f'aria-label="Failure rate by week and class">{"".join(parts)}</svg>')


def _colours(series: list[str], hardware: set[str]) -> dict[str, str]:
    """CSS class per series: reds for hardware classes, blues and greys for the rest."""
    colours, hardware_index, other_index = {}, 0, 0
    for name in series:
        if name == "other":
            colours[name] = "other"
        elif name in hardware:
            colours[name] = f"hw-{min(hardware_index, 2)}"
            hardware_index += 1
        else:
            colours[name] = f"code-{min(other_index, 3)}"
            other_index += 1
    return colours


def class_kind(entry: dict) -> str:
    if entry.get("hardware"):
        return "hardware"
    return "node" if entry.get("host_weight", 0) > 0 else "code"


def class_chart(report: dict) -> Markup:
    classes = report.get("by_class") or []
    if not classes:
        return Markup('<p class="muted">No failures.</p>')
    label_width = 260
    row = 24
    most = max(entry["jobs"] for entry in classes)
    plot_width = WIDTH - label_width - 80
    parts = []
    for index, entry in enumerate(classes):
        y = 8 + index * row
        width = max(2.0, entry["jobs"] / most * plot_width)
        kind = class_kind(entry)
        tip = f"{entry['failure_id']}: {entry['jobs']} jobs ({kind})"
        parts.append(_text(label_width - 8, y + 14, entry["failure_id"], "row-label", "end"))
        parts.append(f'<rect x="{label_width}" y="{y + 3}" width="{width:.1f}" height="{row - 8}" class="bar {kind}">'
                     f'<title>{escape(tip)}</title></rect>')
        parts.append(_text(label_width + width + 6, y + 14, f"{entry['jobs']}  ({entry['share'] * 100:.1f}%)", "value", "start"))
    height = 16 + len(classes) * row
    return Markup(f'<svg class="fleet-chart classes" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
                  f'aria-label="Failed jobs by class">{"".join(parts)}</svg>')
