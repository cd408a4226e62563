"""`firstfault eval CORPUS_DIR...`: accuracy on labelled cases."""
from __future__ import annotations

import json


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="score the engine on labelled cases (case.yaml + logs/)")
    parser.add_argument("corpus", nargs="+", metavar="CORPUS_DIR", help="a case folder or a folder of cases")
    parser.add_argument("--format", choices=("terminal", "json"), default="terminal")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..evaluation import evaluate

    score = evaluate(args.corpus)
    if args.format == "json":
        print(json.dumps({
            "cases": len(score.results),
            "class_accuracy": round(score.class_accuracy, 4),
            "initiating_rank_accuracy": round(score.rank_accuracy, 4),
            "healthy_false_alarms": score.healthy_false_alarms,
            "misses": [result.__dict__ for result in score.misses],
        }, indent=2))
    else:
        for result in score.misses:
            expected_rank = "" if not result.rank_scored else f" rank {result.expected_rank}"
            print(f"MISS {result.case_id}: expected {result.expected_class}{expected_rank}, "
                  f"got {result.got_class} rank {result.got_rank}" + (f" ({result.error})" if result.error else ""))
        scored = sum(1 for r in score.results if r.rank_scored)
        print(f"cases: {len(score.results)}")
        print(f"class accuracy: {score.class_accuracy:.1%}")
        print(f"initiating-rank accuracy: {score.rank_accuracy:.1%} (of {scored} cases with a known rank)")
        print(f"healthy false alarms: {score.healthy_false_alarms}")
    return 0 if not score.misses else 1
