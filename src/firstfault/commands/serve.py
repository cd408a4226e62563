"""`firstfault serve`: the web interface and JSON API on a local port."""
from __future__ import annotations

import ipaddress
import sys

LOOPBACK_NAMES = ("localhost",)


def register(subparsers) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the web interface and JSON API",
        description="Serve the web interface: diagnose pasted or uploaded logs, browse the encyclopedia, "
        "keep a history of masked diagnoses. There is no authentication: keep it on 127.0.0.1.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    serve.add_argument("--db", metavar="PATH", help="history database file (default: history.sqlite3 in the user data directory)")
    serve.add_argument("--no-history", action="store_true", help="keep no history of diagnoses")
    serve.set_defaults(func=run_serve)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_serve(args) -> int:
    from ..web import INSTALL_HINT, missing_requirements

    missing = missing_requirements()
    if missing:
        print(f"firstfault: error: the web interface needs {', '.join(missing)}", file=sys.stderr)
        print(f"hint: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"firstfault: error: --port {args.port} is not a port number", file=sys.stderr)
        return 2
    import uvicorn

    from ..history import default_path
    from ..web.app import LOOPBACK_HOSTS, create_app

    loopback = is_loopback(args.host)
    if not loopback:
        print(
            f"firstfault: warning: listening on {args.host}: there is no authentication, anyone who can reach "
            "this port can submit logs and read the history; use --host 127.0.0.1 unless you trust the network",
            file=sys.stderr,
        )
    refusal = cannot_listen(args.host, args.port)
    if refusal:
        print(f"firstfault: error: cannot listen on {args.host}:{args.port}: {refusal}", file=sys.stderr)
        print(f"hint: another program may use that port; choose another with --port (e.g. --port {args.port + 1})",
              file=sys.stderr)
        return 2
    db = None if args.no_history else (args.db or str(default_path()))
    allowed = LOOPBACK_HOSTS if loopback else None  # refuse the names a DNS-rebinding page would use
    app = create_app(db_path=db, history=not args.no_history, allowed_hosts=allowed)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"firstfault: serving on http://{shown}:{args.port}/ (history: {db or 'off'}); Ctrl-C stops", file=sys.stderr)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="critical", server_header=False)
    except SystemExit:  # uvicorn could not start after all (the port was taken a moment later)
        print(f"firstfault: error: the server on {args.host}:{args.port} could not start", file=sys.stderr)
        print("hint: choose another port with --port", file=sys.stderr)
        return 2
    return 0


def cannot_listen(host: str, port: int) -> str:
    """Why nothing can listen on host:port now ("" when it can): checked before saying `serving`."""
    import socket

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
