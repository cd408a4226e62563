"""What the editor shows on a marked line: the hover text, and what the code actions need.

    hover_markdown(markers, diagnosis, kb, href) -> Markdown
    verification_command(entry, values) -> the first verification command, or ""

A collateral line is explained by the first fault (that is what to fix), after saying what the
line itself is. Pure: no I/O; the link is given.
"""
from __future__ import annotations

from ..model import Diagnosis
from ..render.contract import iso_time
from ..render.diagnosis_text import entry_or_none, start_of, who
from ..render.entry_sections import FixOption, fix_blocks, verify_steps
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
        lines.append(f"First fault: {start_of(diagnosis)}" + (f" at {when}" if when else "") + ".")
        if primary.message:
            lines.append(f"> {primary.message}")
    elif marker.kind == SAME_FAILURE and first is not None:
        lines.append(f"Evidence of the first fault ({start_of(diagnosis)}, {code_span(place(first))}).")
    elif marker.kind == COLLATERAL and primary is not None and first is not None:
        lines.append(f"Collateral ({who(marker.as_evidence())}), not the cause: it follows the first fault, "
                     f"**{title_of(kb, primary.failure_id)}** on {start_of(diagnosis)} at {code_span(place(first))}.")
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
    primary = explained == _primary_id(diagnosis)
    lines += _fix_and_verify(entry, diagnosis.fix_values if primary else {}, [seen.id for seen in diagnosis.stack],
                             [item.text for item in diagnosis.primary.evidence] if primary and diagnosis.primary else ())
    lines += [f"_{note}_" for note in diagnosis.notes] if marker.kind == FIRST_FAULT else []
    lines.append(f"[Full entry]({href(entry.id)}) · `firstfault explain {entry.id}`")
    return "\n\n".join(lines)


def _fix_and_verify(entry, values: dict, stack=(), evidence=()) -> list[str]:
    """The first fix for the evidence and the stack the logs show (the same choice the reports
    make) and the first verification command."""
    lines = []
    options = [block for block in fix_blocks(entry, values, list(stack), list(evidence)) if isinstance(block, FixOption)]
    if options:
        option = options[0]
        lines.append(f"**Fix** ({option.stack}): {option.title}. {option.why.strip()}")
        shell = [code.text for code in option.blocks if code.language == "bash"]
        if shell:
            lines.append(_fenced("\n".join(shell), "sh"))
        others = sorted({item.stack for item in options[1:]} - {option.stack})
        if others:
            lines.append(f"Other fixes in the full entry: {', '.join(others)}.")
    check, command = verification_command(entry, values)
    steps = verify_steps(entry, values)
    if steps:
        lines.append(f"**Verify**: {check or steps[0].text}")
        if command:
            lines.append(_fenced(command, "sh"))
    return lines


def verification_command(entry, values: dict) -> tuple[str, str]:
    """(check, command) of the entry's first verification step that has a command; ("", "") when none."""
    for step in verify_steps(entry, values):
        if step.command:
            return step.text, step.command
    return "", ""


def _primary_id(diagnosis: Diagnosis) -> str:
    return diagnosis.primary.failure_id if diagnosis.primary is not None else ""


def _fenced(text: str, language: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"
