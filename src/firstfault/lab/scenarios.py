"""The lab's scenarios as data: what is injected, and the truth that follows from it.

The expected class and initiating rank come from the injected fault, never from firstfault's own
output. In `train_args` and `notes`, `{rank}` is the faulty rank (`--rank`), `{second_rank}` the
other faulty rank of two-rank scenarios, `{work}` the run's scratch folder.

`{download_url}` is the flaky mirror's address (driver `flaky-mirror`).

`initiator`: `fault` means the rank given by `--rank` started the failure; `none` means no single
rank did (every rank failed the same way, or the launcher or the environment did it).
`collateral`: `others` = every other rank (less `{second_rank}`, which failed on its own);
`none` = no rank failed only because of another; `other-node` = the ranks of node 0 when node 1 is
signalled (twonode), else none.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .layouts import LAYOUTS

# The layouts every scenario runs in; `spawn` only where a dead process is what spawn reports
# (its parent stops the others at once, so drivers that signal a launcher do not apply).
COMMON_LAYOUTS = tuple(layout for layout in LAYOUTS if layout != "spawn")

PEER = ("collective-timeout-peer-crash",)
NATIVE = ("native-crash",)
# a DataLoader worker's death as the main process sees it: DataLoader's own report, or, when a batch
# it made was in flight, the reset of the worker's resource sharer first (or instead)
WORKER_DEATH = "is killed by signal|exited unexpectedly|Connection reset by peer|Connection refused"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    expect_class: str
    notes: str  # how the truth follows from the injection
    evidence: str = ""  # a regex the logs must contain when the fault fired (a check of the lab, not of the engine)
    also_acceptable: tuple[str, ...] = ()
    initiator: str = "fault"  # fault | none
    collateral: str = "others"  # others | none | other-node
    train_args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    layouts: tuple[str, ...] = COMMON_LAYOUTS
    default_layout: str = "tee"
    default_world_size: int = 2
    default_rank: int = 1
    # the fewest ranks that show the fault as the notes tell it (a pair's deadlock needs two pairs,
    # an odd one out three): the test suite's one run per scenario uses it (the recorded runs of
    # tests/fixtures/real and FIRSTFAULT_LAB_MATRIX=1 cover the larger sizes)
    min_world_size: int = 2
    pg_timeout: float = 30.0
    # sigterm-launcher | busy-port | missing-member | stale-checkpoint | truncated-checkpoint
    # | pickled-config-checkpoint | flaky-mirror
    # | oom-killer (SIGKILL the rank that fired, log the kernel's line) | time-limit (Slurm cancels the job)
    driver: str = ""
    cancel_after: float = 0.0  # time-limit: seconds after the fault fired (or the marker step) until the cancel
    cancel_reason: str = "TIME LIMIT"  # or PREEMPTION (slurm.CANCEL_REASONS)
    fix_args: tuple[str, ...] = ()  # flags that make the run healthy
    fix_entry: str = ""  # the knowledge-base entry whose fix `fix_args` applies
    wall_timeout: float = 180.0  # a hard bound, far above the ~10-20 s a run takes on 2 idle cores

    @property
    def fixable(self) -> bool:
        return bool(self.fix_args)

    @property
    def rank_fixed(self) -> bool:
        """The fault fires on `default_rank` whatever rank is asked for: nothing the lab passes the
        script names a rank (rank 0 alone loads the resume checkpoint and broadcasts it)."""
        return self.initiator == "fault" and "{rank}" not in " ".join(self.train_args)


def _native(name, description, inject, notes, **extra):
    """One rank dies by a fatal signal, no traceback; the others fail in the collective it left."""
    return Scenario(name, description, "collective-timeout-peer-crash", notes, also_acceptable=NATIVE,
                    train_args=("--inject", inject, "--scratch-dir", "{work}/scratch"), layouts=LAYOUTS, **extra)


def _stuck(name, description, train_args, notes, **extra):
    """One rank blocks for good, the others wait (long timeout) until the scheduler's time limit."""
    return Scenario(name, description, "collective-timeout-straggler", notes,
                    train_args=(*train_args, "--fault-marker", "{work}/reached-step"), pg_timeout=600,
                    driver="time-limit", cancel_after=8, **extra)


def _exception(name, description, inject, notes, **extra):
    extra.setdefault("layouts", LAYOUTS)  # spawn re-raises the worker's exception in the parent
    return Scenario(name, description, "user-code-exception", notes, also_acceptable=PEER,
                    train_args=("--inject", inject) + extra.pop("train_args", ()), **extra)


SCENARIOS: tuple[Scenario, ...] = (
    _exception(
        "exc-missing-key", "KeyError in a DataLoader worker on one rank; the others wait in all_reduce",
        "missing-key:{rank}:2",
        "Rank {rank}'s shard has a record without 'label' in its third batch; the DataLoader worker raised "
        "KeyError, re-raised in the main process. The other ranks then failed in the DDP all_reduce.",
        train_args=("--num-workers", "1"), default_layout="logdir", default_world_size=3,
        evidence="KeyError: 'label'"),
    _exception(
        "exc-batch-mismatch", "ValueError from cross_entropy (a collate bug drops a label) on one rank",
        "batch-mismatch:{rank}:3",
        "At global step 3 rank {rank}'s batch lost its last label; F.cross_entropy raised ValueError "
        "(batch sizes differ). The other ranks failed in the DDP all_reduce.",
        default_layout="tee", default_world_size=2, default_rank=0,
        evidence='Expected input batch_size \\(16\\) to match target batch_size \\(15\\)'),
    _exception(
        "exc-index-error", "IndexError in a label lookup on one rank at a later step",
        "index-error:{rank}:9",
        "At global step 9 (epoch 1) rank {rank} looked a label up past the end of a list (IndexError). "
        "The other ranks failed in the gradient all_reduce (the job averages gradients itself, no DDP).",
        train_args=("--manual-grad-sync",), default_layout="plain", default_world_size=4, default_rank=2,
        evidence='IndexError: list index out of range'),
    _exception(
        "exc-target-out-of-bounds", "cross_entropy target out of range (unknown label) on one rank",
        "unknown-label:{rank}:1",
        "Rank {rank}'s second batch has a record with a label name outside the label set, mapped to class 4 "
        "of 4; F.cross_entropy raised 'IndexError: Target 4 is out of bounds'. The other ranks failed in "
        "the DDP all_reduce.",
        default_layout="twonode", default_world_size=4, default_rank=3,
        evidence='Target 4 is out of bounds'),
    _exception(
        "exc-zero-division", "ZeroDivisionError in evaluation at the end of an epoch on one rank",
        "zero-division:{rank}:0",
        "At the end of epoch 0 rank {rank}'s evaluation divided by an empty sample count "
        "(ZeroDivisionError). The other ranks failed in the barrier after the epoch.",
        train_args=("--manual-grad-sync",), default_layout="tee", default_world_size=3, default_rank=2,
        evidence='ZeroDivisionError'),
    Scenario(
        "exc-two-ranks", "two ranks fail with different exceptions at different times", "user-code-exception",
        "Rank {rank} raised IndexError at global step 4. Rank {second_rank} was fetching a remote blob for "
        "the same step (3 s) and then failed on its own with KeyError('label'), so it is not collateral. "
        "The remaining ranks failed in the gradient all_reduce after rank {rank} died (no DDP: the job "
        "averages gradients itself).",
        evidence="KeyError: 'label'",
        also_acceptable=PEER,
        train_args=("--inject", "index-error:{rank}:4", "--inject", "slow-fetch:{second_rank}:4:3",
                    "--inject", "missing-key:{second_rank}:4", "--manual-grad-sync"),
        layouts=("plain",), default_layout="plain", min_world_size=3, default_world_size=4, default_rank=1),
    Scenario(
        "sigkill-rank", "one rank killed by SIGKILL (as the OOM killer does)", "host-oom-killed",
        "Rank {rank} was killed with SIGKILL at global step 6 (what the kernel OOM killer sends). It left no "
        "traceback; the other ranks failed in the DDP all_reduce.",
        evidence='exitcode: -9|Killed',
        train_args=("--inject", "sigkill:{rank}:6"), default_layout="logdir", default_world_size=2),
    Scenario(
        "sigterm-launcher", "SIGTERM to the launcher (preemption) in the middle of training", "preempted-sigterm",
        "The driver sent SIGTERM to the launcher (in the plain layout: to every rank, as a scheduler does; in "
        "twonode: to node 1's agent) once rank 0 reached global step 5. No rank started it.",
        evidence='got signal: 15',
        initiator="none", collateral="other-node",
        train_args=("--epochs", "6", "--step-time", "0.05", "--marker", "{work}/reached-step", "--marker-step", "5"),
        driver="sigterm-launcher", layouts=("tee", "logdir", "twonode"), default_layout="tee", default_world_size=2),
    Scenario(
        "sigterm-handled", "preemption with a SIGTERM handler in the script that logs and exits 143",
        "preempted-sigterm",
        "The driver sent SIGTERM as in sigterm-launcher; the script's handler logged 'received SIGTERM' and "
        "exited 143. No rank started it.",
        evidence='received SIGTERM',
        initiator="none", collateral="other-node",
        train_args=("--epochs", "6", "--step-time", "0.05", "--sigterm-handler", "--marker", "{work}/reached-step",
                    "--marker-step", "5", "--manual-grad-sync"),
        driver="sigterm-launcher", default_layout="twonode", default_world_size=4),
    Scenario(
        "collective-mismatch", "one rank all_reduces a longer metrics tensor, TORCH_DISTRIBUTED_DEBUG=DETAIL",
        "collective-mismatch",
        "From global step 4 rank {rank} adds a grad-norm entry to its metrics tensor (3 -> 4 elements), so "
        "its all_reduce differs from the other ranks'. TORCH_DISTRIBUTED_DEBUG=DETAIL checks the collectives "
        "and reports the mismatch. (The job averages gradients with all_reduce instead of DDP: DDP under "
        "DETAIL crashes with SIGSEGV in torch 2.13.0+cpu.)",
        evidence='Detected mismatch between collectives',
        train_args=("--inject", "metric-extra:{rank}:4", "--manual-grad-sync"),
        env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
        default_layout="tee", min_world_size=3, default_world_size=3, default_rank=1, pg_timeout=8),
    Scenario(
        "uneven-batches", "one rank's shard is two batches shorter: the others wait at the end of the epoch",
        "uneven-batches-hang",
        "Rank {rank}'s epoch-0 shard is 2 batches shorter (6 vs 8 steps). It reached the epoch-end barrier "
        "while the others waited in the DDP all_reduce of their step 6; gloo timed out.",
        evidence='Timed out waiting',
        train_args=("--inject", "short-shard:{rank}:0:2"), pg_timeout=4,
        fix_args=("--drop-last",), fix_entry="uneven-batches-hang",
        default_layout="plain", min_world_size=3, default_world_size=3, default_rank=2),
    Scenario(
        "straggler", "one rank syncs a checkpoint to slow storage for longer than the process-group timeout",
        "collective-timeout-straggler",
        "After global step 5 rank {rank} spent 5 s 'syncing a checkpoint to remote storage' (a sleep); the "
        "process-group timeout is 3 s, so the other ranks timed out in the next all_reduce.",
        evidence='Timed out waiting',
        train_args=("--inject", "straggle:{rank}:5:5"), pg_timeout=3,
        fix_args=("--pg-timeout", "30"), fix_entry="collective-timeout-straggler",
        default_layout="tee", default_world_size=2, default_rank=0),
    Scenario(
        "rendezvous-missing-member", "a rank (plain) or a node (twonode) never joins the rendezvous",
        "rendezvous-failure",
        "The last rank (plain) or node 1 (twonode) was never started, so the rendezvous could not complete "
        "and the members that did start timed out waiting for it.",
        evidence='waiting for clients|RendezvousTimeoutError',
        initiator="none", collateral="none", driver="missing-member", pg_timeout=5,
        layouts=("plain", "twonode"), default_layout="plain", default_world_size=2),
    Scenario(
        "port-in-use", "another process already listens on MASTER_PORT", "port-in-use",
        "Before the launch the driver started a TCPStore server on the master port, as a store left over "
        "from an earlier run would hold it; the job's store server could not bind it (EADDRINUSE). Ranks that "
        "connected to the stale store timed out waiting for keys nobody wrote.",
        evidence='EADDRINUSE|address already in use',
        initiator="none", collateral="none", driver="busy-port", pg_timeout=5,
        layouts=("tee", "logdir", "plain"), default_layout="plain", default_world_size=2),
    Scenario(
        "ddp-unused-parameters", "an auxiliary head that never reaches the loss, without find_unused_parameters",
        "ddp-unused-parameters",
        "The model has an aux_head whose loss is switched off, so its parameters never get gradients; DDP "
        "was built without find_unused_parameters and every rank raised 'Expected to have finished "
        "reduction' at the second step.",
        evidence='Expected to have finished reduction',
        initiator="none", collateral="none", train_args=("--aux-head",),
        fix_args=("--find-unused-parameters",), fix_entry="ddp-unused-parameters",
        default_layout="logdir", default_world_size=2),
    Scenario(
        "ddp-reentrant-checkpoint", "a shared block checkpointed twice with use_reentrant=True under DDP",
        "ddp-mark-ready-twice",
        "The model runs the same block twice under torch.utils.checkpoint with use_reentrant=True; DDP "
        "(find_unused_parameters=True) marks its parameters ready twice and every rank raised 'Expected to "
        "mark a variable ready only once'.",
        evidence='mark a variable ready only once',
        initiator="none", collateral="none", train_args=("--activation-checkpointing", "--find-unused-parameters"),
        fix_args=("--no-reentrant",), fix_entry="ddp-mark-ready-twice",
        default_layout="tee", default_world_size=2),
    Scenario(
        "autograd-inplace", "an in-place multiply on a sigmoid output needed for backward, on one rank",
        "autograd-inplace",
        "At global step 3 rank {rank} took a code path that scales the sigmoid gate in place (gate.mul_); "
        "backward raised 'modified by an inplace operation'. The other ranks failed in the DDP all_reduce.",
        evidence='modified by an inplace operation',
        also_acceptable=PEER, train_args=("--inject", "inplace:{rank}:3"),
        fix_args=("--out-of-place",), fix_entry="autograd-inplace",
        default_layout="twonode", default_world_size=2, default_rank=1),
    Scenario(
        "loss-nan", "a corrupt record with inf features makes one rank's loss NaN", "loss-nan",
        "At global step 7 rank {rank}'s batch has an inf feature (a corrupt record); its loss became NaN and "
        "the loop's finiteness check raised FloatingPointError. The other ranks failed in the gradient "
        "all_reduce (no DDP: the job averages gradients itself).",
        evidence='Loss became infinite or NaN',
        also_acceptable=PEER, train_args=("--inject", "nan-input:{rank}:7", "--manual-grad-sync"),
        default_layout="plain", default_world_size=2, default_rank=1),
    Scenario(
        "state-dict-mismatch", "resuming from a checkpoint of a narrower model (hidden 48 vs 64)",
        "state-dict-mismatch",
        "The resume checkpoint was written by a model with hidden size 48; rank 0 loads it and broadcasts, "
        "and load_state_dict raised 'size mismatch'. The other ranks failed waiting in the broadcast.",
        evidence='size mismatch for',
        also_acceptable=PEER, train_args=("--resume", "{work}/checkpoints/last.pt"), driver="stale-checkpoint",
        default_layout="tee", default_world_size=2, default_rank=0),
    Scenario(
        "checkpoint-truncated", "resuming from a checkpoint cut to 80% of its size", "checkpoint-corrupt",
        "The resume checkpoint was truncated to 80% (an interrupted copy); rank 0's torch.load failed reading "
        "the zip archive. The other ranks failed waiting in the broadcast.",
        evidence='PytorchStreamReader failed',
        also_acceptable=PEER, train_args=("--resume", "{work}/checkpoints/last.pt"), driver="truncated-checkpoint",
        default_layout="logdir", default_world_size=3, default_rank=0),
    Scenario(
        "disk-full", "one rank's checkpoint shard goes to a full volume (/dev/full)", "disk-full",
        "Every rank saves its own shard at the end of epoch 0; rank {rank}'s shard path is a symlink to "
        "/dev/full (ENOSPC). The other ranks failed in the barrier after the save.",
        evidence='No space left on device|file write failed',
        also_acceptable=PEER,
        train_args=("--ckpt-dir", "{work}/checkpoints", "--sharded-ckpt", "--inject", "disk-full:{rank}:0",
                    "--manual-grad-sync"),
        default_layout="plain", default_world_size=3, default_rank=1),
    Scenario(
        "too-many-open-files", "a metrics writer leaks a file handle per step on a rank with a low ulimit -n",
        "too-many-open-files",
        "Rank {rank} runs with a file-descriptor limit 24 above what it had open after start-up, and the "
        "metrics writer keeps one open file per step; rank {rank} hit EMFILE. The other ranks failed in the "
        "DDP all_reduce.",
        evidence='Too many open files',
        also_acceptable=PEER,
        train_args=("--epochs", "4", "--metrics-dir", "{work}/metrics", "--inject", "fd-limit:{rank}:0:24"),
        default_layout="tee", default_world_size=2, default_rank=1),
    Scenario(
        "cuda-unavailable", "--device cuda on a CPU-only build of torch", "cuda-unavailable",
        "The job asked for cuda:<local_rank> but torch is the CPU build; every rank failed moving the model.",
        evidence='Torch not compiled with CUDA enabled',
        initiator="none", collateral="none", train_args=("--device", "cuda", "--manual-grad-sync"),
        default_layout="tee", default_world_size=2),
    Scenario(
        "healthy-noisy", "a healthy run with benign warnings and a caught, logged ImportError", "healthy",
        "No fault injected. Noise: a FutureWarning deprecation, a DataLoader warning about 4 workers on a "
        "small machine, DDP's find_unused_parameters warning, an apex ImportError caught and logged with its "
        "traceback, a metrics upload 'Connection reset by peer' that succeeded on retry.",
        evidence='training finished',
        initiator="none", collateral="none",
        train_args=("--noise", "deprecation", "--noise", "apex-probe", "--noise", "retry", "--num-workers", "4",
                    "--find-unused-parameters"),
        default_layout="tee", default_world_size=2),
    Scenario(
        "healthy-debug-logging", "a healthy run with TORCH_DISTRIBUTED_DEBUG=INFO and TORCH_CPP_LOG_LEVEL=INFO",
        "healthy",
        "No fault injected; c10d/gloo INFO logging and DDP construction diagnostics add many lines.",
        evidence='training finished',
        initiator="none", collateral="none", env={"TORCH_DISTRIBUTED_DEBUG": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"},
        default_layout="logdir", default_world_size=2),
    # Native crashes: the rank dies by a signal from the CPU or the C runtime, with no Python traceback.
    _native(
        "native-segfault", "a native extension reads through a NULL pointer on one rank (SIGSEGV)",
        "segfault:{rank}:4",
        "At global step 4 rank {rank} read through a NULL pointer in native code (ctypes.string_at(0)) and "
        "died by SIGSEGV, printing no Python traceback. The other ranks failed in the DDP all_reduce it left.",
        evidence="SIGSEGV|Segmentation fault", default_layout="tee", default_world_size=2, default_rank=1),
    _native(
        "native-bus-error", "a memory-mapped feature cache is truncated underneath one rank (SIGBUS)",
        "bus-error:{rank}:3",
        "At global step 3 rank {rank} memory-mapped its 1 MiB feature cache file, the file was truncated to 0 "
        "bytes underneath it (as a cache rebuild by another process does) and its next read touched a page "
        "past the end: SIGBUS, no Python traceback. The other ranks failed in the DDP all_reduce it left.",
        evidence="SIGBUS|Bus error", default_layout="plain", default_world_size=3, default_rank=2),
    _native(
        "native-abort", "a native assertion aborts one rank (SIGABRT)",
        "abort:{rank}:5",
        "At global step 5 rank {rank} called abort() (os.abort(), what a failed C assert does) and died by "
        "SIGABRT with no Python traceback. The other ranks failed in the DDP all_reduce it left.",
        evidence="SIGABRT|Aborted", default_layout="spawn", default_world_size=2, default_rank=1),
    _native(
        "native-cxx-terminate", "an uncaught C++ exception in a native shard reader (terminate, SIGABRT)",
        "cxx-terminate:{rank}:2",
        "At global step 2 rank {rank} threw a std::runtime_error from native code with no handler (through "
        "libstdc++'s __cxa_throw); libstdc++ printed 'terminate called after throwing an instance of "
        "'std::runtime_error'' with its what() and aborted (SIGABRT), no Python traceback. The other ranks "
        "failed in the DDP all_reduce it left.",
        evidence="terminate called after throwing", default_layout="srun", default_world_size=4, default_rank=3),
    _native(
        "native-illegal-instruction", "an instruction the CPU does not have, on one rank (SIGILL)",
        "illegal-instruction:{rank}:3",
        "At global step 3 rank {rank} executed an undefined instruction (x86-64 ud2 / AArch64 udf, as an "
        "extension built for a newer CPU does) and died by SIGILL, no Python traceback. The other ranks "
        "failed in the DDP all_reduce it left.",
        evidence="SIGILL|Illegal instruction", default_layout="twonode", default_world_size=4, default_rank=2),
    _native(
        "native-fpe", "an integer division by zero in native code on one rank (SIGFPE)",
        "fpe:{rank}:4",
        "At global step 4 rank {rank} ran an integer division by zero in native code (x86-64 idiv; the "
        "signal is raised directly on CPUs where it does not trap) and died by SIGFPE, no Python traceback. "
        "The other ranks failed in the DDP all_reduce it left.",
        evidence="SIGFPE|Floating point exception", default_layout="srun", default_world_size=2, default_rank=1),
    Scenario(
        "oom-killer", "the kernel's OOM killer SIGKILLs one rank that holds a large prefetch cache",
        "host-oom-killed",
        "At global step 5 rank {rank} allocated a 256 MiB prefetch cache; the lab, playing the kernel's OOM "
        "killer, sent it SIGKILL from outside and wrote the kernel's 'Out of memory: Killed process' line "
        "(the victim's real pid and memory figures) to logs/dmesg.txt. The other ranks failed in the DDP "
        "all_reduce it left.",
        evidence="Out of memory: Killed process", also_acceptable=PEER,
        train_args=("--inject", "oom-victim:{rank}:5", "--fault-marker", "{work}/reached-step"), driver="oom-killer",
        default_layout="tee", default_world_size=3, default_rank=2),
    # Hangs nobody timed out: the scheduler's time limit ends them.
    _stuck(
        "hang-checkpoint-time-limit", "one rank hangs writing its checkpoint shard; the time limit ends the job",
        ("--ckpt-dir", "{work}/checkpoints", "--sharded-ckpt", "--inject", "stuck-ckpt:{rank}:0"),
        "At the end of epoch 0 every rank saves its own shard; rank {rank}'s shard path blocks in open() for "
        "good (a FIFO nobody reads, as a hung mount behaves), printing nothing more. The other ranks waited in "
        "the barrier after the save (process-group timeout 600 s, never reached). 8 s after rank {rank} "
        "blocked, the lab, playing Slurm, cancelled the job DUE TO TIME LIMIT (slurmstepd's line in "
        "logs/slurm-<job>.out, SIGTERM to every process, SIGKILL after KillWait).",
        evidence="DUE TO TIME LIMIT", default_layout="tee", default_world_size=2, default_rank=1),
    _stuck(
        "hang-eval-time-limit", "rank 0 alone evaluates and waits forever on a scoring service; time limit",
        ("--inject", "stuck-eval:{rank}:0"),
        "After epoch 0 rank {rank} alone evaluates and posts to a scoring service with no timeout; the service "
        "accepted the connection and never answered, so rank {rank} blocked in recv() printing nothing more. "
        "The other ranks waited in the epoch-end barrier (process-group timeout 600 s, never reached). 8 s "
        "after rank {rank} blocked, the lab, playing Slurm, cancelled the job DUE TO TIME LIMIT.",
        evidence="DUE TO TIME LIMIT", default_layout="srun", min_world_size=3, default_world_size=3, default_rank=0),
    Scenario(
        "exc-then-time-limit", "one rank raises IndexError but a non-daemon thread keeps it alive; time limit",
        "user-code-exception",
        "At global step 5 rank {rank} raised IndexError (a label lookup past the end of a list); its traceback "
        "was printed, but the checkpoint-upload thread is not a daemon, so the process stayed alive and its "
        "peers never saw it leave. The other ranks waited in the gradient all_reduce (process-group timeout "
        "600 s, never reached). 8 s after the raise, the lab, playing Slurm, cancelled the job DUE TO TIME "
        "LIMIT. The exception came first; the time limit only ended the hang it caused.",
        evidence="IndexError: list index out of range", also_acceptable=PEER,
        train_args=("--upload-thread", "--manual-grad-sync", "--inject", "index-error:{rank}:5",
                    "--fault-marker", "{work}/reached-step"),
        pg_timeout=600, driver="time-limit", cancel_after=8,
        default_layout="logdir", default_world_size=3, default_rank=1),
    # A healthy, progressing run stopped from outside: the stop is the cause.
    Scenario(
        "time-limit-healthy", "a healthy run still making progress reaches its time limit", "preempted-sigterm",
        "No fault injected: the run logs steps and losses until the lab, playing Slurm, cancelled it DUE TO "
        "TIME LIMIT 6 s after rank 0 reached global step 5 (SIGTERM to every process, SIGKILL after "
        "KillWait). No rank started it.",
        evidence="DUE TO TIME LIMIT", initiator="none", collateral="none",
        train_args=("--epochs", "40", "--step-time", "0.05", "--marker", "{work}/reached-step", "--marker-step", "5"),
        driver="time-limit", cancel_after=6, default_layout="logdir", default_world_size=2),
    Scenario(
        "preempted-slurm", "Slurm preempts a healthy run whose script handles SIGTERM (exit 143)",
        "preempted-sigterm",
        "No fault injected: 6 s after rank 0 reached global step 5 the lab, playing Slurm, cancelled the job "
        "DUE TO PREEMPTION; the script's SIGTERM handler logged 'received SIGTERM' and exited 143. No rank "
        "started it.",
        evidence="DUE TO PREEMPTION", initiator="none", collateral="none",
        train_args=("--epochs", "40", "--step-time", "0.05", "--sigterm-handler", "--marker", "{work}/reached-step",
                    "--marker-step", "5"),
        driver="time-limit", cancel_after=6, cancel_reason="PREEMPTION", default_layout="srun", default_world_size=4),
    # Errors the run outlived.
    Scenario(
        "healthy-outlived-errors", "a run that retries a failed download, skips a corrupt record and warns",
        "healthy",
        "No fault injected. Rank 0 downloaded its vocabulary from a mirror that reset the first two "
        "connections: the retry loop logged both failures with their tracebacks and the third attempt "
        "succeeded. Rank 0 caught a JSONDecodeError on a corrupt metadata record and logged it with "
        "logger.exception, then went on. Every rank used deprecated torch.distributed spellings "
        "(dist.reduce_op, dist._all_gather_base), which warn (FutureWarning). Training ran to the end.",
        evidence="training finished", initiator="none", collateral="none", driver="flaky-mirror",
        train_args=("--download-url", "{download_url}", "--noise", "dist-deprecations", "--noise", "skip-corrupt"),
        default_layout="srun", default_world_size=2),
    # Collectives only some ranks call.
    Scenario(
        "collective-mismatch-extra-barrier", "rank 0 alone calls a barrier at the end of an epoch (gloo timeout)",
        "collective-mismatch",
        "After epoch 0 rank {rank} alone called dist.barrier() 'waiting for the metrics writer' (a barrier "
        "inside `if rank == ...:`). Its barrier paired with the others' epoch-end barrier, so from then on "
        "rank {rank} was one collective behind: it waited in the epoch-end barrier while the others were in "
        "epoch 1's all_reduce, and gloo timed out (5 s). No TORCH_DISTRIBUTED_DEBUG.",
        evidence="waiting for the metrics writer", train_args=("--inject", "extra-barrier:{rank}:0"), pg_timeout=5,
        default_layout="plain", min_world_size=3, default_world_size=3, default_rank=0),
    Scenario(
        "collective-after-fit", "rank 0 alone all-reduces final metrics after training finished",
        "collective-mismatch",
        "After the last epoch's barrier rank 0 logged 'training finished', and rank {rank} alone then called "
        "dist.all_reduce() 'gathering final metrics' (inside `if rank == ...:`). The other ranks had no "
        "collective left: they destroyed the process group and exited, so its all_reduce lost its peers "
        "(gloo) or timed out.",
        evidence="gathering final metrics", train_args=("--inject", "final-collective:{rank}"), pg_timeout=5,
        default_layout="tee", min_world_size=3, default_world_size=3, default_rank=0),
    Scenario(
        "p2p-deadlock", "two ranks both send first in a boundary exchange (send/recv deadlock)",
        "collective-mismatch",
        "After every epoch each pair of ranks (r, r xor 1) exchanges 4 MiB of boundary embeddings; the lower "
        "rank sends first and the higher receives first. After epoch 1 rank {rank} took the other order, so "
        "it and its partner both sent and neither received: the sends never completed and gloo timed out "
        "(5 s). The remaining pairs waited in the epoch-end barrier.",
        evidence="send operation to complete",
        train_args=("--boundary-exchange", "--inject", "p2p-order:{rank}:1"), pg_timeout=5,
        default_layout="twonode", min_world_size=4, default_world_size=4, default_rank=1),
    # Faults of the knowledge base's entries first run in session 2026-12-05 (sixth); their truth, as every
    # scenario's, follows from the injection.
    Scenario(
        "autograd-backward-twice", "a consistency loss reuses the last step's logits without detaching them",
        "autograd-backward-twice",
        "From global step 3 rank {rank} adds 0.1 * mse(logits, last step's logits) to its loss and keeps the "
        "logits undetached; at step 4 backward reached step 3's graph, freed by step 3's backward, and raised "
        "'Trying to backward through the graph a second time'. The other ranks failed in the DDP all_reduce.",
        evidence="backward through the graph a second time",
        also_acceptable=PEER, train_args=("--inject", "backward-twice:{rank}:4"), layouts=LAYOUTS,
        default_layout="logdir", default_world_size=3, default_rank=1),
    Scenario(
        "autograd-no-grad", "a probe path runs the forward under torch.no_grad on one rank, then backward",
        "autograd-no-grad-fn",
        "At global step 5 rank {rank} ran the forward inside torch.no_grad() (a probe path reusing the "
        "evaluation helper); loss.backward() raised 'element 0 of tensors does not require grad'. The other "
        "ranks failed in the DDP all_reduce.",
        evidence="does not require grad and does not have a grad_fn",
        also_acceptable=PEER, train_args=("--inject", "no-grad:{rank}:5"), layouts=LAYOUTS,
        default_layout="tee", default_world_size=2, default_rank=1),
    Scenario(
        "dtype-double-input", "one rank's records decode as float64 and meet the float32 model",
        "tensor-dtype-mismatch",
        "At global step 2 rank {rank}'s batch came as float64 (a new exporter's records); the first Linear "
        "raised 'mat1 and mat2 must have the same dtype, but got Double and Float'. The other ranks failed in "
        "the DDP all_reduce.",
        evidence="mat1 and mat2 must have the same dtype",
        also_acceptable=PEER, train_args=("--inject", "double-input:{rank}:2"), layouts=LAYOUTS,
        default_layout="plain", default_world_size=3, default_rank=2),
    Scenario(
        "host-alloc-refused", "a 4 GiB buffer on a rank whose container caps virtual memory (ulimit -v)",
        "host-memory-enomem",
        "At global step 3 rank {rank} capped its address space 512 MiB above its size (as ulimit -v in its "
        "container) and allocated a 4 GiB buffer; the CPU allocator raised 'can't allocate memory' (ENOMEM). "
        "No process was killed. The other ranks failed in the DDP all_reduce.",
        evidence="can't allocate memory",
        also_acceptable=PEER, train_args=("--inject", "alloc-limit:{rank}:3"), layouts=LAYOUTS,
        default_layout="twonode", default_world_size=4, default_rank=2),
    Scenario(
        "dataloader-worker-killed", "the kernel kills one rank's DataLoader worker (SIGKILL)",
        "dataloader-worker-killed",
        "While decoding a record of rank {rank}'s fourth batch its DataLoader worker was killed by SIGKILL (as "
        "the OOM killer kills a grown worker); the DataLoader raised 'DataLoader worker (pid N) is killed by "
        "signal: Killed' in rank {rank}'s main process. The other ranks failed in the DDP all_reduce.",
        evidence=WORKER_DEATH,
        also_acceptable=("host-oom-killed", *PEER), layouts=LAYOUTS,
        train_args=("--inject", "worker-killed:{rank}:3", "--num-workers", "1"),
        default_layout="logdir", default_world_size=2, default_rank=1),
    Scenario(
        "dataloader-worker-killed-in-flight",
        "the kernel kills one rank's DataLoader worker while its batches are being handed over",
        "dataloader-worker-killed",
        "While decoding a record of rank {rank}'s fourth batch its DataLoader worker was killed by SIGKILL 3 ms "
        "later (as the OOM killer may), with batches it made still in flight: the main process, taking a "
        "batch's tensors from the worker's resource sharer, may raise 'Connection reset by peer' (or "
        "'Connection refused') before, or instead of, DataLoader's own report of the killed worker. The "
        "other ranks failed in the DDP all_reduce.",
        evidence=WORKER_DEATH,
        also_acceptable=("host-oom-killed", *PEER), layouts=LAYOUTS,
        train_args=("--inject", "worker-killed:{rank}:3:3", "--num-workers", "1"),
        default_layout="logdir", default_world_size=2, default_rank=1),
    Scenario(
        "missing-module", "one node's image lacks the fused attention package (ModuleNotFoundError)",
        "python-import-error",
        "Rank {rank} imported flash_attn while building its model (after the process group was up); the "
        "package is not installed and it raised ModuleNotFoundError. The other ranks failed in DDP's "
        "construction, which broadcasts the parameters.",
        evidence="No module named 'flash_attn'",
        also_acceptable=PEER, train_args=("--inject", "missing-module:{rank}"), layouts=LAYOUTS,
        default_layout="twonode", default_world_size=4, default_rank=3),
    Scenario(
        "checkpoint-weights-only", "resuming from a checkpoint that pickled the run's argparse.Namespace",
        "checkpoint-weights-only-unpickling",
        "The resume checkpoint holds the earlier run's argparse.Namespace next to the weights; rank 0 loads "
        "it with torch.load(weights_only=True) and the unpickler refused the global argparse.Namespace. The "
        "other ranks failed waiting in the broadcast.",
        evidence="Weights only load failed",
        also_acceptable=PEER, train_args=("--resume", "{work}/checkpoints/last.pt"), driver="pickled-config-checkpoint",
        default_layout="tee", default_world_size=3, default_rank=0),
    Scenario(
        "gloo-interface-missing", "GLOO_SOCKET_IFNAME names an interface this machine does not have",
        "gloo-interface-not-found",
        "The job sets GLOO_SOCKET_IFNAME=ib0 (copied from the cluster's job template); this machine has no "
        "ib0, so every rank failed creating the gloo process group. No rank started it.",
        evidence="Unable to find address for: ib0",
        initiator="none", collateral="none", also_acceptable=("nccl-wrong-interface",),
        env={"GLOO_SOCKET_IFNAME": "ib0"}, default_layout="tee", default_world_size=2),
    Scenario(
        "embedding-new-domain", "one rank meets a record of a data source added after the domain table was sized",
        "embedding-index-out-of-range",
        "The job adds a fixed domain embedding (4 rows, one per data source) to each record. At global step 3 "
        "rank {rank}'s batch held a record of a fifth source; nn.Embedding raised 'IndexError: index out of "
        "range in self'. The other ranks failed in the DDP all_reduce.",
        evidence="index out of range in self",
        also_acceptable=PEER, train_args=("--domains", "4", "--inject", "new-domain:{rank}:3"), layouts=LAYOUTS,
        default_layout="srun", default_world_size=4, default_rank=2),
    Scenario(
        "grad-clip-overflow", "a record in raw units makes the gradient norm overflow; clipping refuses it",
        "grad-norm-nonfinite",
        "The job clips gradients and smooths labels. At global step 4 rank {rank}'s batch held a record in raw "
        "sensor units (1e25): the loss stayed finite but the gradients' norm overflowed float32 once DDP "
        "averaged them, so clip_grad_norm_(error_if_nonfinite=True) raised on every rank at the same step. The "
        "logs cannot tell whose record it was: no rank started it by what they show.",
        evidence="is non-finite, so it cannot be clipped",
        initiator="none", collateral="none",
        train_args=("--clip-grad-norm", "1.0", "--label-smoothing", "0.1", "--inject", "unscaled-record:{rank}:4"),
        layouts=LAYOUTS,
        default_layout="logdir", default_world_size=3, default_rank=1),
    Scenario(
        "fp16-weights-scaler", "float16 weights trained with a GradScaler that unscales them before clipping",
        "fp16-unscale-gradients-error",
        "The job casts the model to float16 (no float32 master weights) and uses a GradScaler; at the first "
        "step scaler.unscale_() raised 'Attempting to unscale FP16 gradients.' on every rank.",
        evidence="Attempting to unscale FP16 gradients",
        initiator="none", collateral="none", train_args=("--fp16-weights",), layouts=LAYOUTS,
        default_layout="plain", default_world_size=2),
    Scenario(
        "missing-shared-library", "one node's image lacks the GPU JPEG decoder's shared library",
        "missing-shared-library",
        "Rank {rank}'s data pipeline loads libnvjpeg.so.12 with ctypes when it builds the first epoch's "
        "loader; that node's image lacks it and the loader raised 'OSError: libnvjpeg.so.12: cannot open "
        "shared object file'. The other ranks failed in the DDP all_reduce of the first step.",
        evidence="cannot open shared object file",
        also_acceptable=PEER, train_args=("--inject", "missing-library:{rank}"), layouts=LAYOUTS,
        default_layout="twonode", default_world_size=4, default_rank=2),
    Scenario(
        "nccl-on-cpu-build", "--backend nccl with a CPU-only build of torch",
        "cuda-unavailable",
        "The job asks for the nccl backend but torch is the CPU build: init_process_group raised 'Distributed "
        "package doesn't have NCCL built in' on every rank.",
        evidence="Distributed package doesn't have NCCL built in",
        initiator="none", collateral="none", train_args=("--backend", "nccl"), layouts=LAYOUTS,
        default_layout="srun", default_world_size=2),
    Scenario(
        "half-eval-cpu", "rank 0's end-of-epoch embedding check runs an eigendecomposition in float16 on the CPU",
        "half-not-implemented-cpu",
        "After epoch 0 rank {rank} alone checks the embeddings' effective rank from the eigenvalues of their "
        "covariance, in float16; on the CPU torch.linalg.eigvalsh has no float16 kernel and raised "
        "'\"linalg_eigh_cpu\" not implemented for \'Half\''. The other ranks failed in the barrier that ends "
        "the epoch.",
        evidence="not implemented for 'Half'",
        also_acceptable=PEER, train_args=("--inject", "half-eval:{rank}:0"), layouts=LAYOUTS,
        default_layout="spawn", default_world_size=3, default_rank=0),
    Scenario(
        "ckpt-permission-denied", "one node's checkpoint volume is mounted for another user",
        "permission-denied-on-output",
        "Every rank saves its own shard at the end of epoch 0; rank {rank}'s node mounts the checkpoint folder "
        "for another user, so open() refused the shard with 'PermissionError: [Errno 13] Permission denied' "
        "(the lab makes the process `nobody` for the write: root passes permission checks). The other ranks "
        "failed in the next epoch's DDP all_reduce.",
        evidence=r"Permission denied: '[^']*epoch0-rank\d+\.pt'",
        also_acceptable=PEER, layouts=LAYOUTS,
        train_args=("--ckpt-dir", "{work}/checkpoints", "--sharded-ckpt", "--inject", "ckpt-denied:{rank}:0"),
        default_layout="twonode", default_world_size=4, default_rank=3),
    Scenario(
        "bf16-model-fp32-batches", "--model-dtype bfloat16 casts the weights but not the batches",
        "dtype-mismatch",
        "The job casts its model to bfloat16 but its batches stay float32: the first forward's linear layer "
        "raised 'mat1 and mat2 must have the same dtype, but got Float and BFloat16' on every rank.",
        evidence="mat1 and mat2 must have the same dtype, but got Float and BFloat16",
        initiator="none", collateral="none", train_args=("--model-dtype", "bfloat16"), layouts=LAYOUTS,
        default_layout="logdir", default_world_size=3),
    Scenario(
        "compile-data-dependent-guard", "one node compiles the loss, whose divergence guard branches on a value",
        "torch-compile-failure",
        "Rank {rank}'s node sets the loss to be compiled with torch.compile(fullgraph=True); the loss's "
        "divergence guard branches on loss.item(), which one graph cannot hold, so Dynamo raised at the first "
        "step. The other ranks failed in the DDP all_reduce.",
        evidence=r"torch\._dynamo\.exc\.\w+",
        also_acceptable=PEER, layouts=LAYOUTS, train_args=("--inject", "compile-guard:{rank}"),
        default_layout="srun", default_world_size=3, default_rank=2),
    Scenario(
        "lambda-collate-spawn", "DataLoader workers started with spawn while the collate function is a lambda",
        "multiprocessing-pickle-error",
        "The job starts its DataLoader workers with the spawn method and collates with a lambda; spawn pickles "
        "the collate function for each worker and a lambda has no importable name, so every rank raised "
        "'Can't pickle local object' when its first epoch began.",
        evidence="Can't pickle local object",
        initiator="none", collateral="none",
        train_args=("--num-workers", "1", "--worker-context", "spawn", "--collate-lambda"), layouts=LAYOUTS,
        default_layout="tee", default_world_size=2),
)

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def get(name: str) -> Scenario:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(name) from None
