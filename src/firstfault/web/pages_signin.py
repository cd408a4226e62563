"""Signing in on a team server: a token given once becomes a session cookie (HttpOnly,
SameSite=Strict, Secure over TLS); signing out ends the session. On a server that does not
ask to sign in (this machine's loopback), the page says so."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from .app import render
from .auth import SESSION_COOKIE, SESSION_SECONDS
from .ingress import read_form
from .limits import InputRejected

router = APIRouter(include_in_schema=False)


@router.get("/signin")
def signin_form(request: Request):
    return render(request, "signin.html", page="signin", required=request.app.state.sign_in, failed=False)


@router.post("/signin")
async def signin(request: Request):
    store = request.app.state.auth
    if not request.app.state.sign_in or store is None:
        return RedirectResponse("/", status_code=303)
    items = dict(await read_form(request, request.app.state.limits))
    identity = store.identify(str(items.get("token") or ""))
    if identity is None:
        return render(request, "signin.html", status_code=401, page="signin", required=True, failed=True)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(SESSION_COOKIE, store.open_session(identity), max_age=SESSION_SECONDS, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https", path="/")
    return response


@router.post("/signout")
def signout(request: Request):
    store = request.app.state.auth
    session = request.cookies.get(SESSION_COOKIE)
    if store is None or not session:
        raise InputRejected(404, "not_signed_in", "there is no session to end")
    store.close_session(session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
