"""`firstfault lab`: run small real training jobs with injected faults and diagnose their logs."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

from .options import FORMATS, add_output_options, use_color

NEEDS_TORCH = ("firstfault lab needs PyTorch (the CPU build is enough): "
               "pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install 'firstfault[lab]'")


def register(subparsers) -> None:
    from ..lab.layouts import LAYOUTS, TRACEBACK_RENDERERS

    lab = subparsers.add_parser("lab", help="reproduce failures with small real training jobs (needs PyTorch)")
    lab_sub = lab.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    listing = lab_sub.add_parser("list", help="show the scenarios")
    add_output_options(listing, FORMATS)
    listing.set_defaults(func=run_list)
    run = lab_sub.add_parser(
        "run", help="run one scenario for real, keep its logs as a labelled case, print the diagnosis",
        description="Runs the scenario with torchrun/gloo on CPU, writes DIR/case.yaml (the injected truth) and "
                    "DIR/logs/, then diagnoses the logs. Exit 0 when the diagnosis matches the injected truth, "
                    "1 when it does not, 2 when the run could not be made.")
    run.add_argument("scenario", metavar="SCENARIO")
    run.add_argument("--rank", type=int, default=None, help="the rank to inject the fault into (scenario default)")
    run.add_argument("--world-size", type=int, default=None, help="number of ranks, 2-16 (scenario default)")
    run.add_argument("--layout", choices=LAYOUTS, default=None, help="how the logs are captured (scenario default)")
    run.add_argument("--out", metavar="DIR", default=None, help="where to keep the case (default: a new temporary folder)")
    run.add_argument("--fixed", action="store_true", help="apply the scenario's fix: the run should be healthy")
    run.add_argument("--tracebacks", choices=TRACEBACK_RENDERERS, default="python",
                     help="how the script prints an uncaught exception: as Python does (default), or through rich's "
                          "handler, as `rich.traceback.install()` scripts and typer CLIs do (needs rich)")
    run.add_argument("--record", action="store_true",
                     help="decorate the script's entry point with torch's @record: torchrun's failure table then "
                          "shows each worker's traceback")
    run.add_argument("--python", metavar="PATH", default=None,
                     help="run the job with this Python (another venv's, to run another torch release: 1.12 and later, "
                          "Python 3.8 and later); torch must be installed there")
    run.add_argument("--hosts", metavar="NAME[,NAME]", default=None,
                     help="run each node on a host of this name (two for --layout twonode, one otherwise), each in a "
                          "UTS namespace of its own: torchrun's lines then name the host (needs root)")
    add_output_options(run, FORMATS)
    run.set_defaults(func=run_scenario)


def run_list(args) -> int:
    from ..lab.scenarios import SCENARIOS

    if args.format == "json":
        rows = [{"name": s.name, "description": s.description, "class": s.expect_class, "layouts": list(s.layouts),
                 "fix": list(s.fix_args)} for s in SCENARIOS]
        print(json.dumps(rows, indent=2))
        return 0
    if args.format == "markdown":
        print("| scenario | class | what it does | fix |\n|---|---|---|---|")
        for scenario in SCENARIOS:
            fix = f"`{' '.join(scenario.fix_args)}`" if scenario.fixable else ""
            print(f"| `{scenario.name}` | `{scenario.expect_class}` | {scenario.description} | {fix} |")
        return 0
    from ..render.entry_terminal import Style

    style = Style(use_color(args.color, sys.stdout))
    width = max(len(s.name) for s in SCENARIOS)
    class_width = max(len(s.expect_class) for s in SCENARIOS)
    for scenario in SCENARIOS:
        fix = f"  [fix: {' '.join(scenario.fix_args)}]" if scenario.fixable else ""
        print(style("literal", f"{scenario.name:<{width}}") + f"  {scenario.expect_class:<{class_width}}  {scenario.description}{fix}")
    print(f"\n{len(SCENARIOS)} scenarios; run one with: firstfault lab run NAME [--layout L] [--world-size N] [--rank R]")
    return 0


def run_scenario(args) -> int:
    from ..lab import scenarios

    try:
        scenario = scenarios.get(args.scenario)
    except KeyError:
        print(f"firstfault: error: no scenario {args.scenario!r}", file=sys.stderr)
        print("hint: `firstfault lab list` shows them", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401  (the runner needs it in-process too)
    except ImportError:
        print(NEEDS_TORCH, file=sys.stderr)
        return 2
    if args.tracebacks == "rich" and importlib.util.find_spec("rich") is None:
        print("firstfault: error: --tracebacks rich needs rich in this Python: pip install rich", file=sys.stderr)
        return 2
    from ..lab.runner import LabError, diagnose_case, judge, run_scenario as run
    python = args.python or sys.executable
    if args.python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        print(f"firstfault: error: --python {python}: no such executable", file=sys.stderr)
        print("hint: give the interpreter of a venv that has torch, e.g. /path/to/venv/bin/python", file=sys.stderr)
        return 2
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix=f"firstfault-lab-{scenario.name}-"))
    try:
        lab_run = run(scenario, out_dir=out_dir, layout=args.layout, world_size=args.world_size, rank=args.rank,
                      fixed=args.fixed, observer=lambda line: print(line, file=sys.stderr), tracebacks=args.tracebacks,
                      record=args.record, python=python,
                      hosts=[name.strip() for name in args.hosts.split(",")] if args.hosts else None)
    except LabError as exc:
        print(f"firstfault: error: {exc}", file=sys.stderr)
        return 2
    if lab_run.timed_out:
        print(f"firstfault: warning: the run hit its {scenario.wall_timeout:.0f} s limit and was killed", file=sys.stderr)
    print(f"case kept in {out_dir} (case.yaml + logs/)", file=sys.stderr)
    try:
        contract = diagnose_case(out_dir)
    except NotImplementedError:
        print("firstfault: error: the diagnosis engine is not available in this build; the case is kept", file=sys.stderr)
        return 2
    problems = judge(contract, lab_run.expect)
    if args.format == "json":
        print(json.dumps(contract, indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        print("".join(f"- **{label.strip(': ')}**: {text.strip()}\n" for label, text in
                      (line.split(":", 1) for line in describe(lab_run.expect, contract, problems).splitlines()
                       if not line.startswith(" ")) ), end="")
    else:
        print(describe(lab_run.expect, contract, problems))
    return 1 if problems else 0


def describe(expect: dict, contract: dict, problems: list[str]) -> str:
    primary = contract.get("primary") or {}
    initiating = primary.get("initiating") or {}
    injected = expect["class"] + (f" on rank {expect['initiating_rank']}" if expect["initiating_rank"] is not None else "")
    lines = [f"injected:  {injected}"]
    if contract["status"] == "healthy":
        lines.append("diagnosis: healthy (no failure found)")
    else:
        where = f" on rank {initiating.get('rank')}" if initiating.get("rank") is not None else ""
        source = f" ({initiating.get('source')}:{initiating.get('line')})" if initiating.get("source") else ""
        lines.append(f"diagnosis: {contract['status']}: {primary.get('failure_id')}{where}{source}")
        if primary.get("summary"):
            lines.append(f"           {primary['summary']}")
    lines.append("verdict:   " + ("right" if not problems else "wrong: " + "; ".join(problems)))
    return "\n".join(lines)
