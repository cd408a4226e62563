"""`firstfault serve`: the web interface and JSON API on a local port."""
from __future__ import annotations

import ipaddress
import socket
import sqlite3
import sys
from pathlib import Path

LOOPBACK_NAMES = ("localhost",)


def register(subparsers) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the web interface and JSON API",
        description="Serve the web interface: diagnose pasted or uploaded logs, browse the encyclopedia, "
        "keep a history of masked diagnoses. On 127.0.0.1 it answers this machine's user; on any other "
        "address it needs API tokens (firstfault serve tokens add NAME --team TEAM): each team then sees "
        "its own history only.",
    )
    serve.add_argument("tokens", nargs="*", metavar="tokens add NAME | tokens list | tokens revoke NAME",
                       help="manage the server's API tokens (in its --db) instead of serving")
    serve.add_argument("--team", help="tokens add: the team the token belongs to")
    serve.add_argument("--admin", action="store_true", help="tokens add: an admin sees every team's history and the audit log")
    add_server_options(serve)
    serve.set_defaults(func=run_serve)


def add_server_options(parser) -> None:
    """The options of every command that starts the web server (`serve`, `fleet serve`)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--db", metavar="PATH", help="history database file (default: history.sqlite3 in the user data directory)")
    parser.add_argument("--no-history", action="store_true", help="keep no history of diagnoses")
    parser.add_argument("--client-timeout", type=float, default=None, metavar="SECONDS",
                        help="close a connection whose request head, or body, stops arriving for this long (default: 10)")
    parser.add_argument("--insecure-no-auth", action="store_true",
                        help="serve on a non-loopback address without tokens: anyone who reaches the port reads and "
                             "deletes every diagnosis (for a network you trust entirely)")
    parser.add_argument("--trust-proxy-header", metavar="HEADER",
                        help="sign users in from this header (e.g. X-Forwarded-User) when the request comes from a --trusted-proxy")
    parser.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDR",
                        help="the address of the proxy whose headers are trusted (repeatable)")
    parser.add_argument("--team-header", metavar="HEADER", help="the proxy's header naming the user's team (e.g. X-Forwarded-Groups)")
    parser.add_argument("--team-map", metavar="FILE", help="`user team` lines, for a proxy that sends no team header")
    parser.add_argument("--admin-team", action="append", default=[], metavar="TEAM",
                        help="members of this team (signed in by the proxy) are admins")
    parser.add_argument("--audit-days", type=float, default=90.0, metavar="DAYS",
                        help="keep the audit log this long (default 90 days)")
    parser.add_argument("--quota-per-day", type=int, default=None, metavar="N",
                        help="diagnoses per token in 24 hours when signing in is required (default 500)")
    parser.add_argument("--server-name", action="append", default=[], metavar="NAME",
                        help="a host name (or address) browsers reach this server by; requests for any other "
                             "name are refused (DNS rebinding). Repeatable. Default: this machine's names and "
                             "the address listened on")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_tokens(args) -> int:
    """`firstfault serve tokens add NAME --team TEAM [--admin] | list | revoke NAME`."""
    import json
    import time

    from ..errors import UsageError
    from ..history import History, default_path
    from ..web.auth import TokenStore

    words = list(args.tokens)
    if words[0] != "tokens" or len(words) < 2 or words[1] not in ("add", "list", "revoke"):
        raise UsageError(f"unknown serve command {' '.join(words)!r}",
                         "firstfault serve tokens add NAME --team TEAM | tokens list | tokens revoke NAME")
    store = TokenStore(History(args.db or default_path()))
    action = words[1]
    if action == "list":
        for item in store.list():
            state = f"revoked {time.strftime('%Y-%m-%d', time.gmtime(item['revoked']))}" if item["revoked"] else "active"
            print(f"{item['name']}\tteam {item['team']}\t{'admin' if item['admin'] else 'member'}\t{state}")
        return 0
    if len(words) != 3:
        raise UsageError(f"tokens {action} needs a NAME", f"firstfault serve tokens {action} NAME")
    if action == "revoke":
        if not store.revoke(words[2]):
            raise UsageError(f"no active token called {words[2]!r}", "firstfault serve tokens list shows them")
        print(f"revoked {words[2]}: it is refused from its next request on", file=sys.stderr)
        return 0
    if not args.team:
        raise UsageError("tokens add needs --team TEAM", "firstfault serve tokens add NAME --team TEAM [--admin]")
    token = store.add(words[2], args.team, args.admin)
    print(json.dumps({"name": words[2], "team": args.team, "admin": args.admin}), file=sys.stderr)
    print(token)
    print("firstfault: the token is shown this once (only its scrypt hash is kept); send it as "
          "Authorization: Bearer TOKEN, or sign in with it on /signin", file=sys.stderr)
    return 0


def run_serve(args) -> int:
    from ..web import INSTALL_HINT, missing_requirements

    if getattr(args, "tokens", None):
        return run_tokens(args)

    missing = missing_requirements()
    if missing:
        print(f"firstfault: error: the web interface needs {', '.join(missing)}", file=sys.stderr)
        print(f"hint: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"firstfault: error: --port {args.port} is not a port number", file=sys.stderr)
        return 2
    if args.client_timeout is not None and not 0 < args.client_timeout <= 3600:
        print(f"firstfault: error: --client-timeout {args.client_timeout} is not between 0 and 3600 seconds", file=sys.stderr)
        return 2
    from dataclasses import replace

    from ..history import default_path
    from ..web.app import LOOPBACK_HOSTS, create_app
    from ..web.limits import Limits
    from ..web.server import run

    loopback = is_loopback(args.host)
    sign_in = False
    if not loopback:
        if args.insecure_no_auth:
            print(f"firstfault: warning: listening on {args.host} without authentication (--insecure-no-auth): anyone "
                  "who can reach this port can submit logs, and read and delete every diagnosis", file=sys.stderr)
        elif args.no_history or not (_has_tokens(args.db) or _proxy(args)):
            print(f"firstfault: error: refusing to serve on {args.host} without authentication: anyone who reaches the "
                  "port would read and delete every diagnosis", file=sys.stderr)
            print("hint: add a token (firstfault serve tokens add NAME --team TEAM [--db PATH]) and serve with the same "
                  "--db; or --host 127.0.0.1; or --insecure-no-auth on a network you trust entirely", file=sys.stderr)
            return 2
        else:
            sign_in = True
    refusal = cannot_listen(args.host, args.port)
    if refusal:
        print(f"firstfault: error: cannot listen on {args.host}:{args.port}: {refusal}", file=sys.stderr)
        print(f"hint: another program may use that port; choose another with --port (e.g. --port {args.port + 1})",
              file=sys.stderr)
        return 2
    db = None if args.no_history else (args.db or str(default_path()))
    # refuse the names a DNS-rebinding page would use, in every bind mode
    allowed = served_names(args.host, args.server_name, LOOPBACK_HOSTS)
    if not loopback:
        print(f"firstfault: answering for {', '.join(name for name in allowed if name not in LOOPBACK_HOSTS)} "
              "(others: --server-name NAME)", file=sys.stderr)
    limits = Limits() if args.quota_per_day is None else Limits(diagnoses_per_day=max(1, args.quota_per_day))
    if args.client_timeout is not None:
        limits = replace(limits, head_timeout=args.client_timeout, body_idle_timeout=args.client_timeout)
    try:
        app = create_app(db_path=db, history=not args.no_history, allowed_hosts=allowed, limits=limits, sign_in=sign_in,
                         proxy=_proxy(args))
        if app.state.auth is not None:
            app.state.auth.prune_audit(max(0.0, args.audit_days))
    except (OSError, sqlite3.Error) as exc:
        print(f"firstfault: error: cannot open the history database {db}: {exc}", file=sys.stderr)
        print("hint: pass --db PATH to a writable file, or --no-history", file=sys.stderr)
        return 2
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"firstfault: serving on http://{shown}:{args.port}/ (history: {db or 'off'}); Ctrl-C stops", file=sys.stderr)
    try:
        run(app, args.host, args.port, limits.head_timeout)
    except SystemExit:  # uvicorn could not start after all (the port was taken a moment later)
        print(f"firstfault: error: the server on {args.host}:{args.port} could not start", file=sys.stderr)
        print("hint: choose another port with --port", file=sys.stderr)
        return 2
    return 0


def _proxy(args):
    """The trusted proxy of --trust-proxy-header, or None."""
    from ..errors import UsageError
    from ..web.auth import TrustedProxy, load_team_map

    if not args.trust_proxy_header:
        return None
    if not args.trusted_proxy:
        raise UsageError("--trust-proxy-header needs --trusted-proxy ADDR", "the proxy's address: its headers alone are trusted")
    if not args.team_header and not args.team_map:
        raise UsageError("--trust-proxy-header needs --team-header HEADER or --team-map FILE", "each user belongs to a team")
    teams = load_team_map(args.team_map) if args.team_map else None
    return TrustedProxy(args.trust_proxy_header, tuple(args.trusted_proxy), args.team_header or "", teams,
                        tuple(args.admin_team))


def _has_tokens(db: str | None) -> bool:
    from ..history import History, default_path
    from ..web.auth import TokenStore

    path = db or str(default_path())
    if not Path(path).exists():
        return False
    return TokenStore(History(path)).active()


def served_names(host: str, extra: list[str], loopback_names: tuple[str, ...]) -> tuple[str, ...]:
    """The Host names the server answers for: loopback always; on another address, that address
    (unless it is a wildcard), this machine's names and their addresses, and the names given."""
    names = list(loopback_names)
    if not is_loopback(host):
        machine = [socket.gethostname(), socket.getfqdn()]
        names += machine
        try:
            unspecified = ipaddress.ip_address(host.strip("[]")).is_unspecified
        except ValueError:
            unspecified = False
        if not unspecified:
            names.append(f"[{host.strip('[]')}]" if ":" in host else host)
        for name in machine:
            try:
                names += [info[4][0] for info in socket.getaddrinfo(name, None)]
            except OSError:
                continue
    names += [name.strip().lower() for name in extra if name.strip()]
    names = [f"[{name}]" if ":" in name and not name.startswith("[") else name for name in names]
    return tuple(dict.fromkeys(name.lower() for name in names if name))


def cannot_listen(host: str, port: int) -> str:
    """Why nothing can listen on host:port now ("" when it can): checked before saying `serving`."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot resolve the address ({exc.strerror or exc})"
    family, kind, protocol, _, address = infos[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            return (exc.strerror or str(exc)).lower()
    return ""
