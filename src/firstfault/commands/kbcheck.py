"""`firstfault kb check`: validate every entry and run every signature example; validate the secret
catalogue (mask/detectors.yaml) and run every detector's examples and near-misses."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    kb = subparsers.add_parser("kb", help="knowledge-base maintenance")
    kb_sub = kb.add_subparsers(dest="kb_command", metavar="ACTION", required=True)
    check = kb_sub.add_parser("check", help="validate every entry and the secret detectors; report all problems with file:line")
    check.set_defaults(func=run_check)


def run_check(args) -> int:
    from ..kb.loader import check_entries
    from ..mask import check_catalogue

    entries, problems = check_entries()
    catalogue, mask_problems = check_catalogue()
    problems = list(problems) + list(mask_problems)
    for problem in problems:
        print(problem)
    signatures = sum(len(entry.signatures) for entry in entries)
    examples = sum(len(s.examples) + len(s.near_misses) for entry in entries for s in entry.signatures)
    detectors = catalogue.detectors if catalogue is not None else ()
    secret_examples = sum(len(d.examples) + len(d.near_misses) for d in detectors)
    summary = (f"{len(entries)} entries, {signatures} signatures, {examples} examples checked; "
               f"{len(detectors)} secret detectors, {secret_examples} examples checked")
    if problems:
        print(f"{len(problems)} problem(s); {summary}", file=sys.stderr)
        return 1
    print(f"ok: {summary}")
    return 0
