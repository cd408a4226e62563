"""Shared pieces of the human-readable diagnosis reports (terminal and Markdown)."""
from __future__ import annotations

from ..model import Diagnosis, Evidence
from ..placeholders import fill_placeholders as fill
from .contract import iso_time


def where(evidence: Evidence) -> str:
    return f"{evidence.source}:{evidence.line}"


def who(evidence: Evidence) -> str:
    parts = []
    if evidence.rank is not None:
        parts.append(f"rank {evidence.rank}")
    if evidence.host:
        parts.append(f"host {evidence.host}")
    return ", ".join(parts) or "rank unknown"


def started_line(diagnosis: Diagnosis) -> str:
    initiating = diagnosis.initiating
    if initiating is None:
        return ""
    when = iso_time(initiating.time)
    return f"started on {who(initiating)}" + (f" at {when}" if when else "") + f" ({where(initiating)})"


def ranks_text(ranks) -> str:
    ranks = sorted(ranks)
    if not ranks:
        return "none"
    spans, start, previous = [], ranks[0], ranks[0]
    for rank in ranks[1:] + [None]:
        if rank is not None and rank == previous + 1:
            previous = rank
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if rank is not None:
            start = previous = rank
    return ",".join(spans)


def inputs_line(diagnosis: Diagnosis) -> str:
    inputs = diagnosis.inputs
    files = len(inputs.files)
    text = f"{files} file{'s' if files != 1 else ''}, {inputs.lines} lines, {inputs.bytes} bytes; ranks {ranks_text(inputs.ranks)}"
    if inputs.hosts:
        text += f"; hosts {', '.join(inputs.hosts[:6])}" + (" …" if len(inputs.hosts) > 6 else "")
    return text


def fix_blocks(entry, values: dict, limit: int = 4) -> list[dict]:
    """The entry's fix steps with log values filled in, as plain dicts for the renderers."""
    blocks = []
    for item in (entry.get("fix") or [])[:limit]:
        blocks.append({
            "title": fill(item["title"], values),
            "stack": item["stack"],
            "why": fill(item["why"], values),
            "steps": [fill(step, values) for step in item.get("steps") or ()],
            "command": fill(item["command"], values) if item.get("command") else "",
            "env": {key: fill(str(value), values) for key, value in (item.get("env") or {}).items()},
            "config": fill(item["config"], values) if item.get("config") else "",
            "code": fill(item["code"], values) if item.get("code") else "",
        })
    return blocks


def verify_items(entry, values: dict) -> list[tuple[str, str]]:
    return [(fill(item["check"], values), fill(item.get("command") or "", values)) for item in entry.get("verify") or ()]


def id_label(finding) -> str:
    """`class / entry` when the entry specialises a core class, else the entry id."""
    if finding.class_id != finding.failure_id:
        return f"{finding.class_id} / {finding.failure_id}"
    return finding.failure_id


def entry_or_none(kb, failure_id: str):
    try:
        return kb.get(failure_id)
    except Exception:  # an id the engine produced but the KB lacks: render without entry text
        return None


ACTION_TEXT = {
    "restart": "restart the job (transient failure)",
    "exclude-host-and-restart": "exclude the host, then restart (hardware)",
    "fix-and-rerun": "fix the cause, then rerun (a restart would fail the same way)",
}


def action_line(diagnosis: Diagnosis) -> str:
    """`Action: ...` with the hosts to exclude, or "" for a healthy run."""
    if not diagnosis.action:
        return ""
    text = f"Action: {ACTION_TEXT.get(diagnosis.action, diagnosis.action)}"
    hosts = diagnosis.action_detail.get("hosts") or []
    if hosts:
        text += f" — {', '.join(hosts)}"
    return text


def because_lines(diagnosis: Diagnosis) -> list[str]:
    """The reasoning, one line per rule that decided something: `text [rule]`."""
    return [f"{item.text} [{item.rule}]" for item in diagnosis.because]
