"""Matches -> one Diagnosis: the first fault, where it started, and what is only collateral.

A pure function of its inputs: no I/O, no knowledge of files beyond the matches' origins.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from ..match.context import FAILURE_SIGNATURES, FRAME_SIGNATURES, LAUNCHER_FAILED
from ..model import Diagnosis, Evidence, Finding, InputSummary, Match
from ..placeholders import fill_placeholders
from .confidence import traceback_ended_run
from .devices import bus_of, rank_for_bus
from .events import Incident, incidents, line_winners, time_key
from .hangs import TIMEOUT_ENTRY, analyse, is_disconnect
from .nonfatal import without_nonfatal
from .odd_one_out import odd_rank

SPECIFICITY_MARGIN = 0.35  # an incident this much weaker than the strongest one is not the primary
EVIDENCE_LINES = 8


def evidence_of(match: Match) -> Evidence:
    origin = match.line.origin
    signature = match.signature
    return Evidence(origin.source, origin.line, origin.rank, origin.host, origin.time, match.line.text,
                    signature.entry_id, signature.name, signature.role)


CONSEQUENCE_SLACK_SECONDS = 1.0
LAUNCHER_SLACK_SECONDS = 0.2  # the launcher's report has its own exact time; only host clocks differ
SURVIVABLE_WEIGHT = 0.7  # errors this generic can be caught and logged by a healthy run
SURVIVED_AFTER_LINES = 20


def correlate(matches: list[Match], inputs: InputSummary, single_process: bool,
              source_lines: dict | None = None, pid_ranks: dict | None = None) -> Diagnosis:
    matches = without_nonfatal(matches)
    diagnosis = _verdict(matches, inputs, single_process, source_lines, pid_ranks)
    classes = {(m.entry_id, m.signature.name): m.signature.core_class for m in matches if m.signature.core_class}
    return _with_core_classes(diagnosis, classes)


def _with_core_classes(diagnosis: Diagnosis, classes: dict[tuple, str]) -> Diagnosis:
    """Each finding also names the core class its entry specialises (see Finding): the class
    of the signature of its first evidence line, else that of any of the entry's signatures."""
    if not classes:
        return diagnosis
    by_entry = {entry_id: core for (entry_id, _name), core in sorted(classes.items(), reverse=True)}

    def classed(finding: Finding | None) -> Finding | None:
        if finding is None:
            return None
        first = finding.evidence[0] if finding.evidence else None
        core = classes.get((finding.failure_id, first.signature)) if first else None
        core = core or by_entry.get(finding.failure_id)
        return replace(finding, failure_class=core) if core else finding

    return replace(diagnosis, primary=classed(diagnosis.primary),
                   collateral=tuple(classed(item) for item in diagnosis.collateral),
                   candidates=tuple(classed(item) for item in diagnosis.candidates))


def _verdict(matches: list[Match], inputs: InputSummary, single_process: bool,
             source_lines: dict | None, pid_ranks: dict | None) -> Diagnosis:
    winners = line_winners(matches)
    roots = incidents(winners, ("root",))
    if roots and _all_survived(roots, winners, matches, source_lines or {}):
        return Diagnosis("healthy", None, None, (), (), inputs, (
            "errors were logged but the run went on and nothing failed afterwards: they were caught and survived",))
    notes: list[str] = []
    primary, initiating_match, reason = _choose_primary(roots, winners, matches, list(inputs.ranks))
    if reason:
        notes.append(reason)
    if primary is None:
        return _no_primary(winners, matches, inputs, notes)
    odd = odd_rank([m for m in winners if m.entry_id == primary])
    if odd is not None and odd != initiating_match.line.origin.rank:
        initiating_match = min((m for m in winners if m.entry_id == primary and m.line.origin.rank == odd), key=time_key)
        notes.append(f"every rank reported the disagreement; rank {odd} is the one whose own collective differs from the others'")
    initiating = evidence_of(initiating_match)
    if initiating.rank is None:
        rank, how = _rank_from_elsewhere(matches, initiating_match, single_process, pid_ranks or {})
        if rank is not None:
            initiating = replace(initiating, rank=rank)
            notes.append(f"the failing line carries no rank; rank {rank} {how}")
    if not inputs.timed and len(inputs.files) > 1 and len({m.line.origin.source for m in winners}) > 1:
        notes.append("some files carry no timestamps: the order across files is uncertain, so the first fault is judged by file order there")
    primary_finding = _finding(primary, [m for m in winners if m.entry_id == primary], initiating_match, initiating.rank)
    collateral = _collateral(winners, primary, initiating_match)
    rivals = [m.signature.weight for m in winners if m.role != "collateral" and m.entry_id != primary]
    primary_finding = replace(primary_finding, confidence=traceback_ended_run(
        primary_finding.confidence, initiating_match, matches, rivals))
    candidates = _candidates(winners, primary_finding)
    fix_values = _fix_values(initiating_match, primary_finding, initiating.rank)
    return Diagnosis("failure", primary_finding, initiating, tuple(collateral), tuple(candidates), inputs,
                     tuple(notes), (), fix_values)


def _all_survived(roots: list[Incident], winners: list[Match], matches: list[Match], source_lines: dict) -> bool:
    """True when every root error is generic, the run kept writing long after it, and no
    sign of a failure (collateral, non-zero exit, fatal signal) exists anywhere."""
    if any(m.role in ("collateral", "symptom") for m in winners):
        return False
    if any(m.signature.name in (*LAUNCHER_FAILED, "failed-exit", "failed-signal") for m in matches):
        return False
    for incident in roots:
        last = incident.matches[-1].line.origin
        if incident.weight > SURVIVABLE_WEIGHT:
            return False
        if source_lines.get(last.source, 0) - last.line < SURVIVED_AFTER_LINES:
            return False
    return True


_PID_IN_TEXT = re.compile(r"\bpid[=: ]+(\d+)|Killed process (\d+)")


def _same_event(matches: list[Match], initiating: Match, window: int = 20) -> list[Match]:
    """The initiating line, then the lines of the same failure just after it in the same file."""
    origin = initiating.line.origin
    following = [m for m in matches if m.entry_id == initiating.entry_id and m.line.origin.source == origin.source
                 and 0 < m.line.origin.line - origin.line <= window]
    return [initiating, *sorted(following, key=lambda m: m.line.origin.line)]


def _pid_named(match: Match) -> int | None:
    captured = str(match.captures.get("pid", ""))
    if captured.isdigit():
        return int(captured)
    found = _PID_IN_TEXT.search(match.line.text)
    return int(found.group(1) or found.group(2)) if found else None


def _rank_from_elsewhere(matches: list[Match], initiating: Match, single_process: bool,
                         pid_ranks: dict) -> tuple[int | None, str]:
    for match in _same_event(matches, initiating):
        pid = _pid_named(match)
        if pid is not None and pid in pid_ranks:
            return pid_ranks[pid], f"is the process (pid {pid}) the log names at {match.line.origin.source}:{match.line.origin.line}"
    bus = bus_of(initiating)
    if bus is not None:
        rank = rank_for_bus(bus, initiating.line.origin.host, matches)
        if rank is not None:
            return rank, f"drives the GPU on PCI bus {bus} that the line names"
    same_fault = _same_fault_named_nearby(matches, initiating)
    if same_fault is not None:
        origin = same_fault.line.origin
        return origin.rank, f"reports the same failure a few lines later ({origin.source}:{origin.line})"
    if single_process:
        return 0, "is the only process"
    return _launcher_failed_rank(matches, initiating), "is the one the launcher reported failing first"


SAME_FAULT_LINES = 200
SIGTERM_CODES = ("-15", "15", "143")  # a launcher's own SIGTERM to the others, not a failure


def _same_fault_named_nearby(matches: list[Match], initiating: Match) -> Match | None:
    """A later line of the same file and failure that names a rank, when all such lines name one
    (an unprefixed CUDA error, then the watchdog's `[Rank 1] ... terminated with exception` for it)."""
    origin = initiating.line.origin
    later = [m for m in matches if m.entry_id == initiating.entry_id and m.line.origin.source == origin.source
             and m.line.origin.rank is not None and 0 < m.line.origin.line - origin.line <= SAME_FAULT_LINES]
    if len({m.line.origin.rank for m in later}) != 1:
        return None
    return min(later, key=lambda m: m.line.origin.line)


def _launcher_failed_rank(matches: list[Match], initiating: Match) -> int | None:
    """The rank torchrun reported as failing first with a real error (not its own SIGTERM)."""
    reports = [m for m in matches if m.signature.name in LAUNCHER_FAILED
               and m.captures.get("code") not in SIGTERM_CODES and m.line.origin.rank is not None]
    host = initiating.line.origin.host
    same_host = [m for m in reports if host and m.line.origin.host == host]
    reports = same_host or reports
    if not reports:
        return None
    return min(reports, key=time_key).line.origin.rank


def _first_timeout(winners: list[Match]) -> tuple | None:
    timeouts = [m for m in winners if m.entry_id == TIMEOUT_ENTRY and m.role == "collateral"
                and m.line.origin.time is not None and not is_disconnect(m)]
    return min(map(time_key, timeouts)) if timeouts else None


def _first_launcher_failure(matches: list[Match]) -> tuple | None:
    """When a launcher first reported a worker exiting with an error (not its own SIGTERM)."""
    reports = [m for m in matches if m.signature.name in LAUNCHER_FAILED and m.line.origin.time is not None
               and m.captures.get("code") not in SIGTERM_CODES]
    return min(map(time_key, reports)) if reports else None


def _not_after(boundary: tuple | None, match: Match, slack: float = CONSEQUENCE_SLACK_SECONDS) -> bool:
    """Errors that begin after the boundary (the first collective timeout, the launcher's first
    failure report) are its consequences (store and connection errors of agents whose peers gave
    up), not a cause. The slack allows for clocks of different hosts and for times carried
    forward from earlier lines."""
    if boundary is None or match.line.origin.time is None:
        return True
    return time_key(match)[0] <= boundary[0] + slack


def _choose_primary(roots: list[Incident], winners: list[Match], matches: list[Match], ranks: list[int]):
    """(failure_id, initiating match, note) or (None, None, note)."""
    first_timeout = _first_timeout(winners)
    symptoms = [match for match in winners if match.role == "symptom" and _not_after(first_timeout, match)]
    roots = [incident for incident in roots if _not_after(first_timeout, incident.first)]
    # once the launcher has reported a worker failing, what other processes print (agents losing
    # the store, workers killed) is teardown: errors before that report come first
    first_failure = _first_launcher_failure(matches)
    if any(_not_after(first_failure, incident.first, LAUNCHER_SLACK_SECONDS) for incident in roots):
        roots = [incident for incident in roots if _not_after(first_failure, incident.first, LAUNCHER_SLACK_SECONDS)]
        symptoms = [match for match in symptoms if _not_after(first_failure, match, LAUNCHER_SLACK_SECONDS)]
    if roots:
        strongest = max(incident.weight for incident in roots)
        eligible = [incident for incident in roots if incident.weight >= strongest - SPECIFICITY_MARGIN]
        first = eligible[0]
        # A generic root (any exception) loses to an earlier or stronger specific symptom.
        specific = [m for m in symptoms if m.signature.weight >= strongest + SPECIFICITY_MARGIN / 2]
        if specific:
            earliest = min(specific, key=time_key)
            if time_key(earliest) < time_key(first.first) or earliest.signature.weight >= strongest + SPECIFICITY_MARGIN:
                return earliest.entry_id, earliest, ""
        return first.failure_id, first.strongest, ""
    if symptoms:
        best = max(match.signature.weight for match in symptoms)
        chosen = min((m for m in symptoms if m.signature.weight >= best - 0.1), key=time_key)
        return chosen.entry_id, chosen, ""
    collateral = [match for match in winners if match.role == "collateral"]
    frames = [match for match in matches if match.signature.name in FRAME_SIGNATURES]
    verdict = analyse(collateral, frames, ranks)
    if verdict is None:
        return None, None, ""
    anchor = verdict.evidence or min(collateral, key=time_key)
    if verdict.rank is not None and anchor.line.origin.rank != verdict.rank:
        anchor = _with_rank(anchor, verdict.rank)
    return verdict.failure_id, anchor, f"only collective timeouts were printed: {verdict.reason}"


def _with_rank(match: Match, rank: int) -> Match:
    from dataclasses import replace

    origin = replace(match.line.origin, rank=rank)
    return replace(match, line=replace(match.line, origin=origin))


def _finding(failure_id: str, own: list[Match], initiating: Match, rank: int | None = None) -> Finding:
    ordered = sorted(own, key=time_key)
    if initiating not in ordered:
        ordered.insert(0, initiating)
    else:
        ordered.remove(initiating)
        ordered.insert(0, initiating)
    weights = [m.signature.weight for m in own if m.role != "collateral"] or [initiating.signature.weight]
    confidence = min(0.99, max(weights) + 0.05 * min(len({m.line.origin.rank for m in own}), 1))
    ranks = sorted({m.line.origin.rank for m in own if m.line.origin.rank is not None})
    hosts = sorted({m.line.origin.host for m in own if m.line.origin.host})
    message = _fill(initiating.signature.message, initiating, rank)
    return Finding(failure_id, confidence, tuple(evidence_of(m) for m in ordered[:EVIDENCE_LINES]),
                   tuple(ranks), tuple(hosts), len(own), message)


def _fill(template: str, match: Match, rank: int | None = None) -> str:
    """The signature's message with the line's values; `rank` when it was named from elsewhere."""
    origin_rank = match.line.origin.rank if match.line.origin.rank is not None else rank
    values = {"rank": origin_rank, "host": match.line.origin.host, **match.captures}
    return fill_placeholders(template, values) if template else ""


def _collateral(winners: list[Match], primary: str, initiating: Match) -> list[Finding]:
    groups: dict[str, list[Match]] = defaultdict(list)
    for match in winners:
        if match is initiating or (match.entry_id == primary and match.role != "collateral"):
            continue
        groups[match.entry_id].append(match)
    findings = []
    for entry_id, members in groups.items():
        members.sort(key=time_key)
        ranks = sorted({m.line.origin.rank for m in members if m.line.origin.rank is not None})
        hosts = sorted({m.line.origin.host for m in members if m.line.origin.host})
        first = members[0]
        summary = _collateral_summary(first, ranks, len(members))
        findings.append(Finding(entry_id, first.signature.weight, (evidence_of(first),), tuple(ranks), tuple(hosts), len(members), summary))
    return sorted(findings, key=lambda finding: (-len(finding.ranks), -finding.count))


def _collateral_summary(first: Match, ranks: list[int], count: int) -> str:
    who = f"{len(ranks)} rank{'s' if len(ranks) != 1 else ''}" if ranks else f"{count} line{'s' if count != 1 else ''}"
    detail = _fill(first.signature.message, first) or first.signature.name.replace("-", " ")
    return f"{who}: {detail}"


def _candidates(winners: list[Match], primary: Finding) -> list[Finding]:
    best: dict[str, float] = {}
    for match in winners:
        if match.role == "collateral" or match.entry_id == primary.failure_id:
            continue
        best[match.entry_id] = max(best.get(match.entry_id, 0.0), match.signature.weight * 0.9)
    others = [Finding(entry_id, min(weight, primary.confidence - 0.01)) for entry_id, weight in best.items()]
    others.sort(key=lambda finding: -finding.confidence)
    return [Finding(primary.failure_id, primary.confidence), *others]


def _fix_values(initiating: Match, primary: Finding, rank: int | None = None) -> dict:
    origin = initiating.line.origin
    values = {key: value for key, value in initiating.captures.items()}
    if origin.rank is not None or rank is not None:
        values["rank"] = origin.rank if origin.rank is not None else rank
    if origin.host:
        values["host"] = origin.host
    return values


def _no_primary(winners: list[Match], matches: list[Match], inputs: InputSummary, notes: list[str]) -> Diagnosis:
    failure_signs = [m for m in matches if m.signature.name in FAILURE_SIGNATURES and m.signature.name != "failed-word"]
    collateral = [m for m in winners if m.role == "collateral"]
    if not failure_signs and not collateral:
        return Diagnosis("healthy", None, None, (), (), inputs, tuple(notes))
    lines = sorted([*collateral, *failure_signs], key=time_key)[:EVIDENCE_LINES]
    notes.append("something failed, but no knowledge-base entry explains it: the lines below are the most likely errors")
    return Diagnosis("unknown", None, None, tuple(_collateral(winners, "", None)), (), inputs, tuple(notes),
                     tuple(evidence_of(m) for m in lines))
