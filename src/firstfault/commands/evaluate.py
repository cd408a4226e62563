"""`firstfault eval CORPUS_DIR...`: accuracy on labelled cases (docs/cases.md).

Exit status: 0 every case right, 1 some missed, 2 some case could not be scored (each says why).
"""
from __future__ import annotations

import json
import sys

from .options import FORMATS, add_output_options, knowledge_base, use_color


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="score the engine on labelled cases (case.yaml + logs/)")
    parser.add_argument("corpus", nargs="+", metavar="CORPUS_DIR", help="a case folder or a folder of cases")
    add_output_options(parser, FORMATS)
    parser.set_defaults(func=run)


def _rank(rank) -> str:
    return f" rank {rank}" if rank is not None else " (no rank)"


def miss_line(result) -> str:
    expected_rank = _rank(result.expected_rank) if result.rank_scored else ""
    return (f"MISS {result.case_id}: expected {result.expected_class}{expected_rank}, got {result.got_class}"
            + (_rank(result.got_rank) if result.got_class not in ("healthy", "error") else "")
            + (f" ({result.error})" if result.error else ""))


def run(args) -> int:
    from ..evaluation import evaluate

    score = evaluate(args.corpus, knowledge_base(args))
    scored = sum(1 for r in score.results if r.rank_scored)
    summary = {
        "cases": len(score.results),
        "class_accuracy": round(score.class_accuracy, 4),
        "initiating_rank_accuracy": round(score.rank_accuracy, 4),
        "cases_with_rank": scored,
        "healthy_false_alarms": score.healthy_false_alarms,
        "misses": [result.__dict__ for result in score.misses],
        "invalid": [item.__dict__ for item in score.invalid],
    }
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    elif args.format == "markdown":
        print(f"| cases | class accuracy | initiating-rank accuracy | healthy false alarms |\n|---|---|---|---|\n"
              f"| {len(score.results)} | {score.class_accuracy:.1%} | {score.rank_accuracy:.1%} (of {scored}) "
              f"| {score.healthy_false_alarms} |")
        lines = [f"- {miss_line(result)}" for result in score.misses]
        lines += [f"- INVALID {item.case_id}: {item.reason}" for item in score.invalid]
        if lines:
            print("\n" + "\n".join(lines))
    else:
        from ..render.entry_terminal import Style

        style = Style(use_color(args.color, sys.stdout))
        for result in score.misses:
            print(style("critical", "MISS") + miss_line(result)[len("MISS"):])
        if not score.results:
            print(f"cases: 0 scored ({len(score.invalid)} could not be)")
        else:
            _terminal_summary(score, scored)
    for item in score.invalid:
        print(f"firstfault: error: {item.path}: cannot score case {item.case_id}: {item.reason}", file=sys.stderr)
    if score.invalid:
        return 2
    return 0 if not score.misses else 1


def _terminal_summary(score, scored: int) -> None:
    print(f"cases: {len(score.results)}")
    print(f"class accuracy: {score.class_accuracy:.1%}")
    print(f"initiating-rank accuracy: {score.rank_accuracy:.1%} (of {scored} cases with a known rank)")
    print(f"healthy false alarms: {score.healthy_false_alarms}")
