"""Diagnosis -> Markdown (CommonMark), for pasting into an issue or a chat."""
from __future__ import annotations

import re

from ..model import Diagnosis
from .printable import printable_diagnosis
from .diagnosis_text import (RANK_GROUPS_SHOWN, WENT_PAST_TITLE, Names, action_line, because_lines, clip, entry_or_none,
                             exclusion_lines, id_label, inputs_line, rank_groups, ranks_text, report_sections,
                             started_line, who)
from .entry_markdown import prose, render_section


def code_span(text: str) -> str:
    """A log line as literal inline code: the fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if longest or text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def render(diagnosis: Diagnosis, kb) -> str:
    diagnosis = printable_diagnosis(diagnosis)  # log text may carry terminal escapes
    names = Names(diagnosis)
    lines: list[str] = ["## firstfault diagnosis", ""]
    if diagnosis.status == "healthy":
        lines.append("**Healthy**: the logs show no failure.")
    elif diagnosis.primary is None:
        started = f" It {prose(started_line(diagnosis, names))}." if diagnosis.initiating else ""
        lines.append("**Unknown failure**: something failed, but no knowledge-base entry explains it." + started)
        lines += ["", f"**{action_line(diagnosis)}**"]
    else:
        primary = diagnosis.primary
        entry = entry_or_none(kb, primary.failure_id)
        title = entry.title if entry else primary.failure_id
        lines.append(f"**{prose(title)}** (`{id_label(primary)}`, confidence {primary.confidence:.2f}), "
                     f"{prose(started_line(diagnosis, names))}.")
        lines += ["", f"**{prose(action_line(diagnosis))}**"]
        if primary.message:
            lines += ["", f"> {prose(primary.message)}"]
        lines += ["", "### Evidence", ""]
        lines += [_line_item(names.where(item), who(item), item.text) for item in primary.evidence]
    if diagnosis.because and diagnosis.status != "healthy":
        lines += ["", "### Why", ""] + [f"- {prose(text)}" for text in because_lines(diagnosis)]
    if diagnosis.ranks and diagnosis.status != "healthy":
        lines += ["", "### Ranks (what each did last)", "", "| ranks | what they did last |", "| --- | --- |"]
        lines += [f"| {ranks_text(ranks)} | {prose(state)} |" for ranks, state in rank_groups(diagnosis)[:RANK_GROUPS_SHOWN]]
    if diagnosis.collateral:
        lines += ["", "### Collateral" if diagnosis.primary else "### Failures seen", "",
                  "| failure | ranks | lines | first |", "| --- | --- | --- | --- |"]
        for finding in diagnosis.collateral:
            first = finding.evidence[0] if finding.evidence else None
            ranks = ranks_text(finding.ranks) or "—"
            lines.append(f"| `{finding.failure_id}` | {ranks} | {finding.count} | {code_span(names.where(first)) if first else ''} |")
    if diagnosis.went_past:
        lines += ["", f"### {WENT_PAST_TITLE}", "", "| failure | lines | first |", "| --- | --- | --- |"]
        for finding in diagnosis.went_past:
            first = finding.evidence[0] if finding.evidence else None
            lines.append(f"| `{finding.failure_id}` | {finding.count} | {code_span(names.where(first)) if first else ''} |")
    if diagnosis.error_lines:
        lines += ["", "### Most likely error lines", ""]
        lines += [_line_item(names.where(item), who(item), item.text) for item in diagnosis.error_lines]
    heading, commands = exclusion_lines(diagnosis)
    if commands:
        lines += ["", f"### {prose(heading)}", "", "```sh", *commands, "```"]
    entry = entry_or_none(kb, diagnosis.primary.failure_id) if diagnosis.primary else None
    if entry is not None:
        for section in report_sections(entry, diagnosis):
            lines += ["", render_section(section)]
    lines += ["", f"<sub>Read: {prose(inputs_line(diagnosis))}</sub>"]
    lines += [f"<sub>Note: {prose(note)}</sub>" for note in diagnosis.notes]
    return "\n".join(lines) + "\n"


def _line_item(where: str, who: str, text: str) -> str:
    return f"- {code_span(where)} ({who}): {code_span(clip(text))}"
