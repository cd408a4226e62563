"""History pages: the list of past diagnoses, one diagnosis (and questions on it), delete."""
from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse

from .app import render
from .auth import audit
from .limits import InputRejected
from .pages_diagnose import result_page

router = APIRouter(include_in_schema=False)


def _history(request: Request):
    from .auth import required_history

    return required_history(request)


@router.get("/history")
def history_list(request: Request):
    from .auth import team_history

    history = team_history(request)
    records = history.list() if history is not None else []
    return render(request, "history.html", page="history", records=records)


@router.get("/history/{record_id}")
def history_item(request: Request, record_id: int):
    history = _history(request)
    record = _record(history, record_id)
    audit(request, "viewed", f"#{record.id}")
    earlier = history.recurrence(record.document, before=record.id)
    seen = earlier.sentence() if earlier is not None else ""
    return result_page(request, record.document, record_id=record.id, created=record.created, seen_before=seen)


@router.get("/history/{record_id}/ask")
def history_ask(request: Request, record_id: int, q: str = Query("", max_length=300)):
    """A follow-up question on a past diagnosis, answered from it (firstfault.ask)."""
    history = _history(request)
    record = _record(history, record_id)
    reply = ask_record(request, history, record, q)
    return render(request, "ask.html", page="history", question=q or "(no question)", reply=reply,
                  record_id=record.id, title=record.title)


def ask_record(request: Request, history, record, question: str):
    from ..ask import answer, intent_of

    audit(request, "asked", f"#{record.id}: {question[:200]}")
    hosts = tuple((record.document.get("inputs") or {}).get("hosts") or ())
    healthy = history.last_healthy(record.document, before=record.id)
    return answer(intent_of(question, hosts), record.document, request.app.state.kb,
                  history.recurrence(record.document, before=record.id), baseline=healthy.document if healthy else None)


def _record(history, record_id: int):
    record = history.get(record_id)
    if record is None:
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history", "it may have been deleted")
    return record


@router.post("/history/{record_id}/delete")
def history_delete(request: Request, record_id: int):
    if not _history(request).delete(record_id):
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history", "it may have been deleted")
    audit(request, "deleted", f"#{record_id}")
    return RedirectResponse("/history?deleted=1", status_code=303)
