"""The document a result page is drawn from: the JSON contract plus the timeline's points.

The page, the history and the API all start from `to_contract(diagnosis)`; the page adds every
evidence line of every finding (the contract keeps only the first line of a collateral group) so
the timeline can show the whole cascade. Everything in it is already masked by the pipeline.
"""
from __future__ import annotations

from ..model import Diagnosis, Evidence
from ..render.contract import evidence_to_dict, to_contract
from ..render.diagnosis_text import rank_groups, ranks_text, source_labels

MAX_POINTS = 2000


def _point(evidence: Evidence, kind: str, failure_id: str) -> dict:
    point = evidence_to_dict(evidence)
    point.pop("signature")
    return {**point, "t": evidence.time, "failure_id": evidence.failure_id or failure_id, "kind": kind}


def timeline_points(diagnosis: Diagnosis) -> list[dict]:
    """Every evidence line as one point: kind is first (the first fault), primary, collateral or error."""
    points: dict[tuple[str, int], dict] = {}
    initiating = diagnosis.initiating
    if initiating is not None:
        primary_id = diagnosis.primary.failure_id if diagnosis.primary else ""
        points[(initiating.source, initiating.line)] = _point(initiating, "first", primary_id)
    groups = [(diagnosis.primary, "primary")] if diagnosis.primary else []
    groups += [(finding, "collateral") for finding in diagnosis.collateral]
    for finding, kind in groups:
        for evidence in finding.evidence:
            points.setdefault((evidence.source, evidence.line), _point(evidence, kind, finding.failure_id))
    for evidence in diagnosis.error_lines:
        points.setdefault((evidence.source, evidence.line), _point(evidence, "error", ""))
    result = list(points.values())
    result += _unshown_collateral_ranks(diagnosis, result)
    return result[:MAX_POINTS]


def _unshown_collateral_ranks(diagnosis: Diagnosis, points: list[dict]) -> list[dict]:
    """A point for each collateral rank the diagnosis names but keeps no line of.

    The engine may keep only the first line of a collateral group; its other ranks still belong in
    the picture (the cascade), drawn hollow at the time of the group's first line, and marked as
    such (`approx`) so the page does not pretend to know their exact time.
    """
    shown = {(point["rank"], point["failure_id"]) for point in points}
    extra = []
    for finding in diagnosis.collateral:
        first = finding.evidence[0] if finding.evidence else None
        if first is None:
            continue
        for rank in finding.ranks:
            if (rank, finding.failure_id) in shown:
                continue
            point = _point(first, "collateral", finding.failure_id)
            point.update(rank=rank, host=None, source=None, line=None, approx=True,
                         text=f"rank {rank}: {finding.message or finding.failure_id} (its own line is not kept; "
                              f"drawn at the group's first line)")
            extra.append(point)
    return extra


def build_document(diagnosis: Diagnosis, notes: list[str] | tuple[str, ...] = ()) -> dict:
    """What the history stores and the result page shows: contract + timeline + ingress notes."""
    document = to_contract(diagnosis)
    document["timeline"] = timeline_points(diagnosis)
    document["rank_groups"] = [{"ranks": ranks_text(ranks), "state": state} for ranks, state in rank_groups(diagnosis)]
    document["upload_notes"] = list(notes)
    return document


def labels_of(document: dict) -> dict[str, str]:
    """How the page names each file: its shortest path suffix no other file shares (the labels of
    the terminal and Markdown reports), so `stderr.log:14` never names two files."""
    sources = list((document.get("inputs") or {}).get("files") or [])
    primary = document.get("primary") or {}
    groups = [primary.get("evidence") or [], [item.get("first") or {} for item in document.get("collateral") or []],
              document.get("error_lines") or [], document.get("timeline") or [], [primary.get("initiating") or {}]]
    sources += [item.get("source") for group in groups for item in group if isinstance(item, dict) and item.get("source")]
    return source_labels(sources)
