"""`firstfault fleet ...`: scan thousands of jobs on Dask, report recurring failures and suspect hosts.

    firstfault fleet scan JOBS_ROOT... --out TABLE [--rescan] [--workers N | --scheduler tcp://...]
    firstfault fleet report TABLE [--format terminal|markdown|json]
    firstfault fleet sql "SELECT ... FROM jobs" [--table TABLE]
    firstfault fleet demo OUT            # a synthetic fleet with planted bad hosts
    firstfault fleet serve TABLE         # the web app with the /fleet page on this table

Needs the `fleet` extra (dask[distributed], pyarrow, duckdb); without it each command says what
to install. Exit status: scan 0 when done; report 1 when it names suspect hosts, 0 when none;
2 for a tool error.
"""
from __future__ import annotations

import json
import os
import sys

from .options import FORMATS, add_output_options, use_color
from .serve import add_server_options

DEFAULT_TABLE = "fleet.parquet"


def register(subparsers) -> None:
    fleet = subparsers.add_parser(
        "fleet", help="scan many jobs on Dask; recurring failures and the hosts that cause them",
        description="Fleet mode: diagnose every job under some folders on a Dask cluster into a Parquet table, then "
                    "report the failures that recur, failure rates by class and week, and the hosts that start "
                    "hardware failures in more jobs than the fleet's base rate explains (with the commands to drain "
                    "them). Needs: pip install 'firstfault[fleet]'.")
    commands = fleet.add_subparsers(dest="fleet_command", metavar="COMMAND")

    scan = commands.add_parser("scan", help="diagnose every job under the roots into the table",
                               description="One job = one folder or archive directly under a root. Jobs already in the "
                                           "table with the same file sizes and modification times are skipped.")
    scan.add_argument("roots", nargs="+", metavar="JOBS_ROOT", help="folders whose entries are jobs (or job archives)")
    scan.add_argument("--out", default=DEFAULT_TABLE, metavar="TABLE", help=f"the table, a folder of Parquet files (default: {DEFAULT_TABLE})")
    scan.add_argument("--rescan", action="store_true", help="diagnose every job again, changed or not")
    scan.add_argument("--workers", type=int, metavar="N", help="local Dask worker processes (default: one per CPU)")
    scan.add_argument("--memory-limit", default="4GiB", metavar="SIZE", help="memory per local worker (default: 4GiB)")
    scan.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler, e.g. tcp://10.0.0.5:8786")
    scan.add_argument("--scheduler-file", metavar="PATH", help="the scheduler file `dask scheduler --scheduler-file` wrote (Slurm)")
    add_output_options(scan, FORMATS)
    scan.set_defaults(func=run_scan)

    report = commands.add_parser("report", help="recurring failures, failures by class and week, suspect hosts")
    report.add_argument("table", nargs="?", default=DEFAULT_TABLE, metavar="TABLE", help=f"the table (default: {DEFAULT_TABLE})")
    report.add_argument("--min-jobs", type=int, default=3, metavar="K", help="a suspect host started host-level failures in at least K jobs (default: 3)")
    report.add_argument("--alpha", type=float, default=0.01, help="family-wise error rate of the host test (default: 0.01)")
    add_output_options(report, FORMATS)
    report.set_defaults(func=run_report)

    sql = commands.add_parser("sql", help="query the table with DuckDB (the view is `jobs`)")
    sql.add_argument("query", metavar="QUERY", help='e.g. "SELECT initiating_host, count(*) FROM jobs GROUP BY 1 ORDER BY 2 DESC"')
    sql.add_argument("--table", default=None, metavar="TABLE", help=f"the table (default: $FIRSTFAULT_FLEET_TABLE or {DEFAULT_TABLE})")
    add_output_options(sql, (*FORMATS, "csv"))  # terminal: an aligned table; markdown: a Markdown table
    sql.set_defaults(func=run_sql)

    demo = commands.add_parser("demo", help="write a synthetic fleet with planted bad hosts (for trying fleet mode)")
    demo.add_argument("out", metavar="OUT", help="folder to write (jobs/ and truth.json)")
    demo.add_argument("--jobs", type=int, default=200, help="jobs (default: 200)")
    demo.add_argument("--hosts", type=int, default=40, help="hosts (default: 40)")
    demo.add_argument("--bad-hosts", type=int, default=2, help="planted faulty hosts (default: 2)")
    demo.add_argument("--seed", type=int, default=13, help="random seed (default: 13)")
    add_output_options(demo, FORMATS)
    demo.set_defaults(func=run_demo)

    serve = commands.add_parser("serve", help="the web app with the /fleet page on this table")
    serve.add_argument("table", nargs="?", default=DEFAULT_TABLE, metavar="TABLE", help=f"the table (default: {DEFAULT_TABLE})")
    add_server_options(serve)
    serve.set_defaults(func=run_serve)
    fleet.set_defaults(func=lambda args: _usage(fleet))


def _usage(parser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_scan(args) -> int:
    from ..fleet.cluster import require
    from ..fleet.progress import JobProgress
    from ..fleet.scan import scan_fleet

    require()
    progress = JobProgress(sys.stderr)
    try:
        result = scan_fleet(args.roots, args.out, rescan=args.rescan, scheduler=args.scheduler,
                            scheduler_file=args.scheduler_file, workers=args.workers, memory_limit=args.memory_limit,
                            observer=progress)
    except KeyboardInterrupt:
        print(f"firstfault: interrupted; the jobs finished so far are in {args.out}: run the same command to go on",
              file=sys.stderr)
        return 130
    for item in result.skipped:
        print(f"firstfault: skipped {item.source}: {item.reason}", file=sys.stderr)
    for path, reason in result.errors:
        print(f"firstfault: not diagnosed {path}: {reason}", file=sys.stderr)
    summary = {"table": args.out, "found": result.found, "diagnosed": result.diagnosed, "unchanged": result.unchanged,
               "failed": result.failed, "not_diagnosed": [{"job_path": path, "error": reason} for path, reason in result.errors],
               "skipped": [{"source": item.source, "reason": item.reason} for item in result.skipped],
               "seconds": round(result.seconds, 3), "workers": result.workers}
    sys.stdout.write(_scan_text(summary, args.format))
    return 0


def _scan_text(summary: dict, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(summary, indent=2) + "\n"
    rate = summary["diagnosed"] / summary["seconds"] if summary["diagnosed"] and summary["seconds"] else 0.0
    line = (f"{summary['found']} jobs: {summary['diagnosed']} diagnosed, {summary['unchanged']} unchanged (skipped), "
            f"{summary['failed']} failed, {len(summary['not_diagnosed'])} not diagnosed, in {summary['seconds']:.1f} s"
            + (f", {rate:.1f} jobs/s on {summary['workers']} worker(s)" if summary["diagnosed"] else "") + f" -> {summary['table']}")
    if output_format == "markdown":
        return f"{line}\n\nNext: `firstfault fleet report {summary['table']}`\n"
    return f"{line}\nnext: firstfault fleet report {summary['table']}\n"


def run_report(args) -> int:
    from ..fleet.cluster import require
    from ..fleet.render import render_json, render_markdown, render_terminal
    from ..fleet.report import build_report
    from ..errors import UsageError
    from ..fleet.table import parts, read_rows

    require(("pyarrow",))
    if not parts(args.table):
        raise UsageError(f"no fleet table at {args.table}", f"make one first: firstfault fleet scan JOBS_ROOT --out {args.table}")
    if args.min_jobs < 1 or not 0 < args.alpha < 1:
        raise UsageError("--min-jobs must be at least 1 and --alpha between 0 and 1")
    report = build_report(read_rows(args.table), table=args.table, min_jobs=args.min_jobs, alpha=args.alpha)
    if args.format == "json":
        sys.stdout.write(render_json(report))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(report))
    else:
        sys.stdout.write(render_terminal(report, use_color(args.color, sys.stdout)))
    return 1 if report["suspect_hosts"] else 0


def run_sql(args) -> int:
    from ..fleet.sql import format_result, run_query
    from ..fleet.table import TABLE_VARIABLE

    table = args.table or os.environ.get(TABLE_VARIABLE) or DEFAULT_TABLE
    columns, rows = run_query(table, args.query)
    sys.stdout.write(format_result(columns, rows, args.format))
    return 0


def run_demo(args) -> int:
    from ..errors import UsageError
    from ..fleet.synthetic import make_fleet

    if args.jobs < 1 or args.hosts < args.bad_hosts + 2 or args.bad_hosts < 0:
        raise UsageError(f"{args.jobs} jobs over {args.hosts} hosts with {args.bad_hosts} bad hosts is not a fleet",
                         "give at least 1 job and 2 more hosts than bad hosts")
    truth = make_fleet(args.out, jobs=args.jobs, hosts=args.hosts, bad_hosts=args.bad_hosts, seed=args.seed)
    jobs_root = os.path.join(args.out, "jobs")
    summary = {"jobs_root": jobs_root, "truth": os.path.join(args.out, "truth.json"), "jobs": args.jobs, "hosts": args.hosts,
               "bad_hosts": {host: value["kind"] for host, value in truth["bad_hosts"].items()}}
    if args.format == "json":
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return 0
    planted = ", ".join(f"{host} ({kind})" for host, kind in summary["bad_hosts"].items()) or "none"
    line = f"{args.jobs} jobs over {args.hosts} hosts in {jobs_root}; planted bad hosts: {planted}; truth in {summary['truth']}"
    command = f"firstfault fleet scan {jobs_root} --out {DEFAULT_TABLE} && firstfault fleet report {DEFAULT_TABLE}"
    if args.format == "markdown":
        sys.stdout.write(f"{line}\n\nNext: `{command}`\n")
    else:
        sys.stdout.write(f"{line}\nnext: {command}\n")
    return 0


def run_serve(args) -> int:
    from ..errors import UsageError
    from ..fleet.table import TABLE_VARIABLE, parts
    from .serve import run_serve as serve_web

    if not parts(args.table):
        raise UsageError(f"no fleet table at {args.table}", f"make one first: firstfault fleet scan JOBS_ROOT --out {args.table}")
    os.environ[TABLE_VARIABLE] = os.path.abspath(args.table)
    print(f"firstfault: the fleet page is http://{args.host}:{args.port}/fleet", file=sys.stderr)
    return serve_web(args)
