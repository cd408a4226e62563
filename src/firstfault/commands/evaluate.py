"""`firstfault eval CORPUS_DIR...`: accuracy on labelled cases (docs/corpus.md), and the verdict ratchet.

Exit status: 0 every case right (or, with --verdicts, no verdict changed), 1 a case missed (or a
verdict changed), 2 a case could not be scored (each is named on stderr with the reason).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .options import FORMATS, add_output_options, knowledge_base, use_color


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="score the engine on labelled cases (case.yaml + logs/)")
    parser.add_argument("corpus", nargs="+", metavar="CORPUS_DIR", help="a case folder or a folder of cases")
    add_output_options(parser, FORMATS)
    parser.add_argument("--verdicts", metavar="FILE",
                        help="compare each case's verdict line with this committed file; exit 1 on any change")
    parser.add_argument("--write-verdicts", metavar="FILE", help="write each case's verdict line (id class rank host) to FILE")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..evaluation import evaluate, verdict_changes

    score = evaluate(args.corpus, knowledge_base(args))
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
            "failures_called_healthy": score.failures_called_healthy,
            "misses": [result.__dict__ for result in score.misses],
            "verdict_changes": changes,
            "invalid": [item.__dict__ for item in score.invalid],
        }, indent=2))
    elif args.format == "markdown":
        _print_markdown(score, changes)
    else:
        _print_terminal(score, changes, use_color(args.color, sys.stdout))
    for item in score.invalid:
        print(f"firstfault: error: {item.path}: cannot score case {item.case_id}: {item.reason}", file=sys.stderr)
    if score.invalid:
        return 2
    if args.verdicts:
        return 1 if changes else 0
    return 0 if not score.unexpected_misses else 1


def miss_line(result) -> str:
    label = "KNOWN MISS" if result.known_miss else "MISS"
    return (f"{label} {result.case_id}: expected "
            f"{_who(result.expected_class, result.expected_rank if result.rank_scored else None, result.expected_host)}, "
            f"got {_who(result.got_entry or result.got_class, result.got_rank, result.got_host)}"
            + (f" ({result.error})" if result.error else "") + (f" [{result.known_miss}]" if result.known_miss else ""))


def _print_terminal(score, changes: list[str], color: bool) -> None:
    from ..render.entry_terminal import Style

    style = Style(color)
    for result in score.misses:
        line = miss_line(result)
        label = line.split(" ", 2)[0] if not result.known_miss else "KNOWN MISS"
        print(style("critical" if not result.known_miss else "medium", label) + line[len(label):])
    for change in changes:
        print(f"CHANGED {change}")
    if not score.results:
        print(f"cases: 0 scored ({len(score.invalid)} could not be)")
        return
    ranks = sum(1 for r in score.results if r.rank_scored)
    hosts = sum(1 for r in score.results if r.host_scored)
    print(f"cases: {len(score.results)}")
    print(f"class accuracy: {score.class_accuracy:.1%}")
    print(f"initiating-rank accuracy: {score.rank_accuracy:.1%} (of {ranks} cases with a known rank)")
    print(f"initiating-host accuracy: {score.host_accuracy:.1%} (of {hosts} cases with a known host)")
    print(f"healthy false alarms: {score.healthy_false_alarms}")
    print(f"failures called healthy: {score.failures_called_healthy}")


def _print_markdown(score, changes: list[str]) -> None:
    ranks = sum(1 for r in score.results if r.rank_scored)
    hosts = sum(1 for r in score.results if r.host_scored)
    print("| cases | class accuracy | initiating-rank accuracy | initiating-host accuracy | healthy false alarms "
          "| failures called healthy |\n|---|---|---|---|---|---|\n"
          f"| {len(score.results)} | {score.class_accuracy:.1%} | {score.rank_accuracy:.1%} (of {ranks}) "
          f"| {score.host_accuracy:.1%} (of {hosts}) | {score.healthy_false_alarms} | {score.failures_called_healthy} |")
    lines = [f"- {miss_line(result)}" for result in score.misses]
    lines += [f"- CHANGED {change}" for change in changes]
    lines += [f"- INVALID {item.case_id}: {item.reason}" for item in score.invalid]
    if lines:
        print("\n" + "\n".join(lines))


def _who(failure: str, rank: int | None, host: str | None) -> str:
    where = [f"rank {rank}"] if rank is not None else []
    where += [f"host {host}"] if host else []
    return failure + (f" ({', '.join(where)})" if where else "")
