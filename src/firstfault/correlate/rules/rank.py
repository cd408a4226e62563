"""Rank rules: where the first fault started, when its own line does not say (the first that
applies decides)."""
from __future__ import annotations

import re

from ...match.context import LAUNCHER_FAILED, MPIRUN_FIRST_EXIT, STACK_FRAME, TRACEBACK_HEADER
from ...model import Match
from ..devices import bus_of
from ..identity import bus_key, pid_key
from ..events import time_key
from ..facts import Facts, SIGTERM_CODES
from ..failure_table import first_failure_ties, quoting_record, tie_note
from ..ids import EXTERNAL_STOP, RENDEZVOUS, SIGNAL_DEATHS, STRAGGLER
from ..odd_one_out import no_odd_one, odd_rank
from ..rank_table import ranks_seen, size_declared
from . import Decision, rule
from .hang import with_rank

SAME_EVENT_LINES = 20  # lines of the same failure just after the initiating one
SAME_FAULT_LINES = 200
_PID_IN_TEXT = re.compile(r"\bpid[=: ]+(\d+)|Killed process (\d+)")
# the entry points of launchers, as a traceback's outermost frame shows them (hang_stacks.LAUNCHER_FILES
# lists any frame of a launcher's stack: spawn.py there is also the outermost frame of a spawned rank's)
LAUNCHER_ENTRIES = ("/bin/deepspeed", "deepspeed/launcher/", "/bin/torchrun", "torch/distributed/run.py",
                    "torch/distributed/launch.py", "/bin/accelerate", "accelerate/commands/")
TRACEBACK_LINES = 200  # a traceback's frames are at most this far above its exception


def needs_rank(facts: Facts, decision: Decision) -> bool:
    return (decision.initiating is not None and decision.initiating.line.origin.rank is None and decision.rank is None
            and not decision.rank_decided)


def _named(decision: Decision, rule_id: str, rank: int, how: str, evidence=()) -> Decision:
    return decision.with_because(rule_id, f"the failing line carries no rank; rank {rank} {how}", evidence,
                                 note=f"the failing line carries no rank; rank {rank} {how}", rank=rank)


@rule("odd-one-out")
def odd_one_out(facts: Facts, decision: Decision) -> Decision | None:
    """Every rank reported the disagreement: the one whose own collective differs started it."""
    if decision.initiating is None:
        return None
    own = [match for match in facts.winners if match.entry_id == decision.primary]
    odd = odd_rank(own)
    if odd is None or odd == decision.initiating.line.origin.rank:
        return None
    initiating = min((match for match in own if match.line.origin.rank == odd), key=time_key)
    text = f"every rank reported the disagreement; rank {odd} is the one whose own collective differs from the others'"
    return decision.with_because("odd-one-out", text, [initiating], note=text, initiating=initiating)


@rule("mismatch-no-odd-one")
def mismatch_no_odd_one(facts: Facts, decision: Decision) -> Decision | None:
    """Ranks reported the disagreement with different collectives of their own, none alone against a
    majority (rank 0's against rank 2's, the other reports cut): the first report printed is not
    the rank that started it, and which one did the reports do not say."""
    if decision.initiating is None or decision.rank_decided:
        return None
    own = [match for match in facts.winners if match.entry_id == decision.primary]
    if not no_odd_one(own):
        return None
    ranks = sorted({m.line.origin.rank for m in own if m.line.origin.rank is not None})
    text = (f"ranks {', '.join(map(str, ranks))} each describe a different collective of their own and none is alone "
            "against the others: which rank started it the reports do not say")
    return decision.with_because("mismatch-no-odd-one", text, [decision.initiating], note=text,
                                 initiating=with_rank(decision.initiating, None), rank_decided=True)


ALIKE_WITHIN_SECONDS = 60.0  # every rank's own first error within this of the first one's


@rule("every-rank-alike")
def every_rank_alike(facts: Facts, decision: Decision) -> Decision | None:
    """Every rank of the job raised the failure itself, as its own first error, within moments of
    the others (a CPU-only build asked for NCCL, a gradient norm that DDP's averaging made infinite
    everywhere, a setting all ranks share): the first printed only got there first, and naming it
    would send the reader to one rank's machine for a cause every rank has."""
    if decision.initiating is None or decision.rank_decided:
        return None
    earliest = _earliest_incidents(facts.roots)
    first_errors = {rank: incident.strongest for rank, incident in earliest.items()}  # each rank's own first error
    ranks = set(first_errors)
    job = facts.identity.world.size if facts.identity.world else None
    if len(ranks) < 2 or (job is not None and len(ranks) < job) or ranks != ranks_seen(facts):
        return None
    if not _alike(first_errors, decision.primary, [incident.first for incident in earliest.values()]):
        return None
    if _one_differs(facts, decision.primary):
        return None
    text = (f"every rank (ranks {_listed(sorted(ranks))}) raised it as its own first error: no rank started it, "
            "the cause is one they share")
    return _no_rank(decision, "every-rank-alike", text)


@rule("first-second-alike")
def first_second_alike(facts: Facts, decision: Decision) -> Decision | None:
    """Several ranks raised the same failure as their own first error in the very second the first
    of them did, and the logs stamp whole seconds (Horovod's and mpirun's --timestamp-output, Slurm,
    torchrun's table): which came first the times cannot tell, and a line printed first only got
    there first (every rank waiting for a key nobody wrote, a setting they share). No rank is named."""
    if decision.initiating is None or decision.rank_decided or decision.initiating.line.origin.time is None:
        return None
    timed = {rank: match for rank, match in _own_first_errors(facts).items() if match.line.origin.time is not None}
    first = min((match.line.origin.time for match in timed.values()), default=None)
    tied = {rank: match for rank, match in timed.items() if match.line.origin.time == first}
    if len(tied) < 2 or first != int(first) or decision.initiating.line.origin.rank not in tied:
        return None
    if not _alike(tied, decision.primary, tied.values()):
        return None
    if _one_differs(facts, decision.primary):
        return None
    text = (f"ranks {_listed(sorted(tied))} raised it as their own first error in the same second (the logs stamp "
            "whole seconds): which came first the times cannot tell, and the first printed only got there first")
    return _no_rank(decision, "first-second-alike", text)


@rule("one-host-alike")
def one_host_alike(facts: Facts, decision: Decision) -> Decision | None:
    """Every rank that failed of its own ran on one host, and every rank seen on that host raised
    the same failure as its own first error within moments of the others (a node whose NIC, driver
    or library the others do not share): the first printed only got there first. The host is
    where it started; no rank is named."""
    if decision.initiating is None or decision.rank_decided:
        return None
    first_errors = _own_first_errors(facts)
    if len(first_errors) < 2 or not _alike(first_errors, decision.primary, first_errors.values()):
        return None
    seen = ranks_seen(facts)
    named = {rank: facts.identity.host_of(rank, len(facts.inputs.ranks)) for rank in seen | set(first_errors)}
    hosts = {named[rank].value if named[rank] is not None else None for rank in first_errors}
    if len(hosts) != 1 or None in hosts:
        return None
    host = hosts.pop()
    on_host = {rank for rank in seen if named[rank] is not None and named[rank].value == host}
    if on_host != set(first_errors) or on_host == seen:
        return None  # (a rank of that host that did not fail so; or every rank of the job: every-rank-alike's)
    text = (f"every rank on host {host} (ranks {_listed(sorted(first_errors))}) raised it as its own first error, and no "
            "rank elsewhere failed of its own: no rank started it, the host did")
    return _no_rank(decision, "one-host-alike", text, host=host)


def _one_differs(facts: Facts, primary: str) -> bool:
    """Alike in kind, not in content: one rank's collective differs from the others' (it started it)."""
    return odd_rank([match for match in facts.winners if match.entry_id == primary]) is not None


def _no_rank(decision: Decision, rule_id: str, text: str, **decided) -> Decision:
    """The failure as decided, its line kept, no rank named: the ranks' failures alike say no one started it."""
    return decision.with_because(rule_id, text, [decision.initiating], note=text,
                                 initiating=with_rank(decision.initiating, None), rank_decided=True, **decided)


def _alike(first_errors: dict, primary: str, exception_lines) -> bool:
    """Whether the ranks' own first errors are one failure: all of the primary's entry, naming one
    exception class at most (not a KeyError here and a failed restart's RuntimeError there), and
    within moments of each other where they carry times."""
    if any(match.entry_id != primary for match in first_errors.values()):
        return False
    if len({_exception_named(match) for match in exception_lines} - {None}) > 1:
        return False
    times = [match.line.origin.time for match in first_errors.values()]
    return None in times or max(times) - min(times) <= ALIKE_WITHIN_SECONDS


def _own_first_errors(facts: Facts) -> dict:
    """rank -> the first error of its own: its earliest root incident's strongest line; where no
    error starts a failure by itself, its earliest line of the failures that won."""
    earliest = _earliest_incidents(facts.roots)
    if earliest:
        return {rank: incident.strongest for rank, incident in earliest.items()}
    first: dict = {}
    for match in facts.winners:
        rank = match.line.origin.rank
        if rank is not None and (rank not in first or _printed_before(match, first[rank])):
            first[rank] = match
    return first


_EXCEPTION_NAME = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception))(?::|$)")


def _exception_named(match: Match) -> str | None:
    """The exception class a failure line names (`KeyError`, `torch.OutOfMemoryError`), if any."""
    found = _EXCEPTION_NAME.search(match.line.text)
    return found.group(1).rsplit(".", 1)[-1] if found else None


def _earliest_incidents(roots) -> dict:
    """rank -> its earliest root incident."""
    earliest: dict[int, object] = {}
    for incident in roots:
        rank = incident.strongest.line.origin.rank
        if rank is not None and (rank not in earliest or _printed_before(incident.first, earliest[rank].first)):
            earliest[rank] = incident
    return earliest


def _printed_before(match: Match, other: Match) -> bool:
    """Earlier in time; in one file, where either line has no time of its own, earlier in the file
    (an untimed line sorts after every timed one by time alone)."""
    origin, before = match.line.origin, other.line.origin
    if origin.source == before.source and (origin.time is None or before.time is None):
        return origin.line < before.line
    return time_key(match) < time_key(other)


def _same_event(facts: Facts, initiating: Match) -> list[Match]:
    """The initiating line, then the lines of the same failure just after it in the same file."""
    origin = initiating.line.origin
    following = [m for m in facts.matches if m.entry_id == initiating.entry_id and m.line.origin.source == origin.source
                 and 0 < m.line.origin.line - origin.line <= SAME_EVENT_LINES]
    return [initiating, *sorted(following, key=lambda m: m.line.origin.line)]


# the kernel's and the GPU driver's own lines: dmesg's `[ 1234.567]`, journald's `host kernel: `,
# NVRM's, the OOM killer's
_KERNEL_LINE = re.compile(r"\bkernel: |\bNVRM: |^\s*\[\s*\d+\.\d+\] |\bKilled process \d+|\boom-kill:|invoked oom-killer")


def _host_level(match: Match) -> bool:
    """A kernel or driver line about a process or a GPU (an Xid naming a PCI bus, the OOM killer
    naming a pid), not a line the process wrote."""
    return bus_of(match) is not None or _KERNEL_LINE.search(match.line.text) is not None


def _pid_named(match: Match) -> int | None:
    captured = str(match.captures.get("pid", ""))
    if captured.isdigit():
        return int(captured)
    found = _PID_IN_TEXT.search(match.line.text)
    return int(found.group(1) or found.group(2)) if found else None


# a store wait that names the rank whose key it waited for (`[1] is setting up NCCL communicator and
# retrieving ncclUniqueId from [0] ... got error: Socket Timeout`): the captures' name
WAITED_FOR = "id_root"


@rule("rank-waited-for")
def waited_for(facts: Facts, decision: Decision) -> Decision | None:
    """The failing line is a rank giving up on a key another rank had to write (the ncclUniqueId of
    a new communicator), and the failure is a straggler's: the rank waited for, busy elsewhere,
    is where it started; the rank that waited only waited. The verdict points at that rank's own
    last line, else at the wait that names it. (One case of the fixture sets uses it so far,
    upstream/collective-timeout-straggler-tokenizer-barrier-rank1: rank 0 tokenizing past the
    timeout before the first collective, a common way a straggler at start-up is said.)"""
    from dataclasses import replace

    from .hang import own_line, with_rank

    initiating = decision.initiating
    root = str(initiating.captures.get(WAITED_FOR, "")) if initiating is not None else ""
    if not root.isdigit() or decision.rank_decided or facts.relations.core(decision.primary) != STRAGGLER:
        return None
    waiter, root = initiating.line.origin.rank, int(root)
    if waiter is None or waiter == root:
        return None
    anchor = own_line(facts, root, decision.primary)
    if anchor is None:
        said = f"rank {{rank}} did not hand out the ncclUniqueId that rank {waiter} waited for until the store gave up"
        anchor = with_rank(replace(initiating, signature=replace(initiating.signature, message=said)), root)
    text = (f"rank {waiter} gave up waiting for the ncclUniqueId of rank {root}, which had not written it: rank "
            f"{root} was busy elsewhere, and rank {waiter} only waited")
    return decision.with_because("rank-waited-for", text, [initiating], note=text, initiating=anchor, rank_decided=True)


@rule("rank-from-table-record")
def rank_from_table_record(facts: Facts, decision: Decision) -> Decision | None:
    """The failing line is quoted in a record of torchrun's failure table (its `traceback :`
    field, the worker's error file): the record of a worker that exited with an error says whose
    it is, unless the table ties that record with other failures of its second."""
    quoted = quoting_record(facts, decision.initiating)
    if quoted is None:
        return None
    rank, row = quoted
    if str(row.captures.get("exitcode", "")).startswith("-"):
        return None  # (a signal death: its record says how it died, often stopped by another's failure)
    if rank in first_failure_ties(facts):
        return None  # (the table ties it with others of the same second: which came first, the tie rule says)
    origin = row.line.origin
    return _named(decision, "rank-from-table-record", rank,
                  f"is the worker whose failure-table record quotes it ({origin.source}:{origin.line})", [row])


@rule("rank-from-pid")
def rank_from_pid(facts: Facts, decision: Decision) -> Decision | None:
    """The line names a pid that the identity map ties to a rank (a launcher report, a worker's
    prefix or file, NCCL's prefix and init line, nvidia-smi's process table)."""
    for match in _same_event(facts, decision.initiating):
        pid = _pid_named(match)
        named = facts.identity.rank_of(pid_key(pid, match.line.origin.host)) if pid is not None else None
        if named is not None:
            origin = match.line.origin
            return _named(decision, "rank-from-pid", named.value,
                          f"is the process (pid {pid}) the log names at {origin.source}:{origin.line} ({named.how})",
                          [match, *named.evidence[:2]])
    return None


@rule("rank-from-bus")
def rank_from_bus(facts: Facts, decision: Decision) -> Decision | None:
    """A host-level GPU event names a PCI bus; NCCL or nvidia-smi lines say which rank drives it."""
    bus = bus_of(decision.initiating)
    if bus is None:
        return None
    named = facts.identity.rank_of(bus_key(bus, decision.initiating.line.origin.host))
    if named is None:
        return None
    return _named(decision, "rank-from-bus", named.value,
                  f"drives the GPU on PCI bus {bus} that the line names ({named.how})",
                  [decision.initiating, *named.evidence[:2]])


@rule("rank-from-device-index")
def rank_from_device_index(facts: Facts, decision: Decision) -> Decision | None:
    """The line names the GPU it ran on (`GPU 2;`, `cuda:2`); the identity map says which rank
    drives that GPU (on one node with one process per GPU, local rank = GPU index = rank)."""
    from ...ingest.attribution import device_mentioned
    from ..identity import gpu_key

    match = decision.initiating
    index = device_mentioned(match.line.text)
    if index is None or len(facts.rows) < 2:
        return None
    named = facts.identity.rank_of(gpu_key(index, match.line.origin.host))
    if named is not None:
        return _named(decision, "rank-from-device-index", named.value,
                      f"drives GPU {index}, the device the line names ({named.how})", [match, *named.evidence[:2]])
    identity = facts.identity
    several_nodes = identity.world is not None and identity.local_world and identity.world.size > identity.local_world
    if len(facts.hosts) <= 1 and not several_nodes and index in facts.rows:
        # (one host named is one node only when the job's size says so: redacted logs name one for all)
        return _named(decision, "rank-from-device-index", index,
                      f"runs on GPU {index}, the device the line names (one node, one process per GPU)", [match])
    return None


@rule("rank-complement")
def complement(facts: Facts, decision: Decision) -> Decision | None:
    """Every other rank of the job is accounted for and one is not: the others timed out or lost
    their peer waiting (or still had their process in a GPU snapshot taken during the hang), so
    the failure that names no rank is the missing one's. (DeepSpeed's launcher names the command
    of its last-started rank in `exits with return code = -9`, whichever rank exited: not read.)"""
    from ..rank_table import WAITING

    rows = facts.rows
    gone = [rank for rank, row in rows.items() if row.ended == "gone"]
    if len(gone) == 1:
        row = rows[gone[0]]
        return _named(decision, "rank-complement", gone[0],
                      "is the one rank whose process was gone from the GPU snapshot taken during the hang",
                      [decision.initiating, row.ended_match])
    waiting = [rank for rank, row in rows.items() if row.ended in WAITING]
    others = [rank for rank, row in rows.items() if row.ended not in (*WAITING, "stopped")]
    # (one rank waiting is enough when the job's size is declared and is the ranks in view: the
    # two of a 2-rank job; else the others could be ranks that never printed)
    if len(others) != 1 or not waiting or (len(waiting) < 2 and not size_declared(facts)):
        return None
    first_wait = min((rows[rank].ended_match for rank in waiting), key=time_key)
    return _named(decision, "rank-complement", others[0],
                  f"is the one rank of {len(rows)} that did not time out or lose its peer waiting "
                  f"(ranks {_listed(waiting)} did)", [decision.initiating, first_wait])


def _listed(ranks: list[int]) -> str:
    from ...render.diagnosis_text import ranks_text

    return ranks_text(sorted(ranks))


@rule("rank-from-device-event")
def rank_from_device_event(facts: Facts, decision: Decision) -> Decision | None:
    """A GPU error that names no rank, and the kernel's GPU events on the job's hosts name the
    process (by pid) of exactly one rank: the error is that rank's."""
    from ...match.context import DEVICE_EVENT_PID

    if facts.relations.category(decision.primary) != "device":
        return None
    named = {}
    for match in facts.matches:
        if match.signature.name != DEVICE_EVENT_PID:
            continue
        # the pid says whose channel faulted: an event naming another process (an earlier run on
        # the same GPU) is not this job's, whatever its bus
        found = facts.identity.rank_of(pid_key(int(match.captures["pid"]), match.line.origin.host))
        if found is not None:
            named.setdefault(found.value, (match, found))
    if len(named) != 1:
        return None
    rank, (event, found) = next(iter(named.items()))
    return _named(decision, "rank-from-device-event", rank,
                  f"is the process the kernel's GPU event names ({found.how})", [event, *found.evidence[:2]])


@rule("rank-from-same-fault-nearby")
def same_fault_nearby(facts: Facts, decision: Decision) -> Decision | None:
    """A later line of the same file and failure names one rank (an unprefixed CUDA error, then
    the watchdog's `[Rank 1] ... terminated with exception` for it)."""
    origin = decision.initiating.line.origin
    later = [m for m in facts.matches if m.entry_id == decision.initiating.entry_id and m.line.origin.source == origin.source
             and m.line.origin.rank is not None and 0 < m.line.origin.line - origin.line <= SAME_FAULT_LINES]
    if len({m.line.origin.rank for m in later}) != 1:
        return None
    nearby = min(later, key=lambda m: m.line.origin.line)
    where = nearby.line.origin
    return _named(decision, "rank-from-same-fault-nearby", where.rank,
                  f"reports the same failure a few lines later ({where.source}:{where.line})", [nearby])


@rule("raised-by-the-launcher")
def raised_by_the_launcher(facts: Facts, decision: Decision) -> Decision | None:
    """One process only, and its traceback begins in a launcher's entry point (DeepSpeed's runner,
    torchrun, accelerate's launch command): the launcher raised it before it started any rank, so no
    rank started it (DeepSpeed 0.15's launcher without numactl on a CPU machine, a real run)."""
    if not facts.single_process or not _raised_in_a_launcher(facts, decision.initiating):
        return None
    text = "the failing traceback begins in the launcher's own entry point: it raised before starting any rank"
    return decision.with_because("raised-by-the-launcher", text, [decision.initiating], note=text, rank_decided=True)


def _raised_in_a_launcher(facts: Facts, match: Match) -> bool:
    origin = match.line.origin
    in_file = [m for m in facts.matches if m.line.origin.source == origin.source
               and origin.line - TRACEBACK_LINES <= m.line.origin.line < origin.line]
    header = max((m.line.origin.line for m in in_file if m.signature.name == TRACEBACK_HEADER), default=None)
    if header is None:
        return False
    frames = sorted((m for m in in_file if m.signature.name == STACK_FRAME and m.line.origin.line > header),
                    key=lambda m: m.line.origin.line)
    outermost = next((m.captures.get("file", "") for m in frames if not m.captures.get("file", "").startswith("<")), "")
    return any(entry in outermost for entry in LAUNCHER_ENTRIES)


@rule("rank-only-process")
def only_process(facts: Facts, decision: Decision) -> Decision | None:
    """One process only (no rank above 0, one host, no peer failing): it is rank 0. Not when every
    failure line is the kernel's account of some process or GPU (an OOM kill, an Xid): no line of a
    process is in view, so which rank it was nothing says."""
    if not facts.single_process:
        return None
    if all(_host_level(m) for m in (decision.initiating, *(m for m in facts.matches if m.role != "context"))):
        return None
    if facts.relations.core(decision.primary) == RENDEZVOUS:
        return None  # the process could not join: no rank was given yet (a launcher's agent, or a worker of any rank)
    return _named(decision, "rank-only-process", 0, "is the only process", [decision.initiating])


def _ordinary_exit(report: Match) -> bool:
    """A launcher's report of a process that exited with a code of its own (not killed by a
    signal: shells and Slurm give a signal as 128 + N, torchrun as -N)."""
    if report.signature.name == MPIRUN_FIRST_EXIT:
        return True  # (mpirun names a process this way only when it exited with a non-zero code)
    code = str(report.captures.get("code") or "")
    return code.isascii() and code.isdigit() and 0 < int(code) < 128


def _signal_deaths_first(reports: list[Match]) -> list[Match]:
    """For a failure that kills its process by a signal: the reports of processes killed by one.
    Without any, a report of an ordinary exit is the killed process's parent (a DataLoader
    worker's rank) only when it is the one process that failed; among several, which cannot be
    told."""
    killed = [m for m in reports if not _ordinary_exit(m)]
    if killed:
        return killed
    return reports if len({m.line.origin.rank for m in reports}) == 1 else []


@rule("rank-launcher-first")
def launcher_first(facts: Facts, decision: Decision) -> Decision | None:
    """The rank the launcher reported failing first with a real error (not its own SIGTERM). A stop
    from outside that one agent received is not a worker's error: other agents' reports of workers
    that failed after it are its consequences, not its rank."""
    if facts.relations.core(decision.primary) == STRAGGLER:
        return None  # the launcher reports a rank that gave up waiting: the one it waited for is another
    killed = facts.relations.core(decision.initiating.entry_id) in SIGNAL_DEATHS
    tied = first_failure_ties(facts, killed)  # failures of one second: the launcher's "first" is the lowest rank
    reports = [m for m in facts.matches if m.signature.name in LAUNCHER_FAILED
               and m.captures.get("code") not in SIGTERM_CODES and m.line.origin.rank is not None
               and m.line.origin.rank not in tied]
    if killed:
        reports = _signal_deaths_first(reports)
    origin = decision.initiating.line.origin
    # a launcher on another host reports its own workers: none of them is the process whose
    # failing line this host's log holds
    reports = [m for m in reports if not (origin.host and m.line.origin.host and m.line.origin.host != origin.host)]
    own = [m for m in reports if m.line.origin.source == origin.source or (origin.host and m.line.origin.host == origin.host)]
    if facts.relations.core(decision.initiating.entry_id) == EXTERNAL_STOP:
        reports = own
    reports = own or reports
    if not reports:
        return None
    first = min(reports, key=time_key)
    return _named(decision, "rank-launcher-first", first.line.origin.rank,
                  "is the one the launcher reported failing first", [first])


@rule("rank-launcher-tie")
def launcher_tie(facts: Facts, decision: Decision) -> Decision | None:
    """No rank named, and the launcher's failure table lists several ranks failing in its first
    second: say that its root cause is only the lowest of them (failure_table.py)."""
    note = tie_note(facts)
    return decision.with_because("rank-launcher-tie", note, note=note) if note else None
