"""The JSON API: diagnose (the contract of CONTRACT.md), entries, history. Errors: one JSON shape."""
from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from ..errors import UnknownEntryError
from ..render.contract import to_contract
from ..render.entry import entry_to_dict
from . import service
from .app import render, search_index
from .auth import audit
from .ingress import submission_from_body, submission_from_form
from .limits import InputRejected

router = APIRouter()

ERROR_SCHEMA = {
    "type": "object",
    "properties": {"error": {"type": "object", "properties": {
        "status": {"type": "integer"}, "code": {"type": "string"}, "message": {"type": "string"}, "hint": {"type": "string"},
    }}},
}
NOT_FOUND = {404: {"description": "no such item, or the history is off", "content": {"application/json": {"schema": ERROR_SCHEMA}}}}
ERRORS = {
    status: {"description": text, "content": {"application/json": {"schema": ERROR_SCHEMA}}}
    for status, text in (
        (403, "a write from another site (any Origin but this server's, `null` included)"),
        (408, "the request body stopped arriving (see --client-timeout)"),
        (413, "request, expanded logs or line count over the limit"),
        (415, "a body that is not multipart/form-data, application/json or text/plain"),
        (422, "malformed input: no logs, bad JSON or multipart, bad or unsafe archive, too many files"),
    )
}
DIAGNOSE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": {"type": "object", "properties": {
                "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                          "description": "log files, or .zip / .tar.gz / .gz archives of a log folder"},
                "text": {"type": "string", "description": "a pasted log"},
                "mask_hosts": {"type": "boolean"},
            }}},
            "application/json": {"schema": {"type": "object", "properties": {
                "text": {"type": "string"}, "name": {"type": "string"},
                "files": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "text": {"type": "string"}}, "required": ["text"]}},
                "mask_hosts": {"type": "boolean"},
            }}},
            "text/plain": {"schema": {"type": "string"}},
        },
    }
}


def _history(request: Request):
    from .auth import required_history

    return required_history(request)


@router.post("/api/diagnose", tags=["diagnose"], openapi_extra=DIAGNOSE_BODY, responses=ERRORS,
             summary="Diagnose logs; returns the firstfault.diagnosis/1 contract")
async def api_diagnose(
    request: Request,
    mask_hosts: bool = Query(False, description="also mask host names"),
    save: bool = Query(False, description="keep the masked diagnosis in the history"),
):
    limits = request.app.state.limits
    if request.headers.get("content-type", "").startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        submission = await submission_from_form(request, limits)
        submission.mask_hosts = submission.mask_hosts or mask_hosts
        if submission.sample:
            raise InputRejected(422, "no_input", "samples are for the web page; send logs", "")
    else:
        submission = await submission_from_body(request, limits, mask_hosts)
    diagnosis, document = await service.diagnose(request.app, submission, request)
    headers = {}
    if save:
        saved = service.save(request, document)
        if saved is not None:
            headers["location"] = f"/api/history/{saved.id}"
    return JSONResponse(to_contract(diagnosis), headers=headers)


@router.get("/api/entries", tags=["encyclopedia"], summary="List entries, or search them with q")
def api_entries(request: Request, q: str = Query("", max_length=4000), category: str = ""):
    kb = request.app.state.kb
    if q.strip():
        found = [(hit.entry, round(hit.signature_weight + hit.text_score, 4)) for hit in search_index(request.app).search(q, limit=50)]
    else:
        found = [(entry, None) for entry in kb.entries]
    return {"entries": [
        {"id": entry.id, "title": entry.title, "category": entry.category, "severity": entry.severity,
         "status": entry.status, "summary": " ".join(str(entry.get("summary", "")).split()),
         "url": f"/entries/{entry.id}", **({"score": score} if score is not None else {})}
        for entry, score in found if not category or entry.category == category
    ]}


@router.get("/api/entries/{entry_id}", tags=["encyclopedia"], summary="One entry, all its fields",
            responses={404: {"description": "no such entry", "content": {"application/json": {"schema": ERROR_SCHEMA}}}})
def api_entry(request: Request, entry_id: str):
    try:
        entry = request.app.state.kb.get(entry_id)
    except UnknownEntryError as exc:
        raise InputRejected(404, "unknown_entry", exc.message, exc.hint) from None
    return entry_to_dict(entry)


@router.get("/api/history", tags=["history"], responses=NOT_FOUND, summary="Past diagnoses, newest first")
def api_history(request: Request, limit: int = Query(200, ge=1, le=1000)):
    return {"history": [record.summary() for record in _history(request).list(limit)]}


@router.get("/api/history/{record_id}", tags=["history"], responses=NOT_FOUND, summary="One past diagnosis (the masked contract)")
def api_history_item(request: Request, record_id: int):
    record = _history(request).get(record_id)
    if record is None:
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history")
    audit(request, "viewed", f"#{record.id}")
    document = {key: value for key, value in record.document.items() if key not in ("timeline", "upload_notes")}
    return {**record.summary(), "diagnosis": document}


@router.get("/api/history/{record_id}/ask", tags=["history"], responses=NOT_FOUND,
            summary="A follow-up question on a past diagnosis (why not rank 0?), answered from its evidence")
def api_history_ask(request: Request, record_id: int, q: str = Query(..., min_length=1, max_length=300)):
    from .pages_history import ask_record

    history = _history(request)
    record = history.get(record_id)
    if record is None:
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history")
    return ask_record(request, history, record, q).to_dict(q)


@router.delete("/api/history/{record_id}", tags=["history"], responses=NOT_FOUND, summary="Delete one past diagnosis", status_code=204)
def api_history_delete(request: Request, record_id: int):
    if not _history(request).delete(record_id):
        raise InputRejected(404, "not_found", f"no diagnosis {record_id} in the history")
    audit(request, "deleted", f"#{record_id}")
    return Response(status_code=204)


@router.post("/api/history", tags=["history"], status_code=201,
             summary="Keep a diagnosis made elsewhere (watch, run: a firstfault.diagnosis/1 contract) in the team's history")
async def api_history_push(request: Request, origin: str = Query("watch", pattern="^(watch|run|cli|editor)$")):
    from ..ingest.structured import loads_json
    from ..mask import mask_secrets
    from ..model import map_strings
    from .auth import required_history

    required_history(request)  # a 404 when the server keeps no history
    try:
        document = loads_json(await request.body(), max_depth=12)
    except ValueError:
        raise InputRejected(422, "malformed_json", "the body is not a JSON diagnosis", "send firstfault's JSON contract") from None
    if not isinstance(document, dict) or document.get("schema") != "firstfault.diagnosis/1":
        raise InputRejected(422, "not_a_diagnosis", "the body is not a firstfault.diagnosis/1 contract",
                            "send what `firstfault diagnose --format json` prints")
    document = map_strings(document, mask_secrets)  # masked where it was made; again here, where it is kept
    saved = service.save(request, document, origin)
    audit(request, "diagnosed", f"#{saved.id} from {origin}")
    return JSONResponse({"id": saved.id, "seen_before": saved.seen or None}, status_code=201,
                        headers={"location": f"/api/history/{saved.id}"})


@router.get("/api/alerts", tags=["history"], summary="The team's alert webhooks")
def api_alerts(request: Request):
    from .auth import required_history
    from .team_alerts import alert_rules

    history = required_history(request)
    return {"alerts": alert_rules(history.history, history.team)}


@router.post("/api/alerts", tags=["history"], status_code=201,
             summary="Call a webhook on the team's failures (all, or those of one fingerprint)")
async def api_alerts_add(request: Request):
    from ..ingest.structured import loads_json
    from .auth import identity_of, required_history
    from .team_alerts import add_rule

    history = required_history(request)
    try:
        rule = loads_json(await request.body(), max_depth=3)
    except ValueError:
        rule = None
    webhook = rule.get("webhook") if isinstance(rule, dict) else None
    fingerprint = rule.get("fingerprint") if isinstance(rule, dict) else None
    if not isinstance(webhook, str) or not webhook.startswith(("http://", "https://")) or len(webhook) > 2000:
        raise InputRejected(422, "bad_webhook", "give {\"webhook\": \"https://...\"} (and a fingerprint to follow one failure)")
    if fingerprint is not None and (not isinstance(fingerprint, str) or len(fingerprint) > 64):
        raise InputRejected(422, "bad_fingerprint", "a fingerprint is the 16 hex digits `fleet report` or the history shows")
    rule_id = add_rule(history.history, identity_of(request).team, webhook, fingerprint)
    audit(request, "alert-added", f"#{rule_id}")
    return JSONResponse({"id": rule_id}, status_code=201)


@router.delete("/api/alerts/{rule_id}", tags=["history"], responses=NOT_FOUND, status_code=204,
               summary="Stop one of the team's alert webhooks")
def api_alerts_delete(request: Request, rule_id: int):
    from .auth import required_history
    from .team_alerts import delete_rule

    history = required_history(request)
    if not 0 < rule_id < 1 << 63 or not delete_rule(history.history, rule_id, history.team):
        raise InputRejected(404, "not_found", f"no alert {rule_id} of this team")
    audit(request, "alert-deleted", f"#{rule_id}")
    return Response(status_code=204)


@router.get("/api/audit", tags=["history"], summary="Who diagnosed, viewed, asked, deleted, signed in (admins only)")
def api_audit(request: Request, limit: int = Query(500, ge=1, le=5000)):
    from .auth import identity_of

    store = request.app.state.auth
    if store is None:
        raise InputRejected(404, "history_off", "the history is off on this server", "start it without --no-history")
    if not identity_of(request).admin:
        raise InputRejected(403, "admins_only", "the audit log is shown to admins only")
    return {"audit": store.audit_log(limit)}


@router.get("/api", include_in_schema=False)
def api_docs(request: Request):
    """The OpenAPI description as a page of our own (Swagger UI would load its scripts from a CDN)."""
    schema = request.app.openapi()
    operations = [
        {"method": method.upper(), "path": path, "summary": op.get("summary", ""), "description": op.get("description", ""),
         "parameters": op.get("parameters", []), "body": list((op.get("requestBody") or {}).get("content", {})),
         "responses": sorted(op.get("responses", {}))}
        for path, methods in schema.get("paths", {}).items() for method, op in methods.items()
    ]
    return render(request, "api.html", page="api", operations=operations, limits=request.app.state.limits,
                  base=str(request.base_url).rstrip("/"))
