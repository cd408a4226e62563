"""Diagnosis -> terminal text: the answer first, then evidence, collateral, fix, verification."""
from __future__ import annotations

from ..model import Diagnosis
from .entry_terminal import Style
from .diagnosis_text import (action_line, because_lines, entry_or_none, fix_blocks, id_label, inputs_line,
                             ranks_text, started_line, verify_items, where, who)

# Roles of the diagnosis report, on top of the entry renderer's (title, heading, dim, ...).
_ROLES = {"failure": "critical", "healthy": "code", "unknown": "literal", "where": "heading", "note": "literal"}


class TerminalReport:
    """Renders a Diagnosis for a terminal; colour only when asked."""

    def __init__(self, kb, color: bool = False) -> None:
        self.kb = kb
        self._style = Style(color)

    def style(self, text: str, role: str = "") -> str:
        return self._style(_ROLES.get(role, role), text) if role else text

    def render(self, diagnosis: Diagnosis) -> str:
        lines = self._headline(diagnosis)
        if diagnosis.primary is not None:
            lines += self._evidence(diagnosis)
        if diagnosis.because and diagnosis.status != "healthy":
            lines += ["", self.style("Why", "title")] + [f"  {text}" for text in because_lines(diagnosis)]
        if diagnosis.collateral:
            lines += self._collateral(diagnosis)
        if diagnosis.error_lines:
            lines += ["", self.style("Most likely error lines", "title")]
            lines += [f"  {where(item)}  [{who(item)}] {item.text.strip()[:300]}" for item in diagnosis.error_lines]
        entry = entry_or_none(self.kb, diagnosis.primary.failure_id) if diagnosis.primary else None
        if entry is not None:
            lines += self._fix(entry, diagnosis.fix_values)
        lines += self._footer(diagnosis)
        return "\n".join(lines) + "\n"

    def _headline(self, diagnosis: Diagnosis) -> list[str]:
        if diagnosis.status == "healthy":
            return [self.style("✔ healthy", "healthy") + ": the logs show no failure"]
        if diagnosis.primary is None:
            return [self.style("? unknown", "unknown") + ": something failed, but no knowledge-base entry explains it",
                    "  " + action_line(diagnosis)]
        primary = diagnosis.primary
        entry = entry_or_none(self.kb, primary.failure_id)
        title = entry.title if entry else primary.failure_id
        lines = [self.style("✖ " + title, "failure") + self.style(f"  [{id_label(primary)}]  confidence {primary.confidence:.2f}", "dim")]
        lines.append("  " + started_line(diagnosis))
        lines.append("  " + self.style(action_line(diagnosis), "heading"))
        if primary.message:
            lines.append("  " + primary.message)
        if entry is not None:
            lines.append("  " + entry.get("summary", "").strip().split(". ")[0].rstrip(".") + ".")
        return lines

    def _evidence(self, diagnosis: Diagnosis) -> list[str]:
        lines = ["", self.style("Evidence", "title")]
        for item in diagnosis.primary.evidence:
            lines.append(f"  {self.style(where(item), 'where')}  [{who(item)}] {item.text.strip()[:300]}")
        return lines

    def _collateral(self, diagnosis: Diagnosis) -> list[str]:
        title = "Collateral (consequences, not the cause)" if diagnosis.primary else "Failures seen"
        lines = ["", self.style(title, "title")]
        for finding in diagnosis.collateral[:10]:
            first = finding.evidence[0] if finding.evidence else None
            ranks = f"ranks {ranks_text(finding.ranks)}" if finding.ranks else f"{finding.count} line(s)"
            lines.append(f"  {finding.failure_id}: {ranks}" + (f" — first {where(first)}" if first else ""))
            if finding.message:
                lines.append(self.style(f"    {finding.message}", "dim"))
        if len(diagnosis.collateral) > 10:
            lines.append(f"  … and {len(diagnosis.collateral) - 10} more groups (--format json lists all)")
        return lines

    def _fix(self, entry, values: dict) -> list[str]:
        lines = ["", self.style("Fix", "title")]
        for number, block in enumerate(fix_blocks(entry, values), start=1):
            lines.append(f"  {number}. {block['title']} [{block['stack']}]")
            lines.append(self.style(f"     why: {block['why'].strip()}", "dim"))
            lines += [f"     - {step}" for step in block["steps"]]
            lines += [f"     export {key}={value}" for key, value in block["env"].items()]
            if block["command"]:
                lines.append(f"     $ {block['command']}")
            for key in ("config", "code"):
                lines += [f"       {text}" for text in block[key].rstrip().splitlines()]
        verify = verify_items(entry, values)
        if verify:
            lines += ["", self.style("Verify", "title")]
            for check, command in verify:
                lines.append(f"  {check}")
                if command:
                    lines.append(f"  $ {command}")
        lines += ["", self.style(f"Full entry: firstfault explain {entry.id}", "dim")]
        return lines

    def _footer(self, diagnosis: Diagnosis) -> list[str]:
        lines = ["", self.style("Read: " + inputs_line(diagnosis), "dim")]
        for note in diagnosis.notes:
            lines.append(self.style(f"Note: {note}", "note"))
        for item in diagnosis.inputs.skipped:
            lines.append(self.style(f"Skipped: {item.source}: {item.reason}", "note"))
        return lines
