"""`firstfault rules`: the verdict's rules, in the order they run."""
from __future__ import annotations

import json

from .options import FORMATS, add_output_options


def register(subparsers) -> None:
    parser = subparsers.add_parser("rules", help="list the verdict's named rules, in the order they run")
    add_output_options(parser, FORMATS)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..correlate.rules.table import all_rules

    rows = [{"stage": stage, "rule": item.id, "summary": item.summary} for stage, item in all_rules()]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    elif args.format == "markdown":
        print("| stage | rule | what it decides |\n| --- | --- | --- |")
        for row in rows:
            print(f"| {row['stage']} | `{row['rule']}` | {row['summary']} |")
    else:
        width = max(len(row["rule"]) for row in rows)
        for row in rows:
            print(f"{row['stage']:<13} {row['rule']:<{width}}  {row['summary']}")
    return 0
