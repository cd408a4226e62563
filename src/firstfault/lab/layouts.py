"""How a run's logs are captured: one launch plan per layout.

A plan is a list of processes (command, environment, where its console goes); the runner starts
them, bounds them in time and keeps the files. The layouts are the ways people keep training logs:

- `tee`: one `torchrun --tee 3` console, every worker line prefixed `[default<local_rank>]:`;
- `logdir`: `torchrun --log-dir DIR -r 3`: per-rank `DIR/<run_id>/attempt_0/<local_rank>/{stdout,stderr}.log`
  plus the agent's own console;
- `twonode`: two torchrun agents as two "nodes" (`--nnodes 2 --node-rank K`, c10d rendezvous,
  role `trainer`), each agent's console in `node<K>.log`;
- `plain`: one process per rank started by a shell line with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT,
  its output redirected to `rank<R>.log`; no launcher, no prefixes;
- `srun`: one task per rank as `srun --label` starts them (SLURM_PROCID/SLURM_NTASKS, no torchrun), every
  task's lines in one `slurm-<job id>.out` prefixed `<task>: `, with srun's own reports (slurm.py);
- `spawn`: one `python spawn_launch.py` that starts the ranks with `torch.multiprocessing.spawn`, every
  line unprefixed in one `console.log`, spawn's own report of a dead process at the end;
- `mpirun`, `mpirun-tag`: Open MPI's `mpirun -np N` starts the ranks (the script reads
  OMPI_COMM_WORLD_RANK/SIZE, as Horovod's and many HPC scripts do), every line in one `console.log`,
  unprefixed or, with `--tag-output`, prefixed `[1,<rank>]<stdout>:` / `<stderr>:`, and mpirun's own
  report of the job's end (needs `mpirun` on the PATH: `apt-get install openmpi-bin`);
- `mpirun-files`: the same with `--output-filename DIR:nocopy`: each rank's output in
  `DIR/1/rank.<R>/stdout` and `stderr` (Open MPI's own layout), mpirun's report in `console.log`;
- `mpirun-stamped`: `--tag-output --timestamp-output`: mpirun's time (ctime's form, to the second)
  before each tag, `Sun Dec  6 15:47:17 2026[1,0]<stdout>:`.
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .slurm import SlurmJob

LAYOUTS = ("tee", "logdir", "twonode", "plain", "srun", "spawn", "mpirun", "mpirun-tag", "mpirun-files", "mpirun-stamped")
MPIRUN_LAYOUTS = ("mpirun", "mpirun-tag", "mpirun-files", "mpirun-stamped")
SPAWN_LAUNCHER = str(Path(__file__).with_name("spawn_launch.py"))

LAYOUT_HELP = {
    "tee": "combined torchrun console (--tee 3), lines prefixed [default<local_rank>]:",
    "logdir": "torchrun --log-dir: per-rank stdout.log/stderr.log plus the launcher console",
    "twonode": "two torchrun agents as two nodes (--nnodes 2, c10d rendezvous), node<K>.log each",
    "plain": "per-rank python processes with RANK/WORLD_SIZE env, output redirected to rank<R>.log",
    "srun": "srun --label style: one task per rank (SLURM_PROCID), all lines in slurm-<job>.out prefixed '<task>: '",
    "spawn": "torch.multiprocessing.spawn from one python process, all lines unprefixed in console.log",
    "mpirun": "Open MPI's mpirun -np N (ranks from OMPI_COMM_WORLD_RANK), all lines unprefixed in console.log",
    "mpirun-tag": "mpirun --tag-output: every line in console.log prefixed [1,<rank>]<stdout>: or <stderr>:",
    "mpirun-files": "mpirun --output-filename logs/mpi:nocopy: each rank's output in logs/mpi/1/rank.<R>/{stdout,stderr}",
    "mpirun-stamped": "mpirun --tag-output --timestamp-output: mpirun's time, then [1,<rank>]<stdout>:, before every line",
}


@dataclass
class Process:
    """One process the runner starts: a torchrun agent or a rank."""

    name: str  # agent0, agent1, rank3
    command: list[str]
    log_file: Path  # stdout and stderr together, as a console or `> file 2>&1` would keep them
    env: dict = field(default_factory=dict)
    node: int | None = None  # the node of a two-node agent
    rank: int | None = None  # the global rank of a plain process or srun task
    srun_task: bool = False  # its output goes through srun's labelled forwarding (slurm.JobOutput)


@dataclass
class LaunchPlan:
    layout: str
    processes: list[Process]
    description: str


def _torchrun(python: str) -> list[str]:
    # (its flags are spelled with underscores below, as every release takes them: torch 1.x's
    # torchrun knows no `--nproc-per-node`, 2.x takes both)
    return [python, "-m", "torch.distributed.run"]


def plan_launch(
    layout: str,
    *,
    world_size: int,
    script: str,
    script_args: list[str],
    logs_dir: Path,
    port: int,
    python: str = sys.executable,
    skip_node: int | None = None,
    skip_rank: int | None = None,
    rdzv_timeout: float | None = None,
    slurm_job: SlurmJob | None = None,
) -> LaunchPlan:
    """The processes that run `script` with `world_size` ranks in `layout`, writing under `logs_dir`."""
    if layout == "tee":
        command = _torchrun(python) + [
            "--nproc_per_node", str(world_size), "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--tee", "3", script, *script_args,
        ]
        return LaunchPlan(layout, [Process("agent0", command, logs_dir / "console.log")],
                          f"torchrun --nproc_per_node {world_size} --master_addr 127.0.0.1 --master_port P --tee 3; "
                          "the combined console in logs/console.log")
    if layout == "logdir":
        command = _torchrun(python) + [
            "--nproc_per_node", str(world_size), "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--log_dir", str(logs_dir / "torchelastic"), "-r", "3", script, *script_args,
        ]
        return LaunchPlan(layout, [Process("agent0", command, logs_dir / "launcher.log")],
                          f"torchrun --nproc_per_node {world_size} --log_dir logs/torchelastic -r 3; per-rank files under "
                          "logs/torchelastic/<run_id>/attempt_0/<local_rank>/, the agent's console in logs/launcher.log")
    if layout == "twonode":
        if world_size % 2:
            raise ValueError("the twonode layout needs an even world size")
        per_node = world_size // 2
        rdzv_conf = ["--rdzv_conf", f"join_timeout={int(rdzv_timeout)}"] if rdzv_timeout else []
        processes = []
        for node in range(2):
            if node == skip_node:
                continue
            command = _torchrun(python) + [
                "--nnodes", "2", "--node_rank", str(node), "--nproc_per_node", str(per_node),
                "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id", "lab-job",
                *rdzv_conf, "--role", "trainer", "--tee", "3", script, *script_args,
            ]
            processes.append(Process(f"agent{node}", command, logs_dir / f"node{node}.log", node=node))
        return LaunchPlan(layout, processes,
                          f"two torchrun agents on one machine as two nodes: --nnodes 2 --node_rank K --nproc_per_node "
                          f"{per_node} --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:P --role trainer --tee 3; each "
                          "agent's console in logs/node<K>.log (prefixes [trainer<local_rank>]: are local ranks)")
    if layout == "plain":
        processes = []
        for rank in range(world_size):
            if rank == skip_rank:
                continue
            env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world_size),
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            # Through a shell that stays the parent, as a launch script does: it reports a killed child.
            # (`bash -c` with one simple command would exec it; the `exit` keeps bash around.)
            line = " ".join(shlex.quote(part) for part in [python, script, *script_args]) + "; exit $?"
            processes.append(Process(f"rank{rank}", ["bash", "-c", line], logs_dir / f"rank{rank}.log", env=env, rank=rank))
        return LaunchPlan(layout, processes,
                          "one shell line per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set, "
                          "output redirected to logs/rank<R>.log (no prefixes; the rank is only in the file name)")
    if layout == "srun":
        job = slurm_job or SlurmJob.new()
        processes = []
        for rank in range(world_size):
            if rank == skip_rank:
                continue
            # what an sbatch script exports before `srun --label python train.py`; the script reads SLURM_PROCID
            env = {**job.task_env(rank, world_size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            processes.append(Process(f"task{rank}", [python, script, *script_args], logs_dir / job.output_name,
                                     env=env, rank=rank, srun_task=True))
        return LaunchPlan(layout, processes,
                          f"one task per rank as srun --label --ntasks {world_size} starts them (SLURM_PROCID, "
                          f"SLURM_NTASKS, MASTER_ADDR/MASTER_PORT exported; no torchrun); every task's lines in "
                          f"logs/{job.output_name} prefixed '<task>: '; the lab plays srun (its labelling and its "
                          f"task-exit lines, in Slurm's formats) on node {job.node}")
    if layout == "spawn":
        command = [python, SPAWN_LAUNCHER, str(world_size), str(port), script, *script_args]
        return LaunchPlan(layout, [Process("agent0", command, logs_dir / "console.log")],
                          f"python spawn_launch.py: torch.multiprocessing.spawn of {world_size} processes (RANK = "
                          "process index, MASTER_ADDR/MASTER_PORT set), every line unprefixed in logs/console.log")
    if layout in MPIRUN_LAYOUTS:
        tag = {"mpirun-tag": ["--tag-output"], "mpirun-files": ["--output-filename", f"{logs_dir / 'mpi'}:nocopy"],
               "mpirun-stamped": ["--tag-output", "--timestamp-output"]}.get(layout, [])
        # (root in a container needs --allow-run-as-root; more ranks than cores, --oversubscribe)
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(world_size), *tag,
                   "-x", "MASTER_ADDR=127.0.0.1", "-x", f"MASTER_PORT={port}", python, script, *script_args]
        flags = " ".join(tag).replace(str(logs_dir), "logs")
        where = ("each rank's lines in logs/mpi/1/rank.<R>/stdout and stderr, mpirun's own in logs/console.log"
                 if layout == "mpirun-files" else "every line in logs/console.log")
        return LaunchPlan(layout, [Process("agent0", command, logs_dir / "console.log")],
                          f"mpirun --allow-run-as-root --oversubscribe -np {world_size} {flags} -x MASTER_ADDR "
                          f"-x MASTER_PORT python train.py (Open MPI; the script reads OMPI_COMM_WORLD_RANK/SIZE); {where}"
                          .replace("  ", " "))
    raise ValueError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")


def named_host(command: list[str], hostname: str, hosts_file: Path) -> list[str]:
    """`command` run on a host of its own name: in a UTS namespace of its own (`unshare --uts`, root
    only) whose host name is `hostname`, and a mount namespace where `hosts_file` is /etc/hosts (so
    that every lab host name resolves, to a loopback address, as a cluster's names do: c10d's rendezvous
    hands the store's host name to the workers). Everything that asks the host's name sees it:
    torchrun's failure table (`host : NAME`), its rendezvous node names, `socket.gethostname()`.
    The network stays the machine's. unshare and the shell exec the command: it keeps the process
    id the runner started."""
    script = 'mount --bind "$1" /etc/hosts && hostname "$0" && shift && exec "$@"'
    return ["unshare", "--uts", "--mount", "sh", "-c", script, hostname, str(hosts_file), *command]


def on_hosts(plan: LaunchPlan, hosts: list[str], work: Path) -> LaunchPlan:
    """The plan with each process on its node's host: a two-node agent on `hosts[node]`, every
    other process on `hosts[0]` (one machine). The hosts file they share is written to `work`."""
    hosts_file = work / "hosts"
    machine = Path("/etc/hosts").read_text(errors="replace") if Path("/etc/hosts").is_file() else ""
    # each name on a loopback address of its own, so that looking an address up gives the name back
    # (torchrun's failure table says `socket.getfqdn()`: on 127.0.0.1 that is `localhost`)
    own = "".join(f"127.0.1.{index} {name}\n" for index, name in enumerate(hosts, start=1))
    hosts_file.write_text(machine.rstrip("\n") + "\n" + own)
    for process in plan.processes:
        process.command = named_host(process.command, hosts[process.node or 0], hosts_file)
    return plan


# how the training script prints an uncaught exception (`lab run --tracebacks`): as Python does, or
# through rich's handler (train.py and spawn_launch.py read LAB_TRACEBACKS)
TRACEBACK_RENDERERS = ("python", "rich")


def base_env() -> dict:
    """The environment every process gets: ours, minus anything that would change torch's behaviour."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TORCH_", "NCCL_", "GLOO_", "MASTER_", "PYTORCH_", "SLURM_", "SLURMD_"))
           and key not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")}
    env["PYTHONUNBUFFERED"] = "1"
    return env
