"""Diagnosis -> Markdown, for pasting into an issue or a chat."""
from __future__ import annotations

import re

from ..model import Diagnosis
from .diagnosis_text import (action_line, because_lines, entry_or_none, fix_blocks, id_label, inputs_line,
                             ranks_text, started_line, verify_items, where, who)


def code_span(text: str) -> str:
    """A log line as literal inline code: the fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if longest else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _code(text: str, language: str = "") -> list[str]:
    fence = "````" if "```" in text else "```"
    return [f"{fence}{language}", text.rstrip(), fence]


def render(diagnosis: Diagnosis, kb) -> str:
    lines: list[str] = ["## firstfault diagnosis", ""]
    if diagnosis.status == "healthy":
        lines.append("**Healthy**: the logs show no failure.")
    elif diagnosis.primary is None:
        lines.append("**Unknown failure**: something failed, but no knowledge-base entry explains it.")
        lines += ["", f"**{action_line(diagnosis)}**"]
    else:
        primary = diagnosis.primary
        entry = entry_or_none(kb, primary.failure_id)
        title = entry.title if entry else primary.failure_id
        lines.append(f"**{title}** (`{id_label(primary)}`, confidence {primary.confidence:.2f}), {started_line(diagnosis)}.")
        lines += ["", f"**{action_line(diagnosis)}**"]
        if primary.message:
            lines += ["", f"> {primary.message}"]
        lines += ["", "### Evidence", ""]
        lines += [f"- {code_span(where(item))} ({who(item)}): {code_span(item.text.strip()[:300])}" for item in primary.evidence]
    if diagnosis.because and diagnosis.status != "healthy":
        lines += ["", "### Why", ""] + [f"- {text}" for text in because_lines(diagnosis)]
    if diagnosis.collateral:
        lines += ["", "### Collateral" if diagnosis.primary else "### Failures seen", "",
                  "| failure | ranks | lines | first |", "| --- | --- | --- | --- |"]
        for finding in diagnosis.collateral:
            first = finding.evidence[0] if finding.evidence else None
            lines.append(f"| `{finding.failure_id}` | {ranks_text(finding.ranks)} | {finding.count} | {code_span(where(first)) if first else ''} |")
    if diagnosis.error_lines:
        lines += ["", "### Most likely error lines", ""]
        lines += [f"- {code_span(where(item))} ({who(item)}): {code_span(item.text.strip()[:300])}" for item in diagnosis.error_lines]
    entry = entry_or_none(kb, diagnosis.primary.failure_id) if diagnosis.primary else None
    if entry is not None:
        lines += ["", "### Fix", ""]
        for number, block in enumerate(fix_blocks(entry, diagnosis.fix_values), start=1):
            lines.append(f"{number}. **{block['title']}** ({block['stack']}): {block['why'].strip()}")
            lines += [f"   - {step}" for step in block["steps"]]
            shell = [f"export {key}={value}" for key, value in block["env"].items()]
            shell += [block["command"]] if block["command"] else []
            if shell:
                lines += ["   " + text for text in _code("\n".join(shell), "sh")]
            for key in ("config", "code"):
                if block[key]:
                    lines += ["   " + text for text in _code(block[key])]
        verify = verify_items(entry, diagnosis.fix_values)
        if verify:
            lines += ["", "### Verify", ""]
            for check, command in verify:
                lines.append(f"- {check}")
                if command:
                    lines += ["  " + text for text in _code(command, "sh")]
    lines += ["", f"<sub>Read: {inputs_line(diagnosis)}</sub>"]
    lines += [f"<sub>Note: {note}</sub>" for note in diagnosis.notes]
    lines += [f"<sub>Skipped: `{item.source}`: {item.reason}</sub>" for item in diagnosis.inputs.skipped]
    return "\n".join(lines) + "\n"
