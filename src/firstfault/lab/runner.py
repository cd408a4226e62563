"""Run one scenario for real and keep it as a labelled case (case.yaml + logs/).

    run = run_scenario(get("straggler"), out_dir=Path("cases/straggler"), layout="plain", world_size=3)
    contract = diagnose_case(run.out_dir)      # the engine's answer, as the JSON contract
    problems = judge(contract, run.expect)     # [] when the diagnosis matches the injected truth

Every process runs in its own session and has a hard wall-clock limit: at the deadline the whole
process tree is killed. Progress goes to `observer` (a callable taking one line), never to print.
The parts played outside the job (scheduler, OOM killer, mirrors) are in drivers.py and slurm.py.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from . import drivers, processes
from .layouts import LAYOUT_HELP, MPIRUN_LAYOUTS, TRACEBACK_RENDERERS, LaunchPlan, base_env, on_hosts, plan_launch
from .scenarios import Scenario
from .slurm import JobOutput, SlurmJob

SCRIPT = str(Path(__file__).with_name("train.py"))
RANK_INFO_ENV = "RANK_INFO_DIR"  # train.py writes each rank's node and pid there (truth for twonode runs)
TRACEBACKS_ENV = "LAB_TRACEBACKS"  # train.py prints an uncaught exception through this renderer (rich)
RECORD_ENV = "LAB_RECORD"  # train.py's entry point is decorated with torch's @record when "1"
MARKER = "reached-step"  # rank 0 reached --marker-step, or an injected fault fired (--fault-marker)


class LabError(Exception):
    """A scenario cannot run as asked (bad layout, world size or rank)."""


@dataclass
class LabRun:
    scenario: Scenario
    layout: str
    world_size: int
    rank: int
    second_rank: int | None
    fixed: bool
    out_dir: Path
    expect: dict
    exit_codes: dict = field(default_factory=dict)
    actions: list = field(default_factory=list)  # what the driver did, for the notes
    timed_out: bool = False
    seconds: float = 0.0
    slurm_job: SlurmJob | None = None  # the emulated Slurm job, where the layout or a driver plays Slurm
    python: str = sys.executable  # the interpreter the job ran with (another venv's: another torch release)
    hosts: list[str] = field(default_factory=list)  # the host name of each node, when the run named them

    @property
    def case_id(self) -> str:
        return self.out_dir.name


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def choose(scenario: Scenario, layout: str | None, world_size: int | None, rank: int | None) -> tuple[str, int, int, int | None]:
    """Fill defaults and check that the scenario can run this way."""
    layout = layout or scenario.default_layout
    world_size = world_size or scenario.default_world_size
    rank = scenario.default_rank if rank is None else rank
    if layout not in scenario.layouts:
        raise LabError(f"scenario {scenario.name} runs in layouts {', '.join(scenario.layouts)}, not {layout}")
    if scenario.rank_fixed and rank != scenario.default_rank:
        raise LabError(f"scenario {scenario.name} always fails on rank {scenario.default_rank} (its fault is in what "
                       f"that rank alone does): leave out --rank, or give --rank {scenario.default_rank}")
    if layout == "twonode" and world_size % 2:
        raise LabError("the twonode layout needs an even --world-size")
    second_rank = None
    if "{second_rank}" in " ".join(scenario.train_args):
        if world_size < 3:
            raise LabError(f"scenario {scenario.name} needs --world-size 3 or more")
        second_rank = (rank + 2) % world_size
    if not 2 <= world_size <= 16:
        raise LabError("--world-size must be between 2 and 16")
    if not 0 <= rank < world_size:
        raise LabError(f"--rank must be between 0 and {world_size - 1}")
    return layout, world_size, rank, second_rank


def expected_truth(scenario: Scenario, *, world_size: int, rank: int, second_rank: int | None,
                   fixed: bool, node_of_rank: dict[int, int], host: str | None = None) -> dict:
    """The case's `expect:` block, from the injection alone. `host`: the node the logs name (Slurm's
    lines do), which is where the faulty rank ran."""
    if fixed:
        return {"class": "healthy", "also_acceptable": [], "initiating_rank": None,
                "initiating_host": None, "collateral_ranks": []}
    initiating = rank if scenario.initiator == "fault" else None
    if scenario.collateral == "others":
        collateral = [r for r in range(world_size) if r not in (rank, second_rank)]
    elif scenario.collateral == "other-node":
        collateral = sorted(r for r, node in node_of_rank.items() if node == 0)
    else:
        collateral = []
    return {"class": scenario.expect_class, "also_acceptable": list(scenario.also_acceptable),
            "initiating_rank": initiating, "initiating_host": host if initiating is not None else None,
            "collateral_ranks": collateral}


def _script_args(scenario: Scenario, *, rank: int, second_rank: int | None, work: Path, fixed: bool,
                 download_url: str = "<mirror>") -> list[str]:
    values = {"rank": rank, "second_rank": second_rank, "work": work, "download_url": download_url}
    args = [part.format(**values) for part in scenario.train_args]
    args += ["--pg-timeout", str(scenario.pg_timeout)]
    if fixed:
        args += list(scenario.fix_args)  # argparse: the last value of a repeated option wins
    return args


def _sigterm_targets(plan: LaunchPlan, started: dict) -> list[tuple[str, subprocess.Popen, bool]]:
    """Who the 'scheduler' signals: the launcher (node 1's in twonode), or every rank without one
    (srun's tasks, as Slurm signals every task of the step; the plain layout's shells, with their
    process groups)."""
    if plan.layout in ("plain", "srun"):
        return [(name, popen, plan.layout == "plain") for name, popen in started.items()]
    name = "agent1" if plan.layout == "twonode" else "agent0"
    return [(name, started[name], False)]


@dataclass
class _Supervision:
    """One run in progress: its processes and the parts the lab plays around it."""

    plan: LaunchPlan
    started: dict[str, subprocess.Popen]
    scenario: Scenario
    run: LabRun
    work: Path
    logs_dir: Path
    rank_info: Path
    started_at: float
    job_output: JobOutput | None = None
    reported: set = field(default_factory=set)
    cancelled: bool = False

    def elapsed(self) -> str:
        return f"t={time.monotonic() - self.started_at:.1f}s"


def _act_on_marker(sup: _Supervision, marker: Path, seen_at: float) -> bool:
    """The driver's move once the marker is there; True when it has acted."""
    driver = sup.scenario.driver
    if driver == "sigterm-launcher":
        for name, popen, whole_group in _sigterm_targets(sup.plan, sup.started):
            if whole_group:
                processes.signal_group(popen, signal.SIGTERM)
            else:
                popen.send_signal(signal.SIGTERM)
            sup.run.actions.append(f"sent SIGTERM to {name} at {sup.elapsed()}")
        return True
    if driver == "oom-killer":
        fields = marker.read_text().split()
        if len(fields) < 2:
            return False  # not written whole yet (train.py renames it into place): the next look acts
        victim = int(fields[1])
        drivers.oom_kill(sup.rank_info, victim, sup.logs_dir / "dmesg.txt", sup.run.actions)
        return True
    if driver == "time-limit" and time.monotonic() >= seen_at + sup.scenario.cancel_after:
        if sup.job_output is None:  # torchrun's console has its own file; sbatch's output keeps Slurm's lines
            sup.job_output = JobOutput(sup.logs_dir / sup.run.slurm_job.output_name)
        after = "the fault fired" if sup.scenario.initiator == "fault" else "rank 0 reached the marker step"
        sup.run.actions.append(f"the scheduler cancelled the job at {sup.elapsed()}, "
                               f"{sup.scenario.cancel_after:.0f} s after {after}")
        drivers.cancel_job(sup.run.slurm_job, sup.scenario.cancel_reason, sup.started, sup.job_output,
                           srun_step=sup.plan.layout == "srun", actions=sup.run.actions)
        sup.cancelled = True
        return True
    return driver not in ("sigterm-launcher", "oom-killer", "time-limit")


def _report_task_exits(sup: _Supervision) -> None:
    """srun's line for each task that ended badly, after the task's last output."""
    for process in sup.plan.processes:
        popen = sup.started[process.name]
        if not process.srun_task or process.name in sup.reported or popen.poll() is None:
            continue
        sup.reported.add(process.name)
        sup.job_output.drain(process.rank)
        line = sup.run.slurm_job.task_exit_line(process.rank, popen.returncode, sup.cancelled)
        if line:
            sup.job_output.write_line(line)


def _supervise(sup: _Supervision) -> None:
    deadline = sup.started_at + sup.scenario.wall_timeout
    marker = sup.work / MARKER
    seen_at, acted = None, False
    while any(popen.poll() is None for popen in sup.started.values()):
        if time.monotonic() > deadline:
            sup.run.timed_out = True
            for popen in sup.started.values():
                processes.kill_tree(popen)
            sup.run.actions.append(f"hard timeout after {sup.scenario.wall_timeout:.0f} s: killed every process")
            break
        if seen_at is None and marker.exists():
            seen_at = time.monotonic()
        if seen_at is not None and not acted:
            acted = _act_on_marker(sup, marker, seen_at)
        _report_task_exits(sup)
        time.sleep(0.05)
    for name, popen in sup.started.items():
        popen.wait()
        sup.run.exit_codes[name] = popen.returncode
    _report_task_exits(sup)


def _node_of_rank(rank_info: Path) -> dict[int, int]:
    return {rank: info["node"] for rank, info in drivers.rank_info(rank_info).items()}


def _launcher_node_of_rank(sup: _Supervision) -> dict[int, int]:
    """Each rank's node as the lab numbered its launchers (agent K, its console nodeK.log, its host
    hosts[K]): the agent that started the rank. (The rendezvous numbers the nodes in the order they
    joined, which is not the lab's: c10d ignores `--node_rank`.)"""
    agents = {sup.started[process.name].pid: process.node for process in sup.plan.processes
              if process.node is not None and process.name in sup.started}
    return {rank: agents[info["parent"]] for rank, info in drivers.rank_info(sup.rank_info).items()
            if info.get("parent") in agents}


def _host_of_rank(run: LabRun, sup: _Supervision) -> str | None:
    """The host the faulty rank ran on, where the run's lines can name it: the host names the run
    gave its nodes, in the layouts whose torchrun agents say them (their failure table and
    rendezvous), or Slurm's node (its lines name it: srun's, or a time limit's cancel)."""
    if run.layout in MPIRUN_LAYOUTS and (node := _mpirun_named_node(run, sup)) is not None:
        return node
    if run.hosts and run.layout == "twonode":  # (a rank that died before it wrote its node: where it ran is not known)
        node = _launcher_node_of_rank(sup).get(run.rank)
        return run.hosts[node] if node is not None and node < len(run.hosts) else None
    if run.layout == "srun" or (run.scenario.driver == "time-limit" and sup.cancelled):
        return run.slurm_job.node  # Slurm's lines name its node (the batch node, where one machine's processes ran)
    if run.hosts and run.layout in ("plain", "spawn", *MPIRUN_LAYOUTS):
        return None  # (no launcher of theirs says the host: nothing in their logs names it)
    return run.hosts[0] if run.hosts else None


def _mpirun_named_node(run: LabRun, sup: _Supervision) -> str | None:
    """The node mpirun names for the faulty rank: it does when a signal ended that rank
    (`mpirun noticed that process rank R with PID P on node N exited on signal S`), not when it
    exited with an error (`Process name: [[J,1],R]`, no node)."""
    host = run.hosts[0] if run.hosts else socket.gethostname()
    said = re.compile(rf"process rank {run.rank} with PID \d+ on node {re.escape(host)} exited on signal")
    console = sup.logs_dir / "console.log"
    return host if console.is_file() and said.search(console.read_text(errors="replace")) else None


def check_hosts(layout: str, hosts: list[str]) -> None:
    """Host names the run can give its nodes: one per node, each a valid name."""
    nodes = 2 if layout == "twonode" else 1
    if layout == "srun":
        raise LabError("the srun layout names its node itself (Slurm's lines): leave out --hosts")
    if len(hosts) != nodes:
        raise LabError(f"the {layout} layout runs on {nodes} host(s): give {nodes} name(s) to --hosts, not {len(hosts)}")
    for name in hosts:
        if not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,62})", name):
            raise LabError(f"{name!r} is not a host name (letters, digits, '.' and '-', up to 63)")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        raise LabError("--hosts runs each node in a UTS and mount namespace of its own (unshare): it needs root and util-linux")


def run_scenario(scenario: Scenario, *, out_dir: Path, layout: str | None = None, world_size: int | None = None,
                 rank: int | None = None, fixed: bool = False, python: str = sys.executable, observer=None,
                 tracebacks: str = "python", record: bool = False, hosts: list[str] | None = None) -> LabRun:
    """Run `scenario` for real; keep its logs and case.yaml in `out_dir`. `tracebacks`: how the
    script prints an uncaught exception, as Python does or through rich's handler; `record`: its
    entry point decorated with torch's @record (the failure table shows each worker's traceback);
    `hosts`: a host name per node (two for twonode), each node run in a UTS namespace of that name."""
    layout, world_size, rank, second_rank = choose(scenario, layout, world_size, rank)
    hosts = list(hosts or [])
    if hosts:
        check_hosts(layout, hosts)
    if tracebacks not in TRACEBACK_RENDERERS:
        raise LabError(f"no traceback renderer {tracebacks!r}: choose one of {', '.join(TRACEBACK_RENDERERS)}")
    if fixed and not scenario.fixable:
        raise LabError(f"scenario {scenario.name} has no fix the lab can apply")
    notify = observer or (lambda message: None)
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise LabError(f"{out_dir} is not empty")
    logs_dir = out_dir / "logs"
    logs_dir.mkdir(parents=True)
    run = LabRun(scenario, layout, world_size, rank, second_rank, fixed, out_dir, expect={}, python=python, hosts=hosts)
    if layout == "srun" or scenario.driver == "time-limit":
        run.slurm_job = SlurmJob.new()
        if hosts:
            run.slurm_job = replace(run.slurm_job, node=hosts[0])  # the batch node: the first node's host
    work = Path(tempfile.mkdtemp(prefix=f"lab-{scenario.name}-"))
    squatter = mirror = job_output = sup = None
    started: dict[str, subprocess.Popen] = {}
    try:
        drivers.prepare_checkpoint(scenario.driver, work, run.actions)
        port = free_port()
        if scenario.driver == "busy-port":
            squatter = drivers.stale_store(port)
            run.actions.append("started a TCPStore server on the master port before the launch (a stale store "
                               "left by an earlier run)")
        if scenario.driver == "flaky-mirror":
            mirror = drivers.FlakyMirror(drops=2)
            run.actions.append("served the vocabulary from a local mirror that reset the first 2 connections")
        missing = scenario.driver == "missing-member"
        plan = plan_launch(
            layout, world_size=world_size, script=SCRIPT, logs_dir=logs_dir, port=port, python=python,
            script_args=_script_args(scenario, rank=rank, second_rank=second_rank, work=work, fixed=fixed,
                                     download_url=mirror.url if mirror else ""),
            skip_node=1 if missing else None, skip_rank=world_size - 1 if missing else None,
            rdzv_timeout=scenario.pg_timeout if missing else None, slurm_job=run.slurm_job,
        )
        if hosts:
            on_hosts(plan, hosts, work)
            run.actions.append("ran " + (f"node K on host {hosts[0]} (K=0) and {hosts[1]} (K=1)" if len(hosts) == 2
                                         else f"every process on host {hosts[0]}") + " (a UTS namespace of that name; the names resolve to loopback addresses)")
        if missing:
            run.actions.append("did not start node 1" if layout == "twonode" else f"did not start rank {world_size - 1}")
        if layout == "srun":
            job_output = JobOutput(logs_dir / run.slurm_job.output_name, ntasks=world_size)
        rank_info = work / "ranks"
        rank_info.mkdir()
        env = {**base_env(), **scenario.env, RANK_INFO_ENV: str(rank_info), TRACEBACKS_ENV: tracebacks,
               RECORD_ENV: "1" if record else "0"}
        if record:
            run.actions.append("the script's entry point was decorated with torch's @record")
        if tracebacks != "python":
            run.actions.append(f"the script printed uncaught exceptions through {tracebacks}'s traceback handler")
        notify(f"lab: running {scenario.name} ({layout}, world size {world_size}{', with its fix' if fixed else ''})")
        started_at = time.monotonic()
        for process in plan.processes:
            started[process.name] = processes.start(process, env, work, job_output)
        sup = _Supervision(plan, started, scenario, run, work, logs_dir, rank_info, started_at, job_output)
        _supervise(sup)
        run.seconds = time.monotonic() - started_at
        node_of_rank = _node_of_rank(rank_info) if layout == "twonode" else {}
        run.expect = expected_truth(scenario, world_size=world_size, rank=rank, second_rank=second_rank,
                                    fixed=fixed, node_of_rank=node_of_rank,
                                    host=_host_of_rank(run, sup))
        if sup.job_output is not None:
            sup.job_output.close()
        write_case(run, plan, _script_args(scenario, rank=rank, second_rank=second_rank, work=Path("<work>"), fixed=fixed))
        notify(f"lab: finished in {run.seconds:.1f} s, exit codes {run.exit_codes}")
        return run
    finally:
        for popen in started.values():  # interrupted (Ctrl-C, a test timeout): leave nothing running
            if popen.poll() is None:
                processes.kill_tree(popen)
                popen.wait()
        for output in (job_output, sup.job_output if sup else None):
            if output is not None:
                output.close()
        if mirror is not None:
            mirror.close()
        if squatter is not None:
            del squatter  # the store's server stops with it
        shutil.rmtree(work, ignore_errors=True)


def _release(python: str) -> str:
    """The torch release the job ran with (and the Python, when it is another interpreter's)."""
    if python == sys.executable:
        return importlib.metadata.version("torch")
    try:
        asked = subprocess.run([python, "-c", "import sys, torch; print(torch.__version__, sys.version.split()[0])"],
                               capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        asked = ""  # the case says so rather than the run failing after it was made
    torch_version, _, python_version = asked.strip().partition(" ")
    return f"{torch_version or 'unknown'}, Python {python_version or 'unknown'}"


def write_case(run: LabRun, plan: LaunchPlan, script_args: list[str]) -> None:
    scenario = run.scenario
    values = {"rank": run.rank, "second_rank": run.second_rank, "work": "<work>"}
    torch_version = _release(run.python)
    injected = scenario.notes.format(**values)
    if run.fixed:
        injected = (f"Scenario {scenario.name} with its fix applied ({' '.join(scenario.fix_args)}), which makes "
                    f"it healthy. Without the fix: {injected}")
    env = " ".join(f"{key}={value}" for key, value in scenario.env.items())
    notes = (
        f"Injected: {injected} train.py arguments: {' '.join(script_args)}."
        + (f" Environment: {env}." if env else "")
        + f" Launch: {plan.description}."
        + (f" Driver actions: {'; '.join(run.actions)}." if run.actions else "")
        + f" Observed exit codes: {', '.join(f'{name}={code}' for name, code in run.exit_codes.items())}."
        + f" Real run of torch {torch_version} (CPU, gloo); log contents are unedited."
    )
    case = {
        "id": run.case_id,
        "provenance": "real-run",
        "source": (f"firstfault lab run {scenario.name} --layout {run.layout} --world-size {run.world_size} "
                   f"--rank {run.rank}{' --fixed' if run.fixed else ''}"
                   f"{' --hosts ' + ','.join(run.hosts) if run.hosts else ''} (torch {torch_version}, CPU, gloo)"),
        "expect": run.expect,
        "notes": notes,
    }
    with open(run.out_dir / "case.yaml", "w") as handle:
        yaml.dump(case, handle, Dumper=_CaseDumper, sort_keys=False, width=100, allow_unicode=True)


class _CaseDumper(yaml.SafeDumper):
    """case.yaml as the corpus writes it: flow-style lists, long text folded (`notes: >`)."""


def _represent_str(dumper, text):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=">" if len(text) > 90 else None)


def _represent_list(dumper, items):
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=True)


_CaseDumper.add_representer(str, _represent_str)
_CaseDumper.add_representer(list, _represent_list)


def diagnose_case(case_dir: Path) -> dict:
    """The engine's diagnosis of a case's logs, as the JSON contract."""
    from ..pipeline import diagnose_paths
    from ..render.contract import to_contract

    return to_contract(diagnose_paths([str(Path(case_dir) / "logs")]))


def judge(contract: dict, expect: dict) -> list[str]:
    """What is wrong in `contract` for a case expecting `expect` (corpus README rules); [] when right."""
    from ..evaluation import class_accepted

    if expect["class"] == "healthy":
        return [] if contract["status"] == "healthy" else [f"status {contract['status']}, expected healthy"]
    problems = []
    primary = contract.get("primary") or {}
    accepted = [expect["class"], *expect.get("also_acceptable", [])]
    if contract["status"] != "failure":
        problems.append(f"status {contract['status']}, expected failure")
    if not class_accepted(primary.get("failure_id") or "", primary.get("entry_id") or "", accepted):
        named = primary.get("entry_id") or primary.get("failure_id")
        problems.append(f"class {named}, expected {' or '.join(accepted)}")
    if expect.get("initiating_rank") is not None:
        found = (primary.get("initiating") or {}).get("rank")
        if found != expect["initiating_rank"]:
            problems.append(f"initiating rank {found}, expected {expect['initiating_rank']}")
    return problems


__all__ = ["LAYOUT_HELP", "LabError", "LabRun", "diagnose_case", "judge", "run_scenario"]
