"""Matches -> one Diagnosis: build the facts, run the rules, assemble what they decided.

A pure function of its inputs: no I/O, no knowledge of files beyond the matches' origins. The
decisions themselves are the named rules of correlate/rules; this module only turns their
decision into findings (primary, collateral, candidates) and fix values.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from ..model import Diagnosis, Evidence, Finding, InputSummary, Match
from ..placeholders import fill_placeholders
from .confidence import traceback_ended_run
from .events import time_key
from .facts import Facts, build_facts
from .rank_table import rank_rows
from .relations import Relations
from .rules import Decision
from .rules.table import STAGES, decide

EVIDENCE_LINES = 8


def evidence_of(match: Match) -> Evidence:
    origin = match.line.origin
    signature = match.signature
    return Evidence(origin.source, origin.line, origin.rank, origin.host, origin.time, match.line.text,
                    signature.entry_id, signature.name, signature.role, origin.rank_from, origin.host_from)


def correlate(matches: list[Match], inputs: InputSummary, single_process: bool,
              source_lines: dict | None = None, relations: Relations | None = None, activity=(),
              identity=None) -> Diagnosis:
    facts = build_facts(matches, inputs, single_process, source_lines, relations, activity, identity)
    decision = decide(facts)
    diagnosis = diagnosis_of(facts, decision)
    world = facts.identity.world
    return replace(diagnosis, ranks=rank_rows(facts, facts.rows, _decided_rank(decision)),
                   world_size=world.size if world else None)


def _decided_rank(decision) -> tuple | None:
    """The rank a rule tied the first fault to, with its line and host (the table shows it failed there)."""
    if decision.status != "failure" or decision.initiating is None or decision.rank_decided:
        return None  # a hang verdict points at what a rank last did, not at an error of its own
    origin = decision.initiating.line.origin
    rank = origin.rank if origin.rank is not None else decision.rank
    return (rank, decision.initiating, origin.host or decision.host) if rank is not None else None


def diagnosis_of(facts: Facts, decision: Decision) -> Diagnosis:
    notes = list(decision.notes)
    if decision.status == "healthy":
        return Diagnosis("healthy", None, None, (), (), facts.inputs, tuple(notes), because=decision.because)
    if decision.status == "unknown":
        return _unknown(facts, decision)
    initiating_match = decision.initiating
    initiating = _initiating_evidence(decision)
    winners = list(facts.winners)
    if not facts.inputs.timed and len(facts.inputs.files) > 1 and len({m.line.origin.source for m in winners}) > 1:
        notes.append("some files carry no timestamps: the order across files is uncertain, so the first fault is judged by file order there")
    primary = _finding(decision.primary, [m for m in winners if m.entry_id == decision.primary], initiating_match,
                       initiating)
    rivals = [m.signature.weight for m in winners if m.role != "collateral" and m.entry_id != decision.primary]
    primary = replace(primary, confidence=traceback_ended_run(primary.confidence, initiating_match,
                                                              list(facts.matches), rivals))
    if decision.failure_class:
        primary = replace(primary, failure_class=decision.failure_class)
    went_past = set(map(id, decision.went_past))
    collateral = _collateral([m for m in winners if id(m) not in went_past], decision.primary, initiating_match, facts,
                             initiating.rank)
    candidates = _candidates(winners, primary)
    diagnosis = Diagnosis("failure", primary, initiating, tuple(collateral), tuple(candidates), facts.inputs,
                          tuple(notes), (), _fix_values(initiating_match, initiating), decision.because,
                          decision.action, {key: list(value) for key, value in decision.action_detail},
                          went_past=tuple(_collateral([m for m in winners if id(m) in went_past], "", None, facts)))
    return with_core_classes(diagnosis, facts)


# the rules that tie a rank to a line that names none (a join, the only process) or pick the
# rank a hang started on: what they said is how the logs tie the rank to the first fault's line
_RANK_RULES = frozenset(item.id for stage in STAGES if stage.name in ("hang", "rank") for item in stage.rules)
_HOST_RULES = frozenset(item.id for stage in STAGES if stage.name == "host" for item in stage.rules)


def _initiating_evidence(decision) -> Evidence:
    """The first fault's line, with the rank and host the rules tied it to where it names none."""
    initiating = evidence_of(decision.initiating)
    if initiating.rank is None and decision.rank is not None:
        initiating = replace(initiating, rank=decision.rank)
    if initiating.rank is not None and initiating.rank_from is None:
        initiating = replace(initiating, rank_from=_reasoning(decision, _RANK_RULES))
    if decision.host and not initiating.host:
        initiating = replace(initiating, host=decision.host, host_from=_reasoning(decision, _HOST_RULES))
    if initiating.host is not None and initiating.host_from is None:  # a hang rule's line: the rank's last one
        initiating = replace(initiating, host_from="the lines of its rank, which show that host")
    return initiating


def _reasoning(decision, rules: frozenset) -> str | None:
    """What the last of `rules` to apply said, as how the logs tie a rank or host to a line."""
    said = [item.text for item in decision.because if item.rule in rules]
    return f"the reasoning: {said[-1]}" if said else None


def _unknown(facts: Facts, decision: Decision) -> Diagnosis:
    from .rules.outcome import FAILURE_SIGNS

    signs = [m for m in facts.matches if m.signature.name in FAILURE_SIGNS]
    lines = _one_per_line(sorted([*facts.collateral, *signs], key=time_key))[:EVIDENCE_LINES]
    return Diagnosis("unknown", None, _initiating_evidence(decision) if decision.initiating else None,
                     tuple(_collateral(list(facts.winners), "", None, facts)), (), facts.inputs,
                     decision.notes, tuple(evidence_of(m) for m in lines), because=decision.because,
                     action=decision.action)


def _one_per_line(matches: list[Match]) -> list[Match]:
    """Each line once (a failure table's `exitcode : 1` row is both the entry's row and a failure
    sign): the match of a knowledge-base entry where there is one."""
    kept: dict[tuple, Match] = {}
    for match in matches:
        where = (match.line.origin.source, match.line.origin.line)
        if where not in kept or (kept[where].entry_id is None and match.entry_id is not None):
            kept[where] = match
    return list(kept.values())


def with_core_classes(diagnosis: Diagnosis, facts: Facts) -> Diagnosis:
    """Each finding also names the core class its entry specialises (see Finding): that of the
    signature of its first evidence line (a signature may specialise another class than its
    entry), else the entry's own."""
    by_signature = {(m.entry_id, m.signature.name): m.signature.core_class for m in facts.matches if m.signature.core_class}

    def classed(finding: Finding | None) -> Finding | None:
        if finding is None or finding.failure_class:
            return finding
        first = finding.evidence[0] if finding.evidence else None
        core = by_signature.get((finding.failure_id, first.signature)) if first else None
        core = core or facts.relations.core(finding.failure_id)
        return replace(finding, failure_class=core) if core and core != finding.failure_id else finding

    return replace(diagnosis, primary=classed(diagnosis.primary),
                   collateral=tuple(classed(item) for item in diagnosis.collateral),
                   went_past=tuple(classed(item) for item in diagnosis.went_past),
                   candidates=tuple(classed(item) for item in diagnosis.candidates))


def _finding(failure_id: str, own: list[Match], initiating: Match, where: Evidence | None = None) -> Finding:
    # (a rule may have re-tied the initiating line to another rank, or to none: it is one line still,
    # listed as the rules tied it, or as its own when they tied it to no rank: "[rank0]: ..." is rank 0's)
    here = (initiating.line.origin.source, initiating.line.origin.line, initiating.signature.name)
    same = [m for m in own if (m.line.origin.source, m.line.origin.line, m.signature.name) == here]
    untied = initiating.line.origin.rank is None and bool(same) and same[0].line.origin.rank is not None
    ordered = [same[0] if untied else initiating, *(m for m in sorted(own, key=time_key) if m not in same)]
    weights = [m.signature.weight for m in own if m.role != "collateral"] or [initiating.signature.weight]
    confidence = min(0.99, max(weights) + 0.05 * min(len({m.line.origin.rank for m in own}), 1))
    ranks = sorted({m.line.origin.rank for m in own if m.line.origin.rank is not None})
    hosts = sorted({m.line.origin.host for m in own if m.line.origin.host})
    message = _fill(initiating.signature.message, initiating, where)
    evidence = [evidence_of(m) for m in ordered[:EVIDENCE_LINES]]
    if where is not None and not untied:
        evidence[0] = where  # the first line, with the rank and host the rules tied it to
    return Finding(failure_id, confidence, tuple(evidence), tuple(ranks), tuple(hosts), len(own), message)


def _fill(template: str, match: Match, where: Evidence | None = None) -> str:
    """The signature's message with the line's values; `where`: the initiating evidence, whose
    rank and host may have been named from elsewhere when the line itself names none."""
    origin = match.line.origin
    rank = origin.rank if origin.rank is not None or where is None else where.rank
    values = {"rank": rank, "host": origin.host or (where.host if where else None), **match.captures}
    return fill_placeholders(template, values) if template else ""


def _collateral(winners: list[Match], primary: str, initiating: Match | None, facts: Facts,
                started: int | None = None) -> list[Finding]:
    groups: dict[str, list[Match]] = defaultdict(list)
    for match in winners:
        if match is initiating or (match.entry_id == primary and match.role != "collateral"):
            continue
        groups[match.entry_id].append(match)
    findings = []
    # `started`: the rank where it started is the cause, not a consequence (its launcher's report of it is)
    for entry_id, members in groups.items():
        members.sort(key=time_key)
        ranks = sorted({rank for rank in (_rank_of(m, facts) for m in members) if rank is not None} - {started})
        hosts = sorted({m.line.origin.host for m in members if m.line.origin.host})
        first = members[0]
        summary = _collateral_summary(first, ranks, len(members))
        findings.append(Finding(entry_id, first.signature.weight, (evidence_of(first),), tuple(ranks), tuple(hosts), len(members), summary))
    return sorted(findings, key=lambda finding: (-len(finding.ranks), -finding.count))


def _rank_of(match: Match, facts: Facts) -> int | None:
    """The rank a line is from: its own prefix, else the process (pid) it names, as the identity
    map ties pids to ranks (`Sending process 90533 closing signal SIGTERM`)."""
    if match.line.origin.rank is not None:
        return match.line.origin.rank
    pid = str(match.captures.get("pid", ""))
    if not pid.isdigit():
        return None
    from .identity import pid_key

    named = facts.identity.rank_of(pid_key(int(pid), match.line.origin.host))
    return named.value if named is not None else None


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


def _fix_values(initiating_match: Match, initiating: Evidence) -> dict:
    values = dict(initiating_match.captures)
    if initiating.rank is not None:
        values["rank"] = initiating.rank
    if initiating.host:
        values["host"] = initiating.host
    return values
