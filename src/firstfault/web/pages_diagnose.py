"""Diagnose pages: the paste/upload form with samples, and the result page."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ..render.entry_sections import FIX, VERIFY, build_sections
from . import samples, service
from .app import render
from .ingress import submission_from_form
from .report import labels_of
from .timeline import caption_of

router = APIRouter(include_in_schema=False)


@router.get("/")
def diagnose_form(request: Request):
    return render(request, "diagnose.html", page="diagnose", samples=samples.SAMPLES, limits=request.app.state.limits)


@router.post("/diagnose")
async def diagnose_submit(request: Request):
    submission = await submission_from_form(request, request.app.state.limits)
    _, document = await service.diagnose(request.app, submission, request)
    saved = service.save(request, document)
    if saved is not None:
        return RedirectResponse(f"/history/{saved.id}", status_code=303)
    return result_page(request, document, record_id=None)


def fix_sections(kb, document: dict):
    """The entry's Fix and Verification sections as every report shows them: placeholders filled
    from the log, the fixes chosen for the stack the logs show (the document's `stack`)."""
    primary = document.get("primary")
    entry_id = (primary or {}).get("entry_id") or (primary or {}).get("failure_id")  # older records: no entry_id
    if not entry_id or entry_id not in kb:
        return None, []
    entry = kb.get(entry_id)
    initiating = primary.get("initiating") or {}
    values = {key: value for key, value in (primary.get("fix_values") or {}).items() if value is not None}
    for key in ("rank", "host"):
        if initiating.get(key) is not None:
            values.setdefault(key, initiating[key])
    stack = [item["id"] for item in document.get("stack") or () if isinstance(item, dict) and "id" in item]
    evidence = [item.get("text") or "" for item in primary.get("evidence") or () if isinstance(item, dict)]
    sections = [section for section in build_sections(entry, values, stack=stack, evidence=evidence)
                if section.heading in (FIX, VERIFY)]
    return entry, sections


def result_page(request: Request, document: dict, record_id: int | None, created: float | None = None,
                seen_before: str = ""):
    from ..model import Skipped
    from ..render.diagnosis_text import ACTION_TEXT, expected_empty, no_single_rank

    kb = request.app.state.kb
    entry, sections = fix_sections(kb, document)
    items = [item for item in (document.get("inputs") or {}).get("skipped") or () if isinstance(item, dict)]
    skipped = [item for item in items if not expected_empty(Skipped(str(item.get("source")), str(item.get("reason"))))]
    titles = {item.id: item.title for item in kb.entries}
    return render(request, "result.html", page="diagnose", doc=document, entry=entry, sections=sections,
                  titles=titles, record_id=record_id, created=created, labels=labels_of(document),
                  timeline_caption=caption_of(document), skipped=skipped, expected_empty=len(items) - len(skipped),
                  action_texts=ACTION_TEXT, seen_before=seen_before,
                  no_single_rank=no_single_rank(step.get("rule") for step in document.get("because") or ()
                                                if isinstance(step, dict)))
