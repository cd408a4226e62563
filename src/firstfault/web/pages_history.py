"""History pages: the list of past diagnoses, one diagnosis, delete."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from .app import render
from .limits import InputRejected
from .pages_diagnose import result_page

router = APIRouter(include_in_schema=False)


def _history(request: Request):
    history = request.app.state.history
    if history is None:
        raise InputRejected(404, "history_off", "the history is off on this server", "start it without --no-history")
    return history


@router.get("/history")
def history_list(request: Request):
    history = request.app.state.history
    records = history.list() if history is not None else []
    return render(request, "history.html", page="history", records=records)


@router.get("/history/{record_id}")
def history_item(request: Request, record_id: int):
    record = _history(request).get(record_id)
    if record is None:
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history", "it may have been deleted")
    return result_page(request, record.document, record_id=record.id, created=record.created)


@router.post("/history/{record_id}/delete")
def history_delete(request: Request, record_id: int):
    if not _history(request).delete(record_id):
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history", "it may have been deleted")
    return RedirectResponse("/history?deleted=1", status_code=303)
