"""`firstfault kb check`: validate every entry and run every signature example."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    kb = subparsers.add_parser("kb", help="knowledge-base maintenance")
    kb_sub = kb.add_subparsers(dest="kb_command", metavar="ACTION", required=True)
    check = kb_sub.add_parser("check", help="validate every entry; report all problems with file:line")
    check.set_defaults(func=run_check)


def run_check(args) -> int:
    from ..kb.loader import check_entries

    entries, problems = check_entries()
    for problem in problems:
        print(problem)
    signatures = sum(len(entry.signatures) for entry in entries)
    examples = sum(len(s.examples) + len(s.near_misses) for entry in entries for s in entry.signatures)
    summary = f"{len(entries)} entries, {signatures} signatures, {examples} examples checked"
    if problems:
        print(f"{len(problems)} problem(s); {summary}", file=sys.stderr)
        return 1
    print(f"ok: {summary}")
    return 0
