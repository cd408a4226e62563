"""Shared pieces of the human-readable diagnosis reports (terminal, Markdown and the web page)."""
from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Mapping

from ..ingest.attribution import hints_from_path
from ..model import Diagnosis, Evidence, Skipped
from .contract import iso_time
from .entry_sections import FIX, VERIFY, Section, build_sections

EVIDENCE_WIDTH = 300  # characters of a log line a report quotes
ELLIPSIS = "…"


def clip(text: str, width: int = EVIDENCE_WIDTH) -> str:
    """`text` stripped and, when longer than `width`, cut at the last word boundary before it
    with an ellipsis, so a quoted line never ends mid-word without saying it was cut."""
    text = text.strip()
    if len(text) <= width:
        return text
    cut = text[:width - 1]
    boundary = max(cut.rfind(" "), cut.rfind("\t"))
    if boundary >= width // 2:  # a long unbroken token (a path, a hex dump) is cut where it is
        cut = cut[:boundary]
    return cut.rstrip(" ,;:") + ELLIPSIS


def source_labels(files: Iterable[str]) -> dict[str, str]:
    """Each file's shortest path suffix (whole components) that no other file shares:
    `attempt_0/3/stderr.log` -> `3/stderr.log` when only the rank folder tells them apart."""
    parts = {name: tuple(name.replace("\\", "/").split("/")) for name in dict.fromkeys(files)}
    deepest = max((len(components) for components in parts.values()), default=0)
    # how many files end in each suffix, per suffix length: linear in the number of files
    shared = [Counter(components[-size:] for components in parts.values()) for size in range(deepest + 1)]
    labels = {}
    for name, components in parts.items():
        size = next((size for size in range(1, len(components)) if shared[size][components[-size:]] == 1), len(components))
        labels[name] = "/".join(components[-size:])
    return labels


def common_folder(files: Iterable[str]) -> str:
    """The folder every file lies in (`logs/`), or "" when they share none."""
    folders = [posixpath.dirname(name.replace("\\", "/")) for name in files]
    if not folders:
        return ""
    try:
        common = posixpath.commonpath(folders)
    except ValueError:  # absolute and relative paths mixed
        return ""
    return common + "/" if common and common != "/" else common


class Names:
    """How a report names files: by the labels of `source_labels`, for every renderer alike."""

    def __init__(self, diagnosis: Diagnosis) -> None:
        sources = list(diagnosis.inputs.files)
        read = set(sources)
        sources += [item.source for item in _all_evidence(diagnosis) if item.source not in read]
        self.labels = source_labels(sources)

    def where(self, evidence: Evidence) -> str:
        return f"{self.labels.get(evidence.source, evidence.source)}:{evidence.line}"


def _all_evidence(diagnosis: Diagnosis) -> list[Evidence]:
    findings = [diagnosis.primary, *diagnosis.collateral] if diagnosis.primary else list(diagnosis.collateral)
    items = [item for finding in findings for item in finding.evidence]
    return items + list(diagnosis.error_lines) + ([diagnosis.initiating] if diagnosis.initiating else [])


def who(evidence: Evidence) -> str:
    parts = []
    if evidence.rank is not None:
        parts.append(f"rank {evidence.rank}")
    if evidence.host:
        parts.append(f"host {evidence.host}")
    return ", ".join(parts) or "rank unknown"


# the report's section of errors a rule set aside because the run went on past them
WENT_PAST_TITLE = "Errors the run went past (neither the cause nor its consequences)"

# rules that decided no single rank started the failure, and how a report says so
NO_SINGLE_RANK = {"every-rank-alike": "every rank alike", "mismatch-no-odd-one": "no single rank",
                  "raised-by-the-launcher": "the launcher, before any rank"}


def no_single_rank(rules) -> str:
    """How a report names the start when a rule decided no one rank started it ('' otherwise):
    `rules`, the ids of the verdict's steps."""
    return next((NO_SINGLE_RANK[rule] for rule in rules if rule in NO_SINGLE_RANK), "")


def start_of(diagnosis: Diagnosis) -> str:
    """Where the failure started, as every report says it: its rank and host, or that no single
    rank started it when a rule decided so."""
    first = diagnosis.initiating
    if first is None:
        return "rank unknown"
    alike = no_single_rank(step.rule for step in diagnosis.because) if first.rank is None else ""
    if alike:
        return alike + (f", first on host {first.host}" if first.host else "")
    return who(first)


def started_line(diagnosis: Diagnosis, names: Names) -> str:
    initiating = diagnosis.initiating
    if initiating is None:
        return ""
    when = iso_time(initiating.time)
    return f"started on {start_of(diagnosis)}" + (f" at {when}" if when else "") + f" ({names.where(initiating)})"


def ranks_phrase(ranks) -> str:
    """`rank 3`, `ranks 0-2,5`."""
    ranks = sorted(ranks)
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {ranks_text(ranks)}"


def ranks_text(ranks) -> str:
    """`0-3,5`; empty when there are none (callers leave the phrase out)."""
    ranks = sorted(ranks)
    if not ranks:
        return ""
    spans, start, previous = [], ranks[0], ranks[0]
    for rank in ranks[1:] + [None]:
        if rank is not None and rank == previous + 1:
            previous = rank
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if rank is not None:
            start = previous = rank
    return ",".join(spans)


TORCHRUN_STREAMS = ("stdout.log", "stderr.log")


def expected_empty(item: Skipped) -> bool:
    """An empty `attempt_N/<local_rank>/stdout.log` or `stderr.log`: torchrun --log-dir makes both
    for every worker and most stay empty. Counted in the Read line, not warned about one by one."""
    name = item.source.replace("\\", "/")
    return (item.reason.startswith("empty") and name.rsplit("/", 1)[-1] in TORCHRUN_STREAMS
            and hints_from_path(name).launcher_attempt is not None)


def skipped_worth_saying(items) -> list[Skipped]:
    return [item for item in items if not expected_empty(item)]


def inputs_line(diagnosis: Diagnosis) -> str:
    inputs = diagnosis.inputs
    files = len(inputs.files)
    if files == 1:
        read = inputs.files[0]
    else:
        folder = common_folder(inputs.files)
        read = f"{files} files" + (f" in {folder}" if folder else "")
    text = f"{read}, {inputs.lines} line{'s' if inputs.lines != 1 else ''}, {inputs.bytes} bytes"
    empty = sum(1 for item in inputs.skipped if expected_empty(item))
    if empty:
        text += f" (and {empty} empty torchrun stdout/stderr file{'s' if empty != 1 else ''})"
    if inputs.ranks:
        text += f"; ranks {ranks_text(inputs.ranks)}"
    if inputs.hosts:
        text += f"; hosts {', '.join(inputs.hosts[:6])}" + (" …" if len(inputs.hosts) > 6 else "")
    return text


def report_sections(entry, diagnosis: Diagnosis, values: Mapping | None = None) -> list[Section]:
    """The entry's Fix and Verification sections as a diagnosis shows them: the log's values
    filled in, the fixes chosen for the stack the logs show (firstfault.stack)."""
    values = diagnosis.fix_values if values is None else values
    stack = [item.id for item in diagnosis.stack]
    evidence = [item.text for item in diagnosis.primary.evidence] if diagnosis.primary else []
    return [section for section in build_sections(entry, values, stack=stack, evidence=evidence)
            if section.heading in (FIX, VERIFY)]


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


RANK_GROUPS_SHOWN = 8  # a report lists this many groups of ranks; JSON lists every rank


def rank_groups(diagnosis: Diagnosis) -> list[tuple[list[int], str]]:
    """The rank table collapsed for a person: ranks that ended alike (same ending, collective,
    step and first error) share one row; the initiating rank's row comes first, then the odd
    ones out (smallest groups). Each item: (ranks, what they did last)."""
    groups: dict[tuple, list] = {}
    for row in diagnosis.ranks:
        key = (row.ended, row.collective, row.first_error, row.last_step)
        groups.setdefault(key, []).append(row)
    initiating = diagnosis.initiating.rank if diagnosis.initiating else None
    ordered = sorted(groups.values(), key=lambda rows: (initiating not in [row.rank for row in rows], len(rows), rows[0].rank))
    return [([row.rank for row in rows], _rank_state(rows)) for rows in ordered]


def _rank_state(rows) -> str:
    first = rows[0]
    hosts = sorted({row.host for row in rows if row.host})
    parts = [first.ended]
    if first.collective:
        parts.append(f"in {first.collective}")
    if first.first_error and first.ended == "failed":
        parts.append(f"({first.first_error})")
    if first.last_step is not None:
        parts.append(f"last step {first.last_step}")
    if hosts:
        parts.append("on " + ", ".join(hosts[:4]) + (" …" if len(hosts) > 4 else ""))
        if any(not row.host for row in rows):  # (not "on X" for ranks whose host no line tells)
            parts.append(f"({ranks_phrase([row.rank for row in rows if row.host])}; the others' host is not told)")
    return " ".join(parts)


def rank_lines(diagnosis: Diagnosis) -> list[str]:
    """`ranks 0-12,14-15: timed out in ALLGATHER SeqNum=118 on hgx-c07, hgx-c08`, a line per group."""
    groups = rank_groups(diagnosis)
    lines = [f"{ranks_phrase(ranks)}: {state}" for ranks, state in groups[:RANK_GROUPS_SHOWN]]
    if len(groups) > RANK_GROUPS_SHOWN:
        lines.append(f"… and {len(groups) - RANK_GROUPS_SHOWN} more groups (--format json lists every rank)")
    return lines


def exclusion_lines(diagnosis: Diagnosis) -> tuple[str, list[str]]:
    """(a heading naming the hosts, the commands that keep the next run off them), filled in with
    the hosts the logs name; ("", []) when the action is not to exclude a host or none is named."""
    hosts = list(diagnosis.action_detail.get("hosts") or [])
    commands = list(diagnosis.action_detail.get("commands") or [])
    if not hosts or not commands:
        return "", []
    return f"Keep the next run off {', '.join(hosts)}", commands


def because_lines(diagnosis: Diagnosis) -> list[str]:
    """The reasoning, one line per rule that decided something: `text [rule]`."""
    return [f"{item.text} [{item.rule}]" for item in diagnosis.because]
