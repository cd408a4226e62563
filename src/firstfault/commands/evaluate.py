"""`firstfault eval CORPUS_DIR...`: accuracy on labelled cases, and the verdict ratchet."""
from __future__ import annotations

import json
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="score the engine on labelled cases (case.yaml + logs/)")
    parser.add_argument("corpus", nargs="+", metavar="CORPUS_DIR", help="a case folder or a folder of cases")
    parser.add_argument("--format", choices=("terminal", "json"), default="terminal")
    parser.add_argument("--verdicts", metavar="FILE",
                        help="compare each case's verdict line with this committed file; exit 1 on any change")
    parser.add_argument("--write-verdicts", metavar="FILE", help="write each case's verdict line (id class rank host) to FILE")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..evaluation import evaluate, verdict_changes

    score = evaluate(args.corpus)
    lines = score.verdict_lines()
    if args.write_verdicts:
        Path(args.write_verdicts).write_text("\n".join(lines) + "\n", encoding="utf-8")
    changes = []
    if args.verdicts:
        changes = verdict_changes(Path(args.verdicts).read_text(encoding="utf-8").splitlines(), lines)
    if args.format == "json":
        print(json.dumps({
            "cases": len(score.results),
            "class_accuracy": round(score.class_accuracy, 4),
            "initiating_rank_accuracy": round(score.rank_accuracy, 4),
            "initiating_host_accuracy": round(score.host_accuracy, 4),
            "healthy_false_alarms": score.healthy_false_alarms,
            "misses": [result.__dict__ for result in score.misses],
            "verdict_changes": changes,
        }, indent=2))
    else:
        _print_terminal(score, changes)
    if args.verdicts:
        return 1 if changes else 0
    return 0 if not score.unexpected_misses else 1


def _print_terminal(score, changes: list[str]) -> None:
    for result in score.misses:
        print(f"{'KNOWN MISS' if result.known_miss else 'MISS'} {result.case_id}: expected {_who(result.expected_class, result.expected_rank if result.rank_scored else None, result.expected_host)}, "
              f"got {_who(result.got_entry or result.got_class, result.got_rank, result.got_host)}"
              + (f" ({result.error})" if result.error else "") + (f" [{result.known_miss}]" if result.known_miss else ""))
    for change in changes:
        print(f"CHANGED {change}")
    ranks = sum(1 for r in score.results if r.rank_scored)
    hosts = sum(1 for r in score.results if r.host_scored)
    print(f"cases: {len(score.results)}")
    print(f"class accuracy: {score.class_accuracy:.1%}")
    print(f"initiating-rank accuracy: {score.rank_accuracy:.1%} (of {ranks} cases with a known rank)")
    print(f"initiating-host accuracy: {score.host_accuracy:.1%} (of {hosts} cases with a known host)")
    print(f"healthy false alarms: {score.healthy_false_alarms}")


def _who(failure: str, rank: int | None, host: str | None) -> str:
    where = [f"rank {rank}"] if rank is not None else []
    where += [f"host {host}"] if host else []
    return failure + (f" ({', '.join(where)})" if where else "")
