"""`firstfault history` (past diagnoses) and `firstfault ask` (follow-up questions on one).

    firstfault history [--since DATE] [--host H] [--class C]   # newest first
    firstfault history show N|last | search TEXT | forget N
    firstfault ask [N|last|LOGS...] "why not rank 0"
    firstfault why RANK|HOST [N|last|LOGS...]

The history is the SQLite file the web app uses (masked diagnoses, never logs); `firstfault
diagnose --save` records into it. `ask` answers from a diagnosis in the history, or from logs
diagnosed now.
"""
from __future__ import annotations

import json
import sys
import time

from ..errors import UsageError
from .options import add_output_options

FORMATS = ("terminal", "json", "markdown")


def register(subparsers) -> None:
    history = subparsers.add_parser("history", help="past diagnoses (saved with diagnose --save, or by the web app)",
                                    description="List, show, search and forget past diagnoses (masked, never logs).")
    history.add_argument("action", nargs="?", default="list", choices=("list", "show", "search", "forget"),
                         help="list (default), show N|last, search TEXT, forget N")
    history.add_argument("target", nargs="?", metavar="N|TEXT", help="the entry (show, forget) or the text (search)")
    history.add_argument("--since", metavar="DATE", help="only entries seen since DATE (YYYY-MM-DD)")
    history.add_argument("--host", metavar="HOST", help="only failures that started on HOST")
    history.add_argument("--class", dest="failure_class", metavar="CLASS", help="only this failure class")
    history.add_argument("--limit", type=int, default=50, help="at most this many entries (default 50)")
    add_db_option(history)
    add_output_options(history, FORMATS)
    history.set_defaults(func=run_history)

    ask = subparsers.add_parser("ask", help="ask a diagnosis a follow-up question (why not rank 0?)",
                                description="Answer a follow-up question from a diagnosis: one in the history (N, "
                                            "or last: the default), or logs diagnosed now. Answers cite the lines they "
                                            "stand on; a question it cannot answer lists those it can.")
    ask.add_argument("words", nargs="+", metavar="[N|last|LOGS...] QUESTION",
                     help="the entry or logs, then the question in quotes")
    add_db_option(ask)
    add_output_options(ask, FORMATS)
    ask.set_defaults(func=run_ask)

    why = subparsers.add_parser("why", help="why the first fault is (or is not) on this rank or host",
                                description="`firstfault why 5` is `firstfault ask \"why rank 5\"`; "
                                            "`firstfault why gpu-b07` asks of a host.")
    why.add_argument("subject", metavar="RANK|HOST")
    why.add_argument("target", nargs="*", metavar="N|last|LOGS", help="the entry or the logs (default: last)")
    add_db_option(why)
    add_output_options(why, FORMATS)
    why.set_defaults(func=run_why)


def add_db_option(parser) -> None:
    parser.add_argument("--db", metavar="PATH", help="the history database (default: history.sqlite3 in the user data directory)")


def open_history(path: str | None):
    from ..history import History, default_path

    return History(path or default_path())


def run_history(args) -> int:
    history = open_history(args.db)
    if args.action in ("show", "forget") and not args.target:
        raise UsageError(f"history {args.action} needs an entry", f"e.g. firstfault history {args.action} 3 (see firstfault history)")
    if args.action == "show":
        record = _record(history, args.target)
        if args.format == "json":
            sys.stdout.write(json.dumps({**record.summary(), "document": record.document}, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(_show(record, markdown=args.format == "markdown"))
        return 0
    if args.action == "forget":
        record = _record(history, args.target)
        history.forget(record.id)
        print(f"forgot #{record.id} ({record.title}); the database was rewritten without it", file=sys.stderr)
        return 0
    since = _date(args.since) if args.since else None
    records = history.search(text=args.target or "" if args.action == "search" else "", since=since,
                             host=args.host or "", failure_class=args.failure_class or "", limit=max(1, args.limit))
    if args.format == "json":
        sys.stdout.write(json.dumps([record.summary() for record in records], indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_table(records, markdown=args.format == "markdown"))
    return 0


def _record(history, target: str):
    if target == "last":
        record = history.last()
    elif target.isascii() and target.isdigit():
        record = history.get(int(target))
    else:
        raise UsageError(f"{target!r} is not an entry", "give its number (firstfault history lists them) or last")
    if record is None:
        raise UsageError(f"no entry {target} in the history {history.path}", "firstfault history lists the entries")
    return record


def _date(text: str) -> float:
    import calendar

    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%d")))
    except ValueError:
        raise UsageError(f"--since {text!r} is not a date", "give YYYY-MM-DD, e.g. --since 2026-11-28") from None


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))


def _table(records, markdown: bool = False) -> str:
    if not records:
        return "No diagnoses in the history (diagnose with --save to keep them).\n"
    rows = [(f"#{record.id}", _when(record.last_seen or record.created), str(record.seen), record.status,
             ",".join(record.hosts) or "-", record.origin, record.title) for record in records]
    head = ("entry", "last seen (UTC)", "seen", "status", "hosts", "from", "diagnosis")
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]) + "\n"
    widths = [max(len(head[index]), *(len(row[index]) for row in rows)) for index in range(len(head) - 1)]
    lines = ["  ".join(name.ljust(width) for name, width in zip(head, widths)) + "  " + head[-1]]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows]
    return "\n".join(lines) + "\n"


def _show(record, markdown: bool = False) -> str:
    document = record.document
    primary = document.get("primary") or {}
    where = primary.get("initiating") or {}
    lines = [f"{'# ' if markdown else ''}#{record.id}: {record.title}",
             f"first seen {_when(record.created)} UTC, seen {record.seen} time(s), last {_when(record.last_seen or record.created)}"
             f" UTC, from {record.origin}",
             f"status: {document.get('status')}" + (f"; {primary.get('entry_id')} on rank {where.get('rank')} "
                                                   f"({where.get('source')}:{where.get('line')})" if primary else "")]
    lines += [f"- [{item['rule']}] {item['text']}" for item in document.get("because") or []]
    lines.append(f"ask it: firstfault ask {record.id} \"why not rank 0\"")
    return "\n".join(lines) + "\n"


def run_ask(args) -> int:
    from ..ask import answer, intent_of
    from .options import knowledge_base

    *target, question = args.words
    kb = knowledge_base(args)
    history, recurrence, history_on, baseline = None, None, True, None
    if not target or (len(target) == 1 and (target[0] == "last" or target[0].isascii() and target[0].isdigit())):
        history = open_history(args.db)
        record = _record(history, target[0] if target else "last")
        contract = record.document
        recurrence = history.recurrence(contract, before=record.id)
        healthy = history.last_healthy(contract, before=record.id)
        baseline = healthy.document if healthy is not None else None
        where = f"#{record.id} ({record.title})"
    else:
        from ..pipeline import diagnose_paths
        from ..render.contract import to_contract

        contract = to_contract(diagnose_paths(target, kb=kb))
        history_on = args.db is not None
        if history_on:
            history = open_history(args.db)
            recurrence = history.recurrence(contract)
            healthy = history.last_healthy(contract)
            baseline = healthy.document if healthy is not None else None
        where = " ".join(target)
    hosts = tuple((contract.get("inputs") or {}).get("hosts") or ())
    reply = answer(intent_of(question, hosts), contract, kb, recurrence, history_on, baseline)
    if args.format == "json":
        sys.stdout.write(json.dumps({**reply.to_dict(question), "diagnosis": where}, indent=2, ensure_ascii=False) + "\n")
        return 0
    bullet = "- " if args.format == "markdown" else "  "
    lines = [f"{'**Q:** ' if args.format == 'markdown' else 'Q: '}{question}  (on {where})", ""]
    lines += [f"{bullet}{line}" if line.startswith("[") or line.startswith("- ") else line for line in reply.lines]
    if reply.evidence:
        lines += ["", "Evidence:"] + [f"{bullet}{item['source']}:{item['line']}" + (f"  {item['text'][:200]}" if item.get("text") else "")
                                      for item in reply.evidence]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def run_why(args) -> int:
    subject = args.subject
    question = f"why rank {subject}" if subject.isdigit() else f"why not host {subject}"
    args.words = [*args.target, question]
    return run_ask(args)
