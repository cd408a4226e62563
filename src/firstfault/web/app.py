"""The FastAPI app: thin pages and an API over the same library the CLI uses.

    create_app(db_path=None, history=True, limits=Limits())

Pages load nothing from outside (no CDN): the Content-Security-Policy says so to the browser, and
the OpenAPI description is served as JSON plus a page of our own, not the CDN-hosted Swagger UI.
"""
from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import FirstfaultError
from ..kb import load_knowledge_base
from .auth import LOCAL, SESSION_COOKIE
from .errors import error_response, wants_html
from .ingress import BodyLimit
from .limits import InputRejected, Limits

HERE = Path(__file__).parent
log = logging.getLogger("firstfault.web")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def host_name(header: str) -> str:
    """The name part of a Host header: `[::1]:8000` -> `[::1]`, `localhost:8000` -> `localhost`."""
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0]


def inline_code(text) -> Markup:
    """Escape `text` and show its `backticked` parts as code, as the terminal renderer does."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
        return Markup(escape(str(text or "")))
    return Markup("".join(f"<code>{escape(part)}</code>" if index % 2 else str(escape(part)) for index, part in enumerate(parts)))


def templates_environment() -> Environment:
    from .timeline import anchor_id, render_timeline

    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["kind"] = lambda value: type(value).__name__
    env.filters["anchor"] = lambda point: anchor_id(point.get("source"), point.get("line"))
    env.filters["when"] = lambda seconds: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(seconds or 0)))
    env.filters["ticks"] = inline_code
    env.filters["clock"] = lambda iso: (iso or "")[11:23].rstrip("Z")
    env.filters["percent"] = lambda value: f"{round(float(value or 0) * 100)}%"
    env.globals["timeline"] = render_timeline
    env.globals["version"] = __version__
    return env


def create_app(db_path: str | Path | None = None, history: bool = True, limits: Limits | None = None,
               kb=None, allowed_hosts: tuple[str, ...] | None = None, sign_in: bool = False, proxy=None) -> FastAPI:
    """The app. `db_path` None means the default file in the user's data dir; `history=False` stores nothing.
    `sign_in`: every request must carry a token of the database (or a session it opened), and
    each team sees its own history only (web/auth.py); without it, the user of this machine.
    `proxy`: a web.auth.TrustedProxy whose user header signs requests in (SSO in front)."""
    from . import api, pages_diagnose, pages_encyclopedia, pages_fleet, pages_history, pages_signin

    limits = limits or Limits()
    app = FastAPI(
        title="firstfault",
        version=__version__,
        description="Find the first fault in the logs of a failed distributed training run.",
        docs_url=None, redoc_url=None,  # both load their scripts from a CDN; /api is our own page
        openapi_url="/openapi.json",
    )
    app.state.limits = limits
    app.state.kb = kb or load_knowledge_base()
    app.state.templates = templates_environment()
    app.state.history = None
    if history:
        from ..history import History, default_path

        app.state.history = History(db_path or default_path())
    app.state.search_index = None
    app.state.auth = None
    if app.state.history is not None:
        from .auth import TokenStore

        app.state.auth = TokenStore(app.state.history)
    if sign_in and app.state.auth is None:
        raise FirstfaultError("signing in needs the history database (tokens live there)", "start without --no-history")
    app.state.sign_in = sign_in

    @app.exception_handler(InputRejected)
    async def rejected(request: Request, exc: InputRejected):
        return error_response(exc, wants_html(request), app.state.templates)

    @app.exception_handler(FirstfaultError)
    async def tool_error(request: Request, exc: FirstfaultError):
        return error_response(InputRejected(422, "cannot_diagnose", exc.message, exc.hint), wants_html(request), app.state.templates)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"invalid {where}: {first.get('msg', 'bad value')}" if where else "invalid request"
        return error_response(InputRejected(422, "invalid_request", message), wants_html(request), app.state.templates)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and message == "Not Found":
            message = f"nothing at {request.url.path}"
        return error_response(InputRejected(exc.status_code, code, message), wants_html(request), app.state.templates)

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    for module in (pages_diagnose, pages_encyclopedia, pages_history, pages_fleet, pages_signin, api):
        app.include_router(module.router)
    app.add_middleware(BodyLimit, max_bytes=limits.max_request_bytes)
    app.add_middleware(Guard, allowed_hosts=allowed_hosts, templates=app.state.templates, limits=limits,
                       auth=app.state.auth if sign_in else None, proxy=proxy if sign_in else None)
    return app


BUSY_RETRY_SECONDS = 5
PUBLIC_PATHS = ("/signin", "/favicon.ico")  # what a request that has not signed in may reach


class Guard:
    """ASGI middleware, the outermost: refuse unknown Host names and cross-site writes, and
    requests whose bodies would take the server past its memory budget (503); add the
    security headers; time out request bodies that stop arriving; close the connection after an
    answer given before the body was read (a refused 300 MiB upload is not read to its end);
    turn any unexpected error into a 500 whose log line names the exception type only.

    Pure ASGI rather than BaseHTTPMiddleware, so that an error raised while the body streams in
    reaches the app's exception handlers.
    """

    def __init__(self, app, allowed_hosts: tuple[str, ...] | None, templates, limits: Limits | None = None,
                 auth=None, proxy=None) -> None:
        self.app = app
        self.proxy = proxy  # a TrustedProxy: its user header signs in requests that come from it
        self.allowed_hosts = allowed_hosts
        self.templates = templates
        self.limits = limits or Limits()
        self.auth = auth  # a TokenStore when requests must sign in
        self.in_flight = 0  # bytes reserved by the bodies of requests being served

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self.refusal(request)
        reserved = 0
        if refusal is None:
            reserved = self.body_reservation(request)
            if self.in_flight + reserved > self.limits.max_inflight_bytes:
                refusal = InputRejected(503, "busy", "the server is reading as much as it may hold at once",
                                        "send it again in a few seconds", retry_after=BUSY_RETRY_SECONDS)
                reserved = 0
        identity = None
        if refusal is None:
            identity, refusal = self.identify(request)
        if refusal is not None:
            if refusal.code == "sign_in" and request.method == "GET" and wants_html(request):
                from starlette.responses import RedirectResponse

                await RedirectResponse("/signin", status_code=303)(scope, receive, send)
                return
            await error_response(refusal, wants_html(request), self.templates)(scope, receive, _closing(send))
            return
        scope.setdefault("state", {})["identity"] = identity
        self.in_flight += reserved
        try:
            await self.serve(scope, request, receive, send)
        finally:
            self.in_flight -= reserved

    def identify(self, request: Request):
        """(who sent the request, or a refusal): everyone is this machine's user unless the
        server was started to sign in; then a Bearer token, or the session cookie a token
        opened, is needed everywhere but the sign-in page and the static files."""
        if self.auth is None:
            return LOCAL, None
        path = request.url.path
        if self.proxy is not None:
            identity = self.proxy.identity(request)
            if identity is not None:
                return identity, None
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            identity = self.auth.identify(header[7:])
            if identity is None:
                return None, InputRejected(401, "bad_token", "the token is not valid (unknown, revoked or mistyped)",
                                           "ask an admin for a token: firstfault serve tokens add NAME --team TEAM")
            return identity, None
        session = request.cookies.get(SESSION_COOKIE)
        identity = self.auth.session(session) if session else None
        if identity is not None or path in PUBLIC_PATHS or path.startswith("/static/"):
            return identity, None
        return None, InputRejected(401, "sign_in", "sign in first: this server keeps each team's diagnoses to the team",
                                   "send Authorization: Bearer TOKEN, or sign in on /signin")

    def body_reservation(self, request: Request) -> int:
        """The memory a request's body may take while it is read and diagnosed: its declared
        length, else the most any request may send."""
        if request.method in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return 0
        declared = request.headers.get("content-length", "")
        most = self.limits.max_request_bytes
        return min(int(declared), most) if declared.isascii() and declared.isdigit() else most

    async def serve(self, scope, request: Request, receive, send) -> None:
        body = _BodyWatch(receive, self.limits)
        started = False

        async def send_with_headers(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items() if name.encode() not in present]
                if not body.done and b"connection" not in present:
                    extra.append((b"connection", b"close"))  # the rest of the body is not worth reading
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        try:
            await self.app(scope, body.receive, send_with_headers)
        except Exception as exc:  # noqa: BLE001 - the one place an unexpected error becomes a 500
            # log the type only: the message of an exception raised on a log line may quote the raw line
            log.error("internal error %s on %s %s", type(exc).__name__, scope.get("method"), scope.get("path"))
            if not started:
                error = InputRejected(500, "internal_error", "firstfault failed on this input",
                                      "please report it with the firstfault version")
                await error_response(error, wants_html(request), self.templates)(scope, body.receive, send_with_headers)

    def refusal(self, request: Request) -> InputRejected | None:
        host = host_name(request.headers.get("host", "")).lower()
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            # a DNS-rebinding page reaches us under its own name: refuse any name we were not started as
            return InputRejected(421, "wrong_host", f"this server does not answer for {host[:100]!r}",
                                 "if that is this server's name, start it with --server-name NAME")
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            # `Origin: null` comes from sandboxed frames and data: URLs, which are foreign; it also
            # comes from our own forms, since the pages send no referrer: those the browser marks
            # `Sec-Fetch-Site: same-origin`, a header no page can set
            origin = request.headers.get("origin")
            fetch_site = request.headers.get("sec-fetch-site")
            same_origin = origin is not None and origin.split("://", 1)[-1] == request.headers.get("host")
            if origin == "null":
                same_origin = fetch_site == "same-origin"
            if origin is not None and not same_origin or fetch_site in ("cross-site", "same-site"):
                return InputRejected(403, "cross_origin", "requests from other sites are refused")
        return None


def _closing(send):
    """`send` with `Connection: close` on the response: the request's body is left unread."""
    async def wrapped(message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": list(message.get("headers", [])) + [(b"connection", b"close")]}
        await send(message)
    return wrapped


class _BodyWatch:
    """The request body as it arrives: whether it is complete, and a time limit on each wait
    (idle) and on all of it (total), so a client that stops sending frees its slot."""

    def __init__(self, receive, limits: Limits) -> None:
        self._receive = receive
        self._limits = limits
        self._started = time.monotonic()
        self._deadline = self._started + limits.body_timeout
        self._received = 0
        self.done = False

    async def receive(self):
        if self.done:
            return await self._receive()  # afterwards only `http.disconnect` comes, whenever it does
        left = self._deadline - time.monotonic()
        try:
            message = await asyncio.wait_for(self._receive(), max(0.0, min(self._limits.body_idle_timeout, left)))
        except asyncio.TimeoutError:
            raise InputRejected(408, "request_timeout", "the request body stopped arriving in time",
                                "send the whole request at once; large uploads go faster as .tar.gz") from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.done = True
        else:
            self._check_rate(len(message.get("body", b"")))
        return message

    def _check_rate(self, count: int) -> None:
        """A body that arrives slower than min_body_rate on average, past the idle timeout's grace."""
        self._received += count
        elapsed = time.monotonic() - self._started
        if elapsed > self._limits.body_idle_timeout and self._received < self._limits.min_body_rate * elapsed:
            raise InputRejected(408, "request_too_slow",
                                f"the request body arrives slower than {self._limits.min_body_rate // 1024} KiB/s",
                                "send the whole request at once; large uploads go faster as .tar.gz")


def render(request: Request, template: str, status_code: int = 200, **context):
    from fastapi.responses import HTMLResponse

    env = request.app.state.templates
    context.setdefault("history_enabled", request.app.state.history is not None)
    identity = getattr(request.state, "identity", None)
    context.setdefault("signed_in", f"{identity.name} ({identity.team})" if request.app.state.sign_in and identity else "")
    return HTMLResponse(env.get_template(template).render(request=request, **context), status_code=status_code)


def search_index(app):
    if app.state.search_index is None:
        from ..kb.search import SearchIndex

        app.state.search_index = SearchIndex(app.state.kb)
    return app.state.search_index
