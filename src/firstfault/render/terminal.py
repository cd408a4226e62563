"""Diagnosis -> terminal text: the answer first, then evidence, collateral, fix, verification."""
from __future__ import annotations

from ..model import Diagnosis
from .printable import printable_diagnosis
from .diagnosis_text import (WENT_PAST_TITLE, Names, action_line, because_lines, clip, entry_or_none, exclusion_lines, id_label,
                             inputs_line, rank_lines, ranks_text, report_sections, started_line, who)
from .entry_terminal import Style, render_section

# Roles of the diagnosis report, on top of the entry renderer's (title, heading, dim, ...).
_ROLES = {"failure": "critical", "healthy": "code", "unknown": "literal", "where": "heading", "note": "literal"}
WIDTH = 100  # prose of the fix and verification is wrapped here; log lines and code never are


class TerminalReport:
    """Renders a Diagnosis for a terminal; colour only when asked. Skipped inputs are not listed:
    the command says them once, on stderr."""

    def __init__(self, kb, color: bool = False) -> None:
        self.kb = kb
        self._style = Style(color)

    def style(self, text: str, role: str = "") -> str:
        return self._style(_ROLES.get(role, role), text) if role else text

    def render(self, diagnosis: Diagnosis) -> str:
        diagnosis = printable_diagnosis(diagnosis)  # log text may carry terminal escapes
        names = Names(diagnosis)
        lines = self._headline(diagnosis, names)
        if diagnosis.primary is not None:
            lines += self._evidence(diagnosis, names)
        if diagnosis.because and diagnosis.status != "healthy":
            lines += ["", self.style("Why", "title")] + [f"  {text}" for text in because_lines(diagnosis)]
        if diagnosis.ranks and diagnosis.status != "healthy":
            lines += ["", self.style("Ranks (what each did last)", "title")] + [f"  {text}" for text in rank_lines(diagnosis)]
        if diagnosis.collateral:
            lines += self._collateral(diagnosis, names)
        if diagnosis.went_past:
            lines += self._went_past(diagnosis, names)
        if diagnosis.error_lines:
            lines += ["", self.style("Most likely error lines", "title")]
            lines += [f"  {names.where(item)}  [{who(item)}] {clip(item.text)}" for item in diagnosis.error_lines]
        entry = entry_or_none(self.kb, diagnosis.primary.failure_id) if diagnosis.primary else None
        if entry is not None:
            lines += self._fix(entry, diagnosis)
        lines += self._footer(diagnosis)
        return "\n".join(lines) + "\n"

    def _headline(self, diagnosis: Diagnosis, names: Names) -> list[str]:
        if diagnosis.status == "healthy":
            return [self.style("✔ healthy", "healthy") + ": the logs show no failure"]
        if diagnosis.primary is None:
            started = ["  " + started_line(diagnosis, names)] if diagnosis.initiating else []
            return [self.style("? unknown", "unknown") + ": something failed, but no knowledge-base entry explains it",
                    *started, "  " + action_line(diagnosis)]
        primary = diagnosis.primary
        entry = entry_or_none(self.kb, primary.failure_id)
        title = entry.title if entry else primary.failure_id
        lines = [self.style("✖ " + title, "failure") + self.style(f"  [{id_label(primary)}]  confidence {primary.confidence:.2f}", "dim")]
        lines.append("  " + started_line(diagnosis, names))
        lines.append("  " + self.style(action_line(diagnosis), "heading"))
        if primary.message:
            lines.append("  " + primary.message)
        if entry is not None:
            lines.append("  " + entry.get("summary", "").strip().split(". ")[0].rstrip(".") + ".")
        return lines

    def _evidence(self, diagnosis: Diagnosis, names: Names) -> list[str]:
        lines = ["", self.style("Evidence", "title")]
        for item in diagnosis.primary.evidence:
            lines.append(f"  {self.style(names.where(item), 'where')}  [{who(item)}] {clip(item.text)}")
        return lines

    def _collateral(self, diagnosis: Diagnosis, names: Names) -> list[str]:
        title = "Collateral (consequences, not the cause)" if diagnosis.primary else "Failures seen"
        lines = ["", self.style(title, "title")]
        for finding in diagnosis.collateral[:10]:
            first = finding.evidence[0] if finding.evidence else None
            ranks = f"ranks {ranks_text(finding.ranks)}" if finding.ranks else f"{finding.count} line(s)"
            lines.append(f"  {finding.failure_id}: {ranks}" + (f" — first {names.where(first)}" if first else ""))
            if finding.message:
                lines.append(self.style(f"    {finding.message}", "dim"))
        if len(diagnosis.collateral) > 10:
            lines.append(f"  … and {len(diagnosis.collateral) - 10} more groups (--format json lists all)")
        return lines

    def _went_past(self, diagnosis: Diagnosis, names: Names) -> list[str]:
        lines = ["", self.style(WENT_PAST_TITLE, "title")]
        for finding in diagnosis.went_past:
            first = finding.evidence[0] if finding.evidence else None
            lines.append(f"  {finding.failure_id}: {finding.count} line(s)" + (f" — first {names.where(first)}" if first else ""))
        return lines

    def _fix(self, entry, diagnosis: Diagnosis) -> list[str]:
        lines = []
        heading, commands = exclusion_lines(diagnosis)
        if commands:
            lines += ["", self.style(heading, "title")] + [f"    {command}" for command in commands]
        for section in report_sections(entry, diagnosis):
            lines.append("")
            lines += render_section(section, WIDTH, self._style)
        lines += ["", self.style(f"Full entry: firstfault explain {entry.id}", "dim")]
        return lines

    def _footer(self, diagnosis: Diagnosis) -> list[str]:
        lines = ["", self.style("Read: " + inputs_line(diagnosis), "dim")]
        for note in diagnosis.notes:
            lines.append(self.style(f"Note: {note}", "note"))
        return lines
