"""`firstfault diagnose PATH...`: the main job."""
from __future__ import annotations

import argparse
import sys

from .options import FORMATS, add_history_options, add_output_options, knowledge_base, use_color


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "diagnose", help="find the first fault in the logs of a failed run",
        description="Read log files, folders (recursive), globs, .gz files or '-' (stdin) and name the "
                    "first fault, where it started, what is only collateral, and the fix. "
                    "Exit status: 0 healthy, 1 failure found, 2 tool error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, folders, globs, or - for stdin")
    add_output_options(parser, FORMATS)
    parser.add_argument("--mask-hosts", action=argparse.BooleanOptionalAction, default=None,
                        help="replace host names and IPs by stable pseudonyms (default: off, or the configuration's)")
    add_history_options(parser)
    parser.set_defaults(func=run)


def render(diagnosis, kb, output_format: str, color: bool = False, history: dict | None = None) -> str:
    """The report; `history`: what --save recorded (its id, and the failure's earlier sightings)."""
    if output_format == "json":
        from ..render.contract import render as render_json

        return render_json(diagnosis, {"history": history} if history else None)
    if output_format == "markdown":
        from ..render.markdown import render as render_markdown

        report = render_markdown(diagnosis, kb)
        return report + (f"\n**History:** {history_sentence(history)}\n" if history else "")
    from ..render.terminal import TerminalReport

    report = TerminalReport(kb, color=color).render(diagnosis)
    return report + (f"History: {history_sentence(history)}\n" if history else "")


def save(diagnosis, kb, db: str | None, origin: str = "cli") -> dict:
    """Record the diagnosis in the history; what the report says of it."""
    from ..render.contract import to_contract
    from ..history import title_of
    from .history import open_history

    contract = to_contract(diagnosis)
    history = open_history(db)
    earlier = history.recurrence(contract)
    entry = history.add(contract, title_of(contract, kb), origin=origin)
    seen = None
    if earlier is not None:
        seen = {"times": earlier.times, "first_seen": earlier.first_seen, "hosts": earlier.hosts,
                "sentence": earlier.sentence()}
    return {"id": entry, "database": history.path, "seen_before": seen}


def history_sentence(history: dict) -> str:
    seen = history.get("seen_before")
    said = seen["sentence"] if seen else "the first time this failure is seen"
    return f"{said} (saved as #{history['id']}: firstfault history show {history['id']}; firstfault ask {history['id']} \"why\")"


def exit_status(diagnosis) -> int:
    return 0 if diagnosis.status == "healthy" else 1


STDIN_HINT = ("firstfault: reading logs from standard input; paste them and press Ctrl-D "
              "(or give files: firstfault diagnose PATH...)")


def run(args) -> int:
    from ..pipeline import diagnose_paths
    from ..progress import ProgressObserver

    if "-" in args.paths and sys.stdin.isatty():
        print(STDIN_HINT, file=sys.stderr)  # otherwise it would wait without a word
    kb = knowledge_base(args)
    if kb.problems:
        print(f"firstfault: warning: {len(kb.problems)} knowledge-base problem(s); affected entries are left out "
              "(run `firstfault kb check`)", file=sys.stderr)
    observer = ProgressObserver(sys.stderr)
    try:
        diagnosis = diagnose_paths(args.paths, mask_hosts=args.mask_hosts, observer=observer, kb=kb)
    finally:
        observer.close()  # erased before anything else is said, error or report
    from ..render.diagnosis_text import skipped_worth_saying
    from ..render.printable import printable

    for item in skipped_worth_saying(diagnosis.inputs.skipped):
        print(f"firstfault: skipped {printable(item.source)}: {printable(item.reason)}", file=sys.stderr)
    for item in diagnosis.inputs.read_notes:
        print(f"firstfault: note: {printable(item.source)}: {printable(item.reason)}", file=sys.stderr)
    history = save(diagnosis, kb, args.db) if args.save else None
    sys.stdout.write(render(diagnosis, kb, args.format, use_color(args.color, sys.stdout), history))
    return exit_status(diagnosis)
