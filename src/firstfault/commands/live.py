"""`firstfault watch PATH...` and `firstfault run -- COMMAND...`: the first fault as it happens."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

from .options import STREAM_FORMATS, add_history_options, add_output_options, knowledge_base, use_color


def register(subparsers) -> None:
    watch = subparsers.add_parser(
        "watch", help="follow growing logs and alert on the first fault and on hangs",
        description="Follow log files and folders as they grow (new rank files, rotated and truncated files), "
                    "run the diagnosis engine on each new line, alert the moment a first fault appears, update "
                    "the alert as collateral arrives, and raise a hang alert when ranks stop making progress. "
                    "Only reads files. Runs until interrupted (or --duration). "
                    "Exit status: 0 no failure seen, 1 failure or hang alerted, 2 tool error.",
    )
    watch.add_argument("paths", nargs="+", metavar="PATH", help="log files, folders or globs (they may not exist yet)")
    _add_alert_options(watch)
    watch.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    watch.set_defaults(func=run_watch)

    run = subparsers.add_parser(
        "run", help="run a launcher command, tee its ranks' logs, watch them live, diagnose at exit",
        description="Start COMMAND (torchrun, srun, deepspeed, python ...), copy its output to the console and to "
                    "per-rank files in --log-dir, alert live as `watch` does, print the diagnosis when it exits, "
                    "and exit with the command's own status.",
        usage="firstfault run [options] -- COMMAND [ARG...]",
    )
    run.add_argument("--log-dir", metavar="DIR", help="where the ranks' logs go (default: ./firstfault-logs/<time>)")
    _add_alert_options(run)
    run.add_argument("command", nargs="+", metavar="COMMAND", help="the command to run, after --")
    run.set_defaults(func=run_command)


def _add_alert_options(parser) -> None:
    add_output_options(parser, STREAM_FORMATS, output=False)  # json = JSON lines (firstfault.alert/1)
    add_history_options(parser)
    parser.add_argument("--server", metavar="URL", help="also keep the final diagnosis in a team server's history "
                                                        "(firstfault serve with tokens), whose recurrences and alerts are the team's")
    parser.add_argument("--token-file", metavar="FILE", help="the token for --server (a file, so it is not in the process list)")
    parser.add_argument("--webhook", action="append", default=[], metavar="URL",
                        help="POST each alert as JSON (with a Slack-compatible `text`); may be repeated")
    parser.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on /metrics")
    parser.add_argument("--metrics-host", default="127.0.0.1", metavar="ADDR",
                        help="address the metrics endpoint listens on (default 127.0.0.1; 0.0.0.0 for all)")
    parser.add_argument("--hang-after", type=float, default=300.0, metavar="SECONDS",
                        help="raise a hang alert after this long without progress lines (default 300)")
    parser.add_argument("--progress-regex", metavar="REGEX",
                        help="what a progress line looks like; the numbers it captures order ranks (default: step/iter/batch/epoch N)")
    parser.add_argument("--poll", type=float, default=0.2, metavar="SECONDS", help="how often files are checked (default 0.2)")
    parser.add_argument("--mask-hosts", action=argparse.BooleanOptionalAction, default=None,
                        help="replace host names and IPs by stable pseudonyms (default: off, or the configuration's)")


def _sinks(args, alert_stream):
    from ..errors import InputError
    from ..watch.sinks import Fanout, JsonLinesSink, TerminalSink

    sinks = [JsonLinesSink(alert_stream) if _json_lines(args) else TerminalSink(alert_stream, use_color(args.color, alert_stream))]
    for url in args.webhook:
        if not url.startswith(("http://", "https://")):
            raise InputError(f"--webhook {url!r} is not an http(s) URL", "give e.g. https://hooks.slack.com/services/...")
        from ..watch.webhook import WebhookSink

        sinks.append(WebhookSink(url))
    if args.metrics_port is not None:
        from ..watch.metrics import MetricsSink

        try:
            metrics = MetricsSink(args.metrics_port, args.metrics_host)
        except OSError as exc:
            raise InputError(f"cannot serve metrics on {args.metrics_host}:{args.metrics_port}: {exc.strerror or exc}",
                             "choose another --metrics-port") from None
        print(f"firstfault: metrics on http://{args.metrics_host}:{metrics.port}/metrics", file=sys.stderr)
        sinks.append(metrics)
    return Fanout(sinks)


def _engine(args):
    import re

    from ..errors import InputError
    from ..watch.engine import LiveEngine

    if args.progress_regex:
        try:
            re.compile(args.progress_regex)
        except re.error as exc:
            raise InputError(f"--progress-regex is not a valid regular expression: {exc}", "e.g. 'step (\\d+)'") from None
    if args.hang_after <= 0 or args.poll <= 0:
        raise InputError("--hang-after and --poll must be positive", "e.g. --hang-after 120 --poll 0.2")
    kb = knowledge_base(args)
    return kb, LiveEngine(kb, hang_after=args.hang_after, progress_pattern=args.progress_regex, mask_hosts=args.mask_hosts)


def _json_lines(args) -> bool:
    return args.format in ("json", "jsonl")


def _say_what_is_missing(paths: list[str]) -> None:
    """watch waits for paths that do not exist yet; it says so, rather than waiting in silence."""
    import glob
    import os

    for path in paths:
        if glob.has_magic(path) and not glob.glob(path, recursive=True):
            print(f"firstfault: nothing matches {path} yet; waiting for it (Ctrl-C stops)", file=sys.stderr)
        elif not glob.has_magic(path) and not os.path.exists(path):
            parent = os.path.dirname(os.path.abspath(path))
            note = "" if os.path.isdir(parent) else f" (nor does its folder {parent})"
            print(f"firstfault: {path} does not exist yet{note}; waiting for it to appear (Ctrl-C stops)",
                  file=sys.stderr)


def _file_events(event) -> None:
    if event.what != "new":
        print(f"firstfault: {event.display}: {event.what}", file=sys.stderr)


def _stop_on_signals(stop: threading.Event, also=None):
    def handler(signum, frame):
        if also is not None:
            also(signum)
        else:
            stop.set()

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGTERM, signal.SIGHUP)}
    return previous


def run_watch(args) -> int:
    from ..watch.follower import Follower, own_outputs
    from ..watch.loop import finish, watch_loop

    kb, engine = _engine(args)
    sink = _sinks(args, sys.stdout)
    follower = Follower(list(args.paths), ignored=own_outputs(sys.stdout, sys.stderr))
    stop = threading.Event()
    previous = _stop_on_signals(stop)
    deadline = time.monotonic() + args.duration if args.duration else None
    print(f"firstfault: watching {', '.join(args.paths)} (hang after {args.hang_after:g} s without progress)",
          file=sys.stderr)
    _say_what_is_missing(list(args.paths))
    try:
        watch_loop(follower, engine, sink, stop=stop, poll_seconds=args.poll, deadline=deadline, observer=_file_events)
    except KeyboardInterrupt:
        pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        finish(follower, engine, sink)
        sink.close()
    _save(args, kb, engine, "watch")
    return 1 if any(alert.kind in ("failure", "hang") for alert in engine.alerts) else 0


def _save(args, kb, engine, origin: str) -> None:
    """With --save: the final diagnosis into the history, and when it was seen before; with
    --server: into the team server's history too."""
    diagnosis = engine.current_diagnosis() if args.save or args.server else None
    if diagnosis is None:
        return
    from .diagnose import history_sentence, save

    if args.save:
        print(f"firstfault: history: {history_sentence(save(diagnosis, kb, args.db, origin))}", file=sys.stderr)
    if args.server:
        _send_to_server(args, diagnosis, origin)


def _send_to_server(args, diagnosis, origin: str) -> None:
    import json
    import urllib.error
    import urllib.request

    from ..render.contract import to_contract

    token = ""
    if args.token_file:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            print(f"firstfault: warning: cannot read --token-file {args.token_file}: {exc.strerror}", file=sys.stderr)
            return
    url = args.server.rstrip("/") + f"/api/history?origin={origin}"
    request = urllib.request.Request(url, data=json.dumps(to_contract(diagnosis)).encode(), method="POST",
                                     headers={"content-type": "application/json",
                                              **({"authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (the user's own server)
            answer = json.loads(response.read(1 << 20))
    except urllib.error.HTTPError as exc:
        print(f"firstfault: warning: the server did not keep the diagnosis (HTTP {exc.code})", file=sys.stderr)
        return
    except (OSError, ValueError) as exc:
        print(f"firstfault: warning: cannot reach {args.server}: {exc}", file=sys.stderr)
        return
    seen = answer.get("seen_before") or "the first time the team sees this failure"
    print(f"firstfault: server: {seen} (entry #{answer.get('id')} on {args.server})", file=sys.stderr)


def run_command(args) -> int:
    from ..errors import InputError
    from ..watch.follower import Follower
    from ..watch.launch import Launched
    from ..watch.loop import finish, step
    from .diagnose import render

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("no command given", "firstfault run -- torchrun --nproc-per-node 8 train.py")
    log_dir = Path(args.log_dir or Path("firstfault-logs") / datetime.now().strftime("%Y%m%d-%H%M%S"))
    if log_dir.is_dir() and any(log_dir.iterdir()):
        # an earlier run's logs would be diagnosed with this one's
        raise InputError(f"--log-dir {log_dir} is not empty", "give a new or empty folder for this run's logs")
    kb, engine = _engine(args)
    # with JSON lines on stdout, the job's own stdout goes to stderr so stdout stays machine-readable
    alert_stream = sys.stdout if _json_lines(args) else sys.stderr
    sink = _sinks(args, alert_stream)
    console_out = sys.stderr.buffer if _json_lines(args) else sys.stdout.buffer
    try:
        launched = Launched(command, log_dir, console_out, sys.stderr.buffer)
    except OSError as exc:
        sink.close()
        raise InputError(f"cannot start {command[0]}: {exc.strerror or exc}", "check the command and your PATH") from None
    print(f"firstfault: running {' '.join(command)}; logs in {log_dir}", file=sys.stderr)
    follower = Follower([str(log_dir)])
    stop = threading.Event()
    previous = _stop_on_signals(stop, also=launched.forward)
    previous_int = signal.signal(signal.SIGINT, lambda signum, frame: None)  # Ctrl-C reaches the job itself
    try:
        while launched.process.poll() is None:
            started = time.monotonic()
            step(follower, engine, sink, started, _file_events)
            time.sleep(max(0.0, args.poll - (time.monotonic() - started)))
        status = launched.wait()
        finish(follower, engine, sink)
    finally:
        signal.signal(signal.SIGINT, previous_int)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sink.close()
    _save(args, kb, engine, "run")
    diagnosis = engine.current_diagnosis()
    if diagnosis is not None:
        if _json_lines(args):
            import json

            from ..render.contract import to_contract

            sys.stdout.write(json.dumps(to_contract(diagnosis), ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(render(diagnosis, kb, "terminal", use_color(args.color, sys.stdout)))
    print(f"firstfault: {command[0]} exited with status {status}; logs in {log_dir}", file=sys.stderr)
    return status
