"""What the editor shows on a marked line: the hover text, and what the code actions need.

    hover_markdown(markers, diagnosis, kb, href) -> Markdown
    verification_command(entry, values) -> the first verification command, or ""

A collateral line is explained by the first fault (that is what to fix), after saying what the
line itself is. Pure: no I/O; the link is given.
"""
from __future__ import annotations

from ..model import Diagnosis
from ..render.contract import iso_time
from ..render.diagnosis_text import entry_or_none, fix_blocks, verify_items, who
from ..render.markdown import code_span
from .markers import COLLATERAL, FIRST_FAULT, SAME_FAILURE, Marker, place, title_of

SUMMARY_CHARACTERS = 700


def hover_markdown(markers: list[Marker], diagnosis: Diagnosis, kb, href) -> str:
    """Markdown for the markers of one line. `href(entry_id)` links an entry."""
    parts = []
    for marker in markers:
        parts.append(_marker_text(marker, diagnosis, kb, href))
    return "\n\n---\n\n".join(parts)


def _marker_text(marker: Marker, diagnosis: Diagnosis, kb, href) -> str:
    primary, first = diagnosis.primary, diagnosis.initiating
    lines = [f"**{title_of(kb, marker.entry_id) if marker.entry_id else 'Unexplained failure'}**"
             + (f" · `{marker.entry_id}`" if marker.entry_id else "")]
    if marker.kind == FIRST_FAULT and primary is not None:
        when = iso_time(first.time) if first is not None else None
        lines[0] += f" · confidence {primary.confidence:.2f}"
        lines.append(f"First fault: {who(first)}" + (f" at {when}" if when else "") + ".")
        if primary.message:
            lines.append(f"> {primary.message}")
    elif marker.kind == SAME_FAILURE and first is not None:
        lines.append(f"Evidence of the first fault ({who(first)}, {code_span(place(first))}).")
    elif marker.kind == COLLATERAL and primary is not None and first is not None:
        lines.append(f"Collateral ({who(marker.as_evidence())}), not the cause: it follows the first fault, "
                     f"**{title_of(kb, primary.failure_id)}** on {who(first)} at {code_span(place(first))}.")
    else:
        lines.append(marker.message)
    explained = primary.failure_id if primary is not None and marker.kind in (FIRST_FAULT, SAME_FAILURE, COLLATERAL) else marker.entry_id
    entry = entry_or_none(kb, explained) if explained else None
    if entry is None:
        return "\n\n".join(lines)
    if marker.kind == COLLATERAL:
        lines.append(f"What to fix is the first fault, **{entry.title}**:")
    summary = " ".join(str(entry.get("summary") or "").split())
    if summary:
        lines.append(summary if len(summary) <= SUMMARY_CHARACTERS else summary[:SUMMARY_CHARACTERS].rsplit(" ", 1)[0] + " …")
    lines += _fix_and_verify(entry, diagnosis.fix_values if explained == _primary_id(diagnosis) else {})
    lines += [f"_{note}_" for note in diagnosis.notes] if marker.kind == FIRST_FAULT else []
    lines.append(f"[Full entry]({href(entry.id)}) · `firstfault explain {entry.id}`")
    return "\n\n".join(lines)


def _fix_and_verify(entry, values: dict) -> list[str]:
    lines = []
    blocks = fix_blocks(entry, values)
    if blocks:
        block = blocks[0]
        lines.append(f"**Fix** ({block['stack']}): {block['title']}. {block['why'].strip()}")
        shell = [f"export {key}={value}" for key, value in block["env"].items()]
        shell += [block["command"]] if block["command"] else []
        if shell:
            lines.append(_fenced("\n".join(shell), "sh"))
        others = sorted({item["stack"] for item in blocks[1:]} - {block["stack"]})
        if others:
            lines.append(f"Other fixes in the full entry: {', '.join(others)}.")
    verify = verify_items(entry, values)
    check, command = verification_command(entry, values)
    if verify:
        lines.append(f"**Verify**: {check or verify[0][0]}")
        if command:
            lines.append(_fenced(command, "sh"))
    return lines


def verification_command(entry, values: dict) -> tuple[str, str]:
    """(check, command) of the entry's first verification step that has a command; ("", "") when none."""
    for check, command in verify_items(entry, values):
        if command:
            return check, command
    return "", ""


def _primary_id(diagnosis: Diagnosis) -> str:
    return diagnosis.primary.failure_id if diagnosis.primary is not None else ""


def _fenced(text: str, language: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"
