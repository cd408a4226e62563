"""Turn a request (form, multipart, JSON or plain text) into named log texts, within limits.

Uploads stay in memory: the multipart parser is told to spool up to the request limit, so no
upload spills into a temporary file. The raw text is handed to the pipeline, which masks it at
ingress; nothing here keeps, logs or echoes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import parse_qsl

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.types import ASGIApp, Receive, Scope, Send

from ..ingest.structured import loads_json
from ..mask import mask_secrets
from .archives import Budget, expand
from .limits import InputRejected, Limits, malformed, size, too_large

TRUE_WORDS = {"1", "true", "on", "yes"}


@dataclass
class Submission:
    """The logs of one request, ready for `diagnose_texts`, and what was left out.

    A request's body is read on the event loop; what costs CPU and memory (expanding archives,
    parsing a JSON body, counting lines) is left in `prepare`, which the service runs in a
    worker thread once the request holds a diagnosis slot (service.py)."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mask_hosts: bool = False
    sample: str = ""
    prepare: Callable[[], "Submission"] | None = None  # -> the submission with its files
    raw_bytes: int = 0  # what the request sent, before any archive is expanded

    def prepared(self) -> "Submission":
        return self.prepare() if self.prepare is not None else self


def upload_name(raw: str | None, fallback: str) -> str:
    """A display name for an upload: a relative path with no `..`, secrets masked, or the fallback."""
    parts = [part for part in (raw or "").replace("\\", "/").split("/") if part not in ("", ".", "..")]
    return mask_secrets("/".join(parts)[-200:]) or fallback


def text_bytes(text: str) -> bytes:
    """A pasted text as bytes: surrogate escapes (`\\udc8b`) stand for the bytes they escape; any
    other lone surrogate (`\\ud800`) becomes the bytes of an invalid UTF-8 sequence, which the reader
    reports and replaces."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


UNREADABLE_HINT = ("paste the log text, or upload text logs (.log, .txt, .out, or .gz, .zip, .tar.gz archives of "
                   "them); binary and empty files are not read")


def finish(budget: Budget, mask_hosts: bool, sample: str = "") -> Submission:
    if not budget.files and budget.notes:
        # something was sent, and none of it is a log: say which file and why
        raise InputRejected(422, "no_readable_input", f"nothing you sent could be read as a log: {'; '.join(budget.notes[:5])}",
                            UNREADABLE_HINT)
    if not budget.files:
        raise malformed("no_input", "no log text in the request", "paste a log, or upload log files or an archive of a log folder")
    lines = sum(count_lines(data) for _, data in budget.files)
    if lines > budget.limits.max_lines:
        raise too_large("too_many_lines", f"{lines} lines; the limit is {budget.limits.max_lines}")
    return Submission(files=budget.files, notes=budget.notes, mask_hosts=mask_hosts, sample=sample)


async def read_form(request, limits: Limits) -> list[tuple[str, str | UploadFile]]:
    """The form's items; multipart uploads are held in memory only."""
    content_type = request.headers.get("content-type", "")
    try:
        if content_type.startswith("multipart/form-data"):
            parser = MultiPartParser(
                request.headers,
                request.stream(),
                max_files=limits.max_files,
                max_fields=64,
                max_part_size=limits.max_request_bytes,
            )
            parser.spool_max_size = limits.max_request_bytes + 1  # never roll over to a temp file
            form = await parser.parse()
        elif content_type.startswith("application/x-www-form-urlencoded"):
            return await _read_urlencoded(request, limits)
        else:
            raise InputRejected(415, "unsupported_media_type", f"cannot read a {content_type or 'missing'} content type",
                                "send multipart/form-data, application/json or text/plain")
    except MultiPartException as exc:
        if "Too many files" in exc.message:
            raise malformed("too_many_files", f"more than {limits.max_files} files in one request") from None
        raise malformed("malformed_multipart", f"malformed multipart body: {exc.message}") from None
    return list(form.multi_items())


async def _read_urlencoded(request, limits: Limits) -> list[tuple[str, str]]:
    """A small urlencoded form, read whole (never more than max_form_bytes) and parsed at once."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limits.max_form_bytes:
        raise _form_too_large(limits)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limits.max_form_bytes:
            raise _form_too_large(limits)
    try:
        return parse_qsl(body.decode("latin-1"), keep_blank_values=True, max_num_fields=64, encoding="utf-8",
                         errors="surrogateescape")
    except ValueError:
        raise malformed("malformed_form", "more than 64 form fields") from None


def _form_too_large(limits: Limits):
    return too_large("form_too_large", f"a urlencoded form over {size(limits.max_form_bytes)}",
                     "send logs as multipart/form-data (curl -F files=@rank0.log), JSON or text/plain")


async def submission_from_form(request, limits: Limits) -> Submission:
    items = await read_form(request, limits)
    mask_hosts = False
    sample = ""
    pasted: list[str] = []
    uploads: list[tuple[str | None, bytes]] = []
    for key, value in items:
        if isinstance(value, UploadFile):
            data = await value.read()
            await value.close()
            if not data and not value.filename:
                continue  # the browser sends an empty part when no file was chosen
            uploads.append((value.filename, data))
        elif key == "text":
            if value.strip():
                pasted.append(value)
        elif key == "mask_hosts":
            mask_hosts = value.lower() in TRUE_WORDS
        elif key == "sample":
            sample = value
    if sample and not uploads and not pasted:
        return Submission(sample=sample, mask_hosts=mask_hosts)

    def prepare() -> Submission:
        budget = Budget(limits)
        for filename, data in uploads:
            expand(upload_name(filename, f"upload-{len(budget.files) + 1}.log"), data, budget)
        for index, text in enumerate(pasted):
            budget.add("pasted.log" if index == 0 else f"pasted-{index + 1}.log", text_bytes(text))
        return finish(budget, mask_hosts)

    sent = sum(len(data) for _, data in uploads) + sum(len(text) for text in pasted)
    return Submission(mask_hosts=mask_hosts, sample=sample, prepare=prepare, raw_bytes=sent)


async def submission_from_body(request, limits: Limits, mask_hosts: bool) -> Submission:
    """`POST /api/diagnose` with a JSON or plain-text body (read here, parsed in `prepare`)."""
    content_type = request.headers.get("content-type", "")
    if not (content_type.startswith(("application/json", "text/plain")) or content_type == ""):
        raise InputRejected(415, "unsupported_media_type", f"cannot read a {content_type} body",
                            "send multipart/form-data (files), application/json ({\"text\": ...}) or text/plain")
    body = await request.body()
    return Submission(mask_hosts=mask_hosts, prepare=lambda: _body_submission(body, content_type, limits, mask_hosts),
                      raw_bytes=len(body))


def _body_submission(body: bytes, content_type: str, limits: Limits, mask_hosts: bool) -> Submission:
    budget = Budget(limits)
    if content_type.startswith("application/json"):
        try:
            payload = loads_json(body, max_depth=limits.max_json_depth)
        except ValueError as exc:  # also nested too deep, NaN, 1e999
            raise malformed("malformed_json", f"the body is not valid JSON for this API ({exc.__class__.__name__})") from None
        if not isinstance(payload, dict):
            raise malformed("malformed_json", "the JSON body must be an object with `text` or `files`")
        unknown = set(payload) - {"text", "name", "files", "mask_hosts"}
        if unknown:
            raise malformed("malformed_json", f"unknown field(s): {', '.join(sorted(unknown))}", "use text, name, files, mask_hosts")
        text, files = payload.get("text"), payload.get("files") or []
        if text is not None and not isinstance(text, str):
            raise malformed("malformed_json", "`text` must be a string")
        if not isinstance(files, list) or not all(
            isinstance(item, dict) and isinstance(item.get("text"), str) and isinstance(item.get("name", ""), str)
            for item in files
        ):
            raise malformed("malformed_json", "`files` must be a list of {name, text} objects")
        if isinstance(payload.get("mask_hosts"), bool):
            mask_hosts = mask_hosts or payload["mask_hosts"]
        if text:
            budget.add(upload_name(payload.get("name") if isinstance(payload.get("name"), str) else None, "pasted.log"), text_bytes(text))
        for index, item in enumerate(files):
            budget.add(upload_name(item.get("name"), f"file-{index + 1}.log"), text_bytes(item["text"]))
    elif body.strip():  # text/plain, or no content type
        expand("pasted.log", body, budget)
    return finish(budget, mask_hosts)


class BodyLimit:
    """ASGI middleware: refuse a body over `max_bytes`, by header or while it streams in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, send)
            return
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise self.error()
            return message

        started = False

        async def watched_send(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except InputRejected:
            if started:
                raise
            await self._refuse(scope, send)

    def error(self) -> InputRejected:
        return too_large("request_too_large", f"the request is larger than {size(self.max_bytes)}",
                         "upload a .tar.gz of the log folder, or only the logs around the failure")

    async def _refuse(self, scope: Scope, send: Send) -> None:
        from .errors import error_response

        response = error_response(self.error(), wants_html=_wants_html(scope))
        await response(scope, None, send)


def _wants_html(scope: Scope) -> bool:
    headers = dict(scope.get("headers") or ())
    return not scope.get("path", "").startswith("/api/") and b"text/html" in headers.get(b"accept", b"")
