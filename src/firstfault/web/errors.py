"""One error shape for the API (`{"error": {status, code, message, hint}}`) and the same words on a page."""
from __future__ import annotations

from starlette.responses import HTMLResponse, JSONResponse, Response

from .limits import InputRejected


def error_response(error: InputRejected, wants_html: bool = False, templates=None) -> Response:
    response = _error_response(error, wants_html, templates)
    if error.retry_after is not None:
        response.headers["retry-after"] = str(error.retry_after)
    return response


def _error_response(error: InputRejected, wants_html: bool, templates) -> Response:
    if wants_html:
        if templates is not None:
            html = templates.get_template("error.html").render(error=error, page="error")
        else:
            from markupsafe import escape

            html = (f"<!doctype html><meta charset=utf-8><title>{error.status} error</title>"
                    f"<h1>{escape(error.message)}</h1><p>{escape(error.hint)}</p><p><a href=\"/\">back</a></p>")
        return HTMLResponse(html, status_code=error.status)
    return JSONResponse(error.as_json(), status_code=error.status)


def wants_html(request) -> bool:
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get("accept", "")
