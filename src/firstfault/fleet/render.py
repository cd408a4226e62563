"""The fleet report as terminal text or Markdown; both read the report document (report.py), no I/O.

The answer first: the hosts to drain with the commands that drain them, then failures by class,
by week, the failures that recur, and the jobs that could not be diagnosed.
"""
from __future__ import annotations

import json

from ..render.entry_terminal import Style

SHOWN_JOBS = 8
SHOWN_RECURRING = 10
BAR_WIDTH = 24


def render_json(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def _day(iso: str | None) -> str:
    return (iso or "?")[:10]


def _plural(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def _count(number: int) -> str:
    return f"{number:,}"


def _classes(classes: dict[str, int]) -> str:
    return ", ".join(f"{name} x{count}" for name, count in sorted(classes.items(), key=lambda item: (-item[1], item[0])))


def _jobs(jobs: list[str]) -> str:
    shown = ", ".join(jobs[:SHOWN_JOBS])
    return shown + (f" (+{len(jobs) - SHOWN_JOBS} more)" if len(jobs) > SHOWN_JOBS else "")


def summary_line(report: dict) -> str:
    jobs = report["jobs"]
    span = report["span"]
    dated = report.get("dated_by_file_time") or 0
    return (f"{_count(jobs['total'])} jobs from {_day(span['first'])} to {_day(span['last'])} on "
            f"{_count(report['hosts_seen'])} hosts: {_count(jobs['healthy'])} healthy, {_count(jobs['failure'])} failed, "
            f"{_count(jobs['unknown'])} unknown, {_count(jobs['error'])} not diagnosed"
            + (f"; {_count(dated)} dated by file time (their logs carry no time)" if dated else ""))


def test_line(report: dict) -> str:
    test = report["test"]
    return (f"host-level failures in >= {test['min_jobs']} jobs and p < {test['p_value_below']:.2g} "
            f"(binomial tail against the rest of the fleet, alpha {test['alpha']} over {report['hosts_seen']} hosts; "
            f"{test['weights']})")


def host_line(entry: dict) -> str:
    return (f"score {entry['score']:.1f}  {_classes(entry['classes'])} in {len(entry['jobs'])} of {entry['jobs_seen']} jobs "
            f"({entry['expected']:.2f} expected)  {_day(entry['first_seen'])} -> {_day(entry['last_seen'])}")


def _host_kind(entry: dict) -> str:
    if entry["hardware"]:
        return "hardware"
    return "transient hardware" if entry["host_weight"] > 0 else "never blamed on a host"


def render_terminal(report: dict, color: bool = False) -> str:
    style = Style(color)
    lines = [style("title", f"Fleet report: {report['table'] or 'table'}"), "  " + summary_line(report), ""]
    suspects = report["suspect_hosts"]
    if suspects:
        lines.append(style("critical", f"✖ {_plural(len(suspects), 'suspect host')}") + ": " + test_line(report))
    else:
        lines.append(style("code", "✔ no suspect host") + ": " + test_line(report))
    for entry in suspects:
        lines.append(f"  {style('heading', entry['host'])}  {host_line(entry)}")
        lines.append(f"      jobs: {_jobs(entry['jobs'])}")
        first = entry["evidence"][0] if entry["evidence"] else None
        if first and first.get("source"):
            lines.append(f"      first evidence: {first['source']}:{first['line']}")
        lines += [f"      $ {command['command']}" for command in entry["commands"]]
    if len(suspects) > 1:
        lines.append("  Keep jobs off all of them:")
        lines += [f"      $ {command['command']}" for command in report["exclude_all"]]
    if report["watch_hosts"]:
        lines += ["", style("title", "Watch") + " (host-level failures in 2+ jobs, below the bar)"]
        lines += [f"  {entry['host']}  {host_line(entry)}" for entry in report["watch_hosts"]]
    if report["by_class"]:
        lines += ["", style("title", "Failures by class") + f"{'jobs':>{44 - len('Failures by class')}}  share  host"]
        lines += [f"  {entry['failure_id']:<34}{entry['jobs']:>8}  {entry['share'] * 100:4.1f}%  {_host_kind(entry)}"
                  for entry in report["by_class"]]
    if report["by_week"]:
        peak = max(week["failure_rate"] for week in report["by_week"]) or 1.0
        lines += ["", style("title", "By week (starting Monday)") + "   jobs  failed   rate"]
        for week in report["by_week"]:
            bar = "█" * max(0, round(week["failure_rate"] / peak * BAR_WIDTH))
            top = ", ".join(f"{name} {count}" for name, count in list(week["by_class"].items())[:3])
            lines.append(f"  {week['week']}{week['jobs']:>19}{week['failed']:>8}  {week['failure_rate'] * 100:5.1f}%  {bar}  {top}".rstrip())
    if report["recurring"]:
        lines += ["", style("title", "Recurring failures") + " (same class and first-fault line in 2+ jobs)"]
        for entry in report["recurring"][:SHOWN_RECURRING]:
            lines.append(f"  {entry['jobs']:>4} jobs  {_plural(len(entry['hosts']), 'host'):>9}  {_day(entry['first_seen'])} -> "
                         f"{_day(entry['last_seen'])}  {style('heading', entry['failure_id'])}  [{entry['fingerprint']}]")
            lines.append(f"      {entry['text']}")
        if len(report["recurring"]) > SHOWN_RECURRING:
            lines.append(f"  ... {len(report['recurring']) - SHOWN_RECURRING} more (--format json lists them all)")
    if report["errors"]:
        lines += ["", style("title", f"Not diagnosed ({len(report['errors'])})")]
        lines += [f"  {entry['job_path']}: {entry['error']}" for entry in report["errors"][:20]]
    return "\n".join(lines) + "\n"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: dict) -> str:
    lines = [f"# Fleet report: `{report['table'] or 'table'}`", "", summary_line(report) + ".", ""]
    suspects = report["suspect_hosts"]
    lines += [f"## Suspect hosts ({len(suspects)})", "", "Test: " + test_line(report) + ".", ""]
    if suspects:
        lines += ["| host | score | failures | jobs | expected | first | last |", "| --- | ---: | --- | ---: | ---: | --- | --- |"]
        lines += [f"| `{entry['host']}` | {entry['score']:.1f} | {_cell(_classes(entry['classes']))} | {len(entry['jobs'])} of "
                  f"{entry['jobs_seen']} | {entry['expected']:.2f} | {_day(entry['first_seen'])} | {_day(entry['last_seen'])} |"
                  for entry in suspects]
        for entry in suspects:
            lines += ["", f"### `{entry['host']}`", "", f"Jobs: {_cell(_jobs(entry['jobs']))}", "", "```sh"]
            lines += [command["command"] for command in entry["commands"]]
            lines.append("```")
        if len(suspects) > 1:
            lines += ["", "Keep jobs off all of them:", "", "```sh"] + [command["command"] for command in report["exclude_all"]] + ["```"]
    else:
        lines.append("No host passes the test.")
    if report["watch_hosts"]:
        lines += ["", "## Watch", "", "| host | score | failures | jobs |", "| --- | ---: | --- | ---: |"]
        lines += [f"| `{entry['host']}` | {entry['score']:.1f} | {_cell(_classes(entry['classes']))} | {len(entry['jobs'])} of {entry['jobs_seen']} |"
                  for entry in report["watch_hosts"]]
    if report["by_class"]:
        lines += ["", "## Failures by class", "", "| class | jobs | share | counts against the host |", "| --- | ---: | ---: | --- |"]
        lines += [f"| `{entry['failure_id']}` | {entry['jobs']} | {entry['share'] * 100:.1f}% | {_host_kind(entry)} |" for entry in report["by_class"]]
    if report["by_week"]:
        lines += ["", "## By week", "", "| week (Monday) | jobs | failed | rate | top classes |", "| --- | ---: | ---: | ---: | --- |"]
        lines += [f"| {week['week']} | {week['jobs']} | {week['failed']} | {week['failure_rate'] * 100:.1f}% | "
                  f"{_cell(', '.join(f'{name} {count}' for name, count in list(week['by_class'].items())[:3]))} |"
                  for week in report["by_week"]]
    if report["recurring"]:
        lines += ["", "## Recurring failures", "", "| jobs | hosts | first | last | class | first-fault line |", "| ---: | ---: | --- | --- | --- | --- |"]
        lines += [f"| {entry['jobs']} | {len(entry['hosts'])} | {_day(entry['first_seen'])} | {_day(entry['last_seen'])} | "
                  f"`{entry['failure_id']}` | {_cell(entry['text'])} |" for entry in report["recurring"][:SHOWN_RECURRING * 3]]
    if report["errors"]:
        lines += ["", f"## Not diagnosed ({len(report['errors'])})", ""]
        lines += [f"- `{entry['job_path']}`: {_cell(entry['error'])}" for entry in report["errors"]]
    return "\n".join(lines) + "\n"
