"""Every verdict rule on its own, from facts built by hand (no log parsing).

A test is named after the rule it covers (`test_<rule id with underscores>...`); the last test
checks that every rule of the table has one.
"""
from __future__ import annotations

import sys
from dataclasses import replace

from firstfault.correlate.activity import StreamActivity, StreamLine
from firstfault.correlate.facts import build_facts
from firstfault.correlate.identity import IdentityMap, Link, WorldSize, build_identity, pid_key, rank_key
from firstfault.correlate.relations import Relations
from firstfault.correlate.rules import Decision
from firstfault.correlate.rules.table import all_rules, decide
from firstfault.model import InputSummary, LogLine, Match, Origin, Signature

from .conftest import REPO

RELATIONS = Relations(
    explains={"cuda-device-side-assert": frozenset({"collective-timeout-peer-crash", "preempted-sigterm"}),
              "gpu-fallen-off-bus": frozenset({"cuda-launch-failure"}),
              "preempted-sigterm": frozenset({"collective-timeout-peer-crash"})},
    core_of={"grad-norm-nonfinite": "loss-nan"},
    actions={"gpu-fallen-off-bus": "exclude-host-and-restart", "preempted-sigterm": "restart"},
)
_order = iter(range(10**6))


def hit(entry, line, *, rank=None, time=None, source="a.log", role="root", weight=0.9, text="error", name="sig",
        captures=None, host=None, inherited=False) -> Match:
    signature = Signature(entry, name, role, weight, "", "")
    origin = Origin(source, line, rank, host, time, inherited)
    return Match(signature, LogLine(text, origin), captures or {}, next(_order))


def context(name, line, *, rank=None, source="a.log", captures=None, time=None, host=None, text="") -> Match:
    return hit("", line, rank=rank, source=source, role="context", weight=0.0, name=name, captures=captures, time=time,
               host=host, text=text)


def stream(rank, lines, source=None, host=None, unprefixed=False) -> StreamActivity:
    return StreamActivity(source or f"rank{rank}.log", rank, host,
                          tuple(StreamLine(line, time, text) for line, time, text in lines), unprefixed)


def facts(matches, *, ranks=(), activity=(), single=False, identity=None, source_lines=None, timed=True):
    summary = InputSummary(files=("a.log",), ranks=tuple(ranks), timed=timed)
    identity = identity or build_identity(list(matches), ranks_seen=ranks)
    return build_facts(list(matches), summary, single, source_lines, RELATIONS, activity, identity)


def start(built) -> Decision:
    return Decision(roots=built.roots, symptoms=built.symptoms)


def rule(rule_id):
    return next(item for _stage, item in all_rules() if item.id == rule_id)


def timeout(line, rank, time=None, seq=None, op=None, text="Watchdog caught collective operation timeout"):
    captures = {key: value for key, value in (("seq", seq), ("op", op)) if value is not None}
    return hit("collective-timeout-peer-crash", line, rank=rank, time=time, role="collateral", weight=0.5,
               source=f"rank{rank}.log", captures=captures, text=text)


# filter rules ------------------------------------------------------------------------------------

def test_teardown_after_first_timeout_drops_later_errors():
    built = facts([timeout(5, 0, time=100.0), hit("tcpstore-timeout", 9, rank=1, time=130.0), hit("cuda-oom", 2, rank=2, time=90.0)])
    decided = rule("teardown-after-first-timeout").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == ["cuda-oom"]
    assert decided.because[-1].rule == "teardown-after-first-timeout"


def test_teardown_after_launcher_report_keeps_errors_before_it():
    report = context("launcher-failed", 20, rank=1, captures={"code": "1", "local": "1", "pid": "7"}, time=50.0)
    built = facts([report, hit("user-code-exception", 3, rank=1, time=49.0), hit("tcpstore-timeout", 8, rank=0, time=60.0)])
    decided = rule("teardown-after-launcher-report").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == ["user-code-exception"]


def test_teardown_after_launcher_report_when_only_timeouts_came_before_it():
    """The ranks timed out first, the launcher reported one, then its agent lost the store: the
    job hung, the store error is teardown, and the hang decides. With nothing at all before the
    report, the report is all there is to go on and nothing is dropped."""
    report = context("launcher-failed", 20, rank=0, captures={"code": "-6", "local": "0", "pid": "7"}, time=50.0)
    late = hit("rendezvous-failure", 30, time=51.0)
    built = facts([timeout(5, 1, time=49.0), report, late])
    assert rule("teardown-after-launcher-report").apply(built, start(built)).roots == ()
    alone = facts([report, late])
    assert rule("teardown-after-launcher-report").apply(alone, start(alone)) is None


def test_teardown_after_launcher_report_counts_its_sigterms_to_the_workers():
    """`Sending process P closing signal SIGTERM`: the agent is stopping its workers; its lost
    rendezvous store a second later is teardown, the stop before it is what is left."""
    stop = hit("preempted-sigterm", 12, source="node1.log", time=15.86, text="Received 15 death signal, shutting down workers")
    closing = hit("torchelastic-child-failed", 13, source="node1.log", role="collateral", name="closing-signal", time=15.87)
    lost = hit("rendezvous-failure", 123, source="node0.log", time=16.8, inherited=True)
    built = facts([stop, closing, lost])
    decided = rule("teardown-after-launcher-report").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == ["preempted-sigterm"]


def test_teardown_after_launcher_report_not_from_a_report_whose_time_is_carried():
    """torch 2.0's agent prints `WARNING:torch.distributed.elastic...:Sending process P closing
    signal SIGTERM` with no time: it carries the workers' last time, a time it came at or after.
    Slurm's cancel 8 s later is not after it: it is what made the agent stop them (a real run)."""
    closing = hit("torchelastic-child-failed", 26, source="console.log", role="collateral", name="closing-signal",
                  time=1000.0, inherited=True, text="Sending process 20897 closing signal SIGTERM")
    agent = hit("preempted-sigterm", 25, source="console.log", time=1000.0, inherited=True,
                text="Received 15 death signal, shutting down workers")
    cancel = hit("preempted-sigterm", 1, source="slurm.out", time=1008.0, text="CANCELLED AT ... DUE TO TIME LIMIT")
    built = facts([agent, closing, cancel])
    assert rule("teardown-after-launcher-report").apply(built, start(built)) is None
    timed = replace(closing, line=LogLine(closing.line.text, replace(closing.line.origin, time_inherited=False)))
    built = facts([agent, timed, cancel])  # a report with a time of its own places the cancel after it
    assert cancel not in [m for i in rule("teardown-after-launcher-report").apply(built, start(built)).roots for m in i.matches]


def test_sigterm_from_the_launcher_is_the_teardown_of_a_worker_that_crashed():
    """Rank 1 segfaulted; torchrun sent rank 0 SIGTERM and rank 0's Lightning printed `Received
    SIGTERM: 15` on a line with no time of its own: that is the launcher stopping it, not a
    preemption, so rank 1's signal death is what is left."""
    closing = hit("torchelastic-child-failed", 32, source="console.log", role="collateral", name="closing-signal",
                  time=45.10, text="Sending process 26710 closing signal SIGTERM")
    received = hit("preempted-sigterm", 33, rank=0, source="console.log", name="sigterm-received", weight=0.8,
                   time=45.10, inherited=True, text="[default0]:[rank: 0] Received SIGTERM: 15")
    crash = hit("native-crash", 238, rank=1, source="console.log", role="symptom", weight=0.52, time=45.80,
                text="failed (exitcode: -11) local_rank: 1 (pid: 26711)")
    built = facts([closing, received, crash])
    decided = rule("sigterm-from-the-launcher").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == []
    assert [match.entry_id for match in decided.symptoms] == ["native-crash"]


def test_sigterm_from_the_launcher_leaves_a_launcher_that_was_itself_stopped():
    """The agent got SIGTERM first (`Received Signals.SIGTERM death signal`): the job was
    preempted, and the ranks' reports of the SIGTERM it passed on are that preemption."""
    stop = hit("preempted-sigterm", 10, source="console.log", name="agent-death-signal", time=44.0,
               text="Received Signals.SIGTERM death signal, shutting down workers")
    closing = hit("torchelastic-child-failed", 11, source="console.log", role="collateral", name="closing-signal", time=44.0)
    received = hit("preempted-sigterm", 12, rank=0, source="console.log", name="sigterm-received", weight=0.8, time=44.0,
                   text="[default0]:[rank: 0] Received SIGTERM: 15")
    built = facts([stop, closing, received])
    assert rule("sigterm-from-the-launcher").apply(built, start(built)) is None


def test_teardown_after_own_failure_drops_the_signal_death_of_a_rank_that_had_lost_its_peer():
    """srun reports `task 2: Aborted` after rank 2 printed that its Gloo peer closed the connection
    (a C++ terminate while it tore down): not a native crash of its own; rank 3's, with no wait
    before it, stays."""
    lost = hit("collective-timeout-peer-crash", 30, rank=2, source="slurm.out", role="collateral", weight=0.5,
               text="2: RuntimeError: Connection closed by peer [127.0.0.1]:27050")
    teardown = hit("native-crash", 47, rank=2, source="slurm.out", role="symptom", weight=0.52,
                   text="srun: error: vm: task 2: Aborted")
    own = hit("native-crash", 12, rank=3, source="slurm.out", role="symptom", weight=0.52, text="3: Segmentation fault")
    built = facts([own, lost, teardown])
    decided = rule("teardown-after-own-failure").apply(built, start(built))
    assert teardown not in decided.symptoms and own in decided.symptoms
    assert rule("teardown-after-own-failure").apply(built, Decision(symptoms=(own,))) is None


def test_outlived_by_progress_drops_an_error_the_same_rank_went_on_from():
    progress = stream(0, [(10, None, "download failed, retrying"), (20, None, "step 10 loss 2.1"), (30, None, "step 20 loss 1.9")])
    built = facts([hit("hub-unreachable", 10, rank=0, source="rank0.log")], activity=[progress])
    decided = rule("outlived-by-progress").apply(built, start(built))
    assert decided.roots == ()
    assert "outlived" in decided.because[-1].text
    assert [m.entry_id for m in decided.went_past] == ["hub-unreachable"]  # reported apart, not as collateral


def test_outlived_by_progress_across_an_epoch_boundary():
    """`epoch 0 step 8/8` then `epoch 1 step 1/8 ... 8/8`: the largest counter of each line is 8 at
    both ends, but read in order the run moved on (a real torch 1.13 run whose rank 0 logged a
    caught ImportError's traceback at start-up and trained to the end)."""
    progress = StreamActivity("node0.log", 0, None, (StreamLine(50, None, "training finished after 16 steps"),), False,
                              (StreamLine(44, None, "epoch 0 step 8/8 loss 1.3497"), StreamLine(47, None, "epoch 1 step 1/8 loss 1.3517"),
                               StreamLine(49, None, "epoch 1 step 8/8 loss 1.2984")))
    caught = hit("python-import-error", 21, rank=0, source="node0.log", text="ModuleNotFoundError: No module named 'apex'")
    built = facts([caught], activity=[progress])
    assert rule("outlived-by-progress").apply(built, start(built)).roots == ()


def test_outlived_by_progress_needs_progress_that_advances():
    stuck = stream(0, [(10, None, "error"), (20, None, "Iteration: 0%| | 0/100 [00:02<?, ?it/s]"),
                       (30, None, "Iteration: 0%| | 0/100 [00:04<?, ?it/s]")])
    built = facts([hit("cuda-device-side-assert", 10, rank=0, source="rank0.log")], activity=[stuck])
    assert rule("outlived-by-progress").apply(built, start(built)) is None


def _launched_console(matches, first_worker_line):
    summary = InputSummary(files=("node1.log",), ranks=(2, 3), launched=(("node1.log", first_worker_line),))
    return build_facts(list(matches), summary, False, None, RELATIONS, (), build_identity(list(matches), ranks_seen=(2, 3)))


def test_launcher_went_on_drops_a_launcher_error_before_its_workers_started():
    """torch 2.1/2.4: a second agent on the rendezvous host logs that the store's port is taken,
    joins as a client, and starts its workers: the error is not where the failure started."""
    bind = hit("port-in-use", 6, source="node1.log", text="[W socket.cpp:436] [c10d] The server socket has failed to bind")
    stop = hit("preempted-sigterm", 15, source="node1.log", text="Received 15 death signal, shutting down workers")
    fault = hit("user-code-exception", 23, rank=3, source="node1.log", weight=0.5)
    built = _launched_console([bind, stop, fault], first_worker_line=9)
    decided = rule("launcher-went-on").apply(built, start(built))
    kept = [match for incident in decided.roots for match in incident.matches]
    assert bind not in kept and stop in kept and fault in kept  # the stream's later stop stays
    assert "node1.log:9" in decided.because[-1].text


def test_launcher_went_on_not_after_the_workers_started_nor_for_a_rank_nor_without_a_launcher():
    late = hit("port-in-use", 12, source="node1.log")
    built = _launched_console([late], first_worker_line=9)
    assert rule("launcher-went-on").apply(built, start(built)) is None  # the workers' lines came first
    ranked = hit("port-in-use", 6, rank=0, source="node1.log")
    built = _launched_console([ranked], first_worker_line=9)
    assert rule("launcher-went-on").apply(built, start(built)) is None  # a worker's own error
    plain = hit("port-in-use", 6, source="node1.log")
    built = facts([plain])  # no console torchrun prefixed: nothing says its workers started after
    assert rule("launcher-went-on").apply(built, start(built)) is None


def test_launcher_went_on_keeps_a_stop_before_the_workers():
    stop = hit("preempted-sigterm", 4, source="node1.log", text="Received 15 death signal")
    built = _launched_console([stop], first_worker_line=9)
    assert rule("launcher-went-on").apply(built, start(built)) is None


def test_external_stop_after_fault_makes_the_stop_a_consequence():
    stop = hit("preempted-sigterm", 50, time=1000.0, source="slurm.out", text="CANCELLED DUE TO TIME LIMIT")
    fault = hit("cuda-device-side-assert", 20, rank=5, source="rank5.log")  # no time of its own
    built = facts([stop, fault])
    decided = rule("external-stop-after-fault").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == ["cuda-device-side-assert"]


def test_external_stop_after_fault_not_when_an_untimed_fault_is_later_than_the_stop():
    """An untimed line comes after the timed line it inherits from: a store error whose last
    timed line is 3 s after the SIGTERM came after it (the agent that held the store had
    stopped), so the stop stays the cause. Seen in a real two-agent run under load."""
    stop = hit("preempted-sigterm", 12, time=1000.0, source="node1.log", text="Received 15 death signal")
    store = hit("rendezvous-failure", 123, time=1003.2, inherited=True, source="node0.log",
                text="RendezvousConnectionError: The connection to the C10d store has failed.")
    built = facts([stop, store])
    assert rule("external-stop-after-fault").apply(built, start(built)) is None
    earlier = hit("rendezvous-failure", 123, time=999.0, inherited=True, source="node0.log")
    built = facts([stop, earlier])  # inherited from before the stop: it may have come first
    assert rule("external-stop-after-fault").apply(built, start(built)) is not None


def test_external_stop_after_fault_ignores_faults_the_stop_explains():
    stop = hit("preempted-sigterm", 50, time=1000.0, source="slurm.out")
    consequence = hit("collective-timeout-peer-crash", 60, rank=1, source="rank1.log", role="symptom")
    built = facts([stop, consequence])
    assert rule("external-stop-after-fault").apply(built, start(built)) is None


def test_external_stop_ended_a_hang_after_a_long_silence():
    stop = hit("preempted-sigterm", 50, time=10_000.0, source="slurm.out")
    quiet = [stream(rank, [(1, 100.0, "step 1"), (2, 160.0, "step 2")]) for rank in (0, 1)]
    built = facts([stop], activity=quiet)
    decided = rule("external-stop-ended-a-hang").apply(built, start(built))
    assert decided.roots == () and "2.7 h" in decided.hang


def test_external_stop_ended_a_hang_not_when_the_ranks_were_busy():
    stop = hit("preempted-sigterm", 50, time=200.0, source="slurm.out")
    busy = [stream(rank, [(1, 100.0, "step 1"), (2, 190.0, "step 2")]) for rank in (0, 1)]
    built = facts([stop], activity=busy)
    assert rule("external-stop-ended-a-hang").apply(built, start(built)) is None


def test_external_stop_ended_a_hang_the_job_said_it_was_stuck():
    """Five minutes of silence is short for a hang, unless the job itself kept saying its
    processes did not answer (vLLM's engine every 60 s)."""
    stop = hit("preempted-sigterm", 50, time=400.0, source="serve.log")
    said = "INFO [shm_broadcast.py:466] No available shared memory broadcast block found in 60 second."
    stuck = [stream(0, [(1, 100.0, "Model loading took 9.08 GiB"), (2, 160.0, said), (3, 220.0, said), (4, 280.0, said)])]
    built = facts([stop], activity=stuck)
    decided = rule("external-stop-ended-a-hang").apply(built, start(built))
    assert decided is not None and "not answering" in decided.hang
    quiet = [stream(0, [(1, 100.0, "Model loading took 9.08 GiB")])]
    built = facts([stop], activity=quiet)
    assert rule("external-stop-ended-a-hang").apply(built, start(built)) is None


def test_hang_p2p_redirected_on_one_node():
    acs = context("device-acs-redirect", 3, source="lspci.txt", text="ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+")
    built = facts([acs], ranks=(0, 1))
    decided = rule("hang-p2p-redirected").apply(built, Decision(hang="nothing was printed for 12 min"))
    assert decided.primary == "nccl-p2p-failure"
    assert rule("hang-p2p-redirected").apply(facts([], ranks=(0, 1)), Decision(hang="12 min")) is None


def test_explained_by_another_drops_consequences():
    built = facts([hit("gpu-fallen-off-bus", 3, source="dmesg.txt", time=101.0), hit("cuda-launch-failure", 9, rank=1, time=100.0)])
    decided = rule("explained-by-another").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == ["gpu-fallen-off-bus"]


# healthy / outcome -------------------------------------------------------------------------------

def test_survived_errors_far_from_the_end_with_nothing_failing():
    built = facts([hit("hub-unreachable", 5, rank=0, weight=0.6)], source_lines={"a.log": 500})
    assert rule("survived-errors").apply(built, start(built)).status == "healthy"


def test_survived_errors_not_when_a_traceback_begins_after_them():
    """A thread's excerpt: rank 1's IndexError, then rank 0's traceback, cut before its exception:
    what followed the error was another failure, not a run that went on."""
    error = hit("user-code-exception", 11, rank=1, weight=0.6, text="[rank1]: IndexError: list index out of range")
    second = context("failed-traceback", 12, rank=0, text="[rank0]: Traceback (most recent call last):")
    built = facts([error, second], source_lines={"a.log": 40})
    assert rule("survived-errors").apply(built, start(built)) is None
    before = context("failed-traceback", 1, rank=1, text="[rank1]: Traceback (most recent call last):")
    caught = facts([before, error], source_lines={"a.log": 40})
    assert rule("survived-errors").apply(caught, start(caught)).status == "healthy"


def test_nothing_failed_without_failure_signs():
    built = facts([context("frame", 3)])
    assert rule("nothing-failed").apply(built, start(built)).status == "healthy"
    signed = facts([context("failed-traceback", 3)])
    assert rule("nothing-failed").apply(signed, start(signed)) is None


def test_nothing_failed_says_when_the_logs_show_no_finish_and_no_progress():
    """Healthy, as the contract has it (no line shows a failure), but when nothing shows the job
    finishing or training going on, the report says so (a hang or a kill leaves no line)."""
    quiet = facts([context("frame", 3)], activity=[stream(0, [(3, 10.0, "loading weights")])])
    decided = rule("nothing-failed").apply(quiet, start(quiet))
    assert decided.status == "healthy" and "nor do they show the job finishing" in decided.notes[-1]
    steps = StreamActivity("rank0.log", 0, None, (StreamLine(3, 10.0, "step 10 loss 2.1"),), False,
                           (StreamLine(3, 10.0, "step 10 loss 2.1"),))
    training = facts([context("frame", 3)], activity=[steps])
    assert not rule("nothing-failed").apply(training, start(training)).notes
    finished = facts([context("job-succeeded", 4)], activity=[stream(0, [(3, 10.0, "loading weights")])])
    assert not rule("nothing-failed").apply(finished, start(finished)).notes


def test_nothing_failed_says_when_the_last_step_is_short_of_its_end():
    """A real run in a memory cgroup: the OOM killer SIGKILLed the one process after `step 4/40`,
    and nothing else was written. Healthy (a log read while the job runs looks the same), but the
    report says where it stopped and where a silent kill shows."""
    def ran_to(text):
        line = StreamLine(6, 10.0, text)
        return facts([context("frame", 3)], activity=[StreamActivity("train.log", 0, None, (line,), False, (line,))])

    short = ran_to("2026-12-06 10:24:10,315 INFO train: step 4/40 loss 1.5851")
    decided = rule("nothing-failed").apply(short, start(short))
    assert decided.status == "healthy" and "'2026-12-06 10:24:10,315 INFO train: step 4/40" in decided.notes[-1]
    assert "dmesg" in decided.notes[-1] and "OOMKilled" in decided.notes[-1]
    whole = ran_to("2026-12-06 10:24:11,315 INFO train: step 40/40 loss 1.2")
    assert not rule("nothing-failed").apply(whole, start(whole)).notes


def test_failed_unexplained_is_unknown_with_an_action():
    built = facts([context("failed-exit", 3, captures={"code": "3"})])
    decided = rule("failed-unexplained").apply(built, start(built))
    assert decided.status == "unknown" and decided.action == "fix-and-rerun"


# primary ------------------------------------------------------------------------------------------

def test_peer_lost_elsewhere_takes_the_rank_the_launcher_reports_first_and_its_host():
    """Rank 0 only lost its peer; srun reports task 0 first, then task 1: the failure started on rank
    1 (not on the rank that waited), and srun's line names its host."""
    from firstfault.pipeline import diagnose_texts

    text = ("0: [rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
            "closed by peer [127.0.0.1]:27050. This is typically caused by a remote worker crashing.\n"
            "srun: error: node-7: task 0: Exited with exit code 1\nsrun: error: node-7: task 1: Exited with exit code 1\n")
    diagnosis = diagnose_texts([("slurm-77.out", text)])
    assert diagnosis.primary.failure_id == "collective-timeout-peer-crash"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (1, "node-7")


def test_specific_symptom_over_generic_root_when_earlier():
    built = facts([hit("user-code-exception", 9, rank=0, weight=0.5, time=20.0),
                   hit("cuda-oom", 4, rank=1, role="symptom", weight=0.9, time=10.0)])
    assert rule("specific-symptom-over-generic-root").apply(built, start(built)).primary == "cuda-oom"


def test_earliest_strong_root_wins_over_a_later_one():
    built = facts([hit("cuda-oom", 9, rank=1, time=20.0), hit("cuda-device-side-assert", 4, rank=3, time=10.0, source="b.log")])
    decided = rule("earliest-strong-root").apply(built, start(built))
    assert decided.primary == "cuda-device-side-assert" and decided.initiating.line.origin.rank == 3


def test_strongest_symptom_without_roots():
    built = facts([hit("nccl-system-error", 4, rank=0, role="symptom", weight=0.6, time=10.0),
                   hit("nccl-ib-timeout", 9, rank=1, role="symptom", weight=0.9, time=20.0, source="b.log")])
    assert rule("strongest-symptom").apply(built, start(built)).primary == "nccl-ib-timeout"


# hangs --------------------------------------------------------------------------------------------

def test_hang_sequence_behind_names_the_rank_with_the_lower_seqnum():
    built = facts([timeout(1, 0, seq=4121), timeout(1, 1, seq=4121), timeout(1, 2, seq=4120)])
    decided = rule("hang-sequence-behind").apply(built, start(built))
    assert decided.primary == "collective-timeout-straggler" and decided.initiating.line.origin.rank == 2


def test_hang_different_collectives_barrier_against_backward_is_uneven_batches():
    built = facts([timeout(5, 0, op="barrier"), timeout(5, 1, op="backward"), timeout(5, 2, op="backward")])
    decided = rule("hang-different-collectives").apply(built, start(built))
    assert decided.primary == "uneven-batches-hang" and decided.initiating.line.origin.rank == 0


def test_hang_different_collectives_odd_collective_is_a_mismatch():
    built = facts([timeout(5, 0, op="allreduce"), timeout(5, 1, op="allreduce"), timeout(5, 2, op="allgather")])
    decided = rule("hang-different-collectives").apply(built, start(built))
    assert decided.primary == "collective-mismatch" and decided.initiating.line.origin.rank == 2


def test_hang_alone_in_barrier():
    lost = hit("collective-timeout-peer-crash", 7, rank=1, role="collateral", weight=0.5, source="rank1.log",
               text="Connection closed by peer")
    built = facts([timeout(5, 0, op="barrier"), lost])
    decided = rule("hang-alone-in-barrier").apply(built, start(built))
    assert decided.primary == "uneven-batches-hang" and decided.initiating.line.origin.rank == 0


def test_hang_late_arrival():
    lost = hit("collective-timeout-peer-crash", 7, rank=2, role="collateral", weight=0.5, source="rank2.log",
               text="Connection reset by peer")
    built = facts([timeout(5, 0), timeout(5, 1), lost], ranks=(0, 1, 2))
    decided = rule("hang-late-arrival").apply(built, start(built))
    assert decided.initiating.line.origin.rank == 2


def test_hang_never_joined_anchors_on_the_ranks_own_last_line():
    busy = stream(0, [(3, 10.0, "rank 0: syncing checkpoint to remote storage")])
    built = facts([timeout(5, 1), timeout(5, 2)], ranks=(0, 1, 2), activity=[busy])
    decided = rule("hang-never-joined").apply(built, start(built))
    assert decided.initiating.line.origin.rank == 0
    assert "syncing checkpoint" in decided.initiating.line.text


def test_hang_back_too_late_names_the_rank_that_worked_on_while_the_others_waited():
    """A real gloo run: rank 3 synced a checkpoint for 5 s past a 3 s timeout. Ranks 0-2 and 4
    timed out at once (their tracebacks carry no time of their own); rank 3's `sync done` came 5 s
    after their last work, and it then lost its peers like one of them."""
    def ran(rank, lines):
        return StreamActivity(f"rank{rank}.log", rank, None, tuple(StreamLine(*line) for line in lines), False)

    waiting = [timeout(40, rank) for rank in (0, 1, 2, 4)]
    streams = [ran(rank, [(20, 36.1 + rank / 100, f"epoch 0 step 5/8 loss 1.37 (rank {rank})")]) for rank in (0, 1, 2, 4)]
    late = ran(3, [(24, 36.635, "rank 3: syncing checkpoint to remote storage"), (89, 41.635, "rank 3: sync done")])
    built = facts(waiting, ranks=range(5), activity=[*streams, late])
    decided = rule("hang-back-too-late").apply(built, start(built))
    assert decided.initiating.line.origin.rank == 3 and "sync done" in decided.initiating.line.text
    # the same line a moment after the others' last work: nothing says they waited for it
    soon = ran(3, [(24, 36.135, "rank 3: syncing checkpoint to remote storage"), (89, 36.4, "rank 3: sync done")])
    built = facts(waiting, ranks=range(5), activity=[*streams, soon])
    assert rule("hang-back-too-late").apply(built, start(built)) is None
    # a rank that timed out itself is a waiter, however late its last line
    built = facts([*waiting, timeout(41, 3)], ranks=range(5), activity=[*streams, late])
    assert rule("hang-back-too-late").apply(built, start(built)) is None


def test_hang_never_joined_names_no_rank_when_several_below_the_waiters_are_silent():
    """The end of a two-node log: ranks 5-12 and 14-15 timed out; ranks 0-4 and 13 printed nothing
    there. Every rank below one seen exists, so rank 0 is one silent rank of six, not the one."""
    waiting = [timeout(5, rank) for rank in (*range(5, 13), 14, 15)]
    built = facts(waiting, ranks=(*range(5, 13), 14, 15))
    assert rule("hang-never-joined").apply(built, start(built)) is None
    # ranks 1-7 timed out and rank 0 printed nothing of its own: rank 0 is the one
    built = facts([timeout(5, rank) for rank in range(1, 8)], ranks=range(1, 8))
    assert rule("hang-never-joined").apply(built, start(built)).initiating.line.origin.rank == 0


def test_hang_never_joined_counts_a_rank_the_watchdog_took_down_as_a_waiter():
    """An excerpt: ranks 2 and 3 print NCCL's watchdog timeout, rank 1 a step line, and of rank 0
    only torchrun's report is left, `failed (exitcode: -6)`, after the timeouts: the watchdog
    aborts every rank whose collective timed out, so rank 0 waited too, and rank 1 is the one
    that never joined. An abort before the first timeout is a crash of its own: then two ranks
    are unaccounted for, and none is named."""
    def watchdog(line, rank):
        return hit("collective-timeout-peer-crash", line, rank=rank, time=100.0, role="collateral", weight=0.5,
                   source="console.log", name="nccl-watchdog-timeout", text="Watchdog caught collective operation timeout")

    def aborted(line, time):
        return context("launcher-failed", line, rank=0, source="console.log", time=time,
                       captures={"code": "-6", "local": "0", "pid": "318"},
                       text="failed (exitcode: -6) local_rank: 0 (pid: 318) of binary: /usr/bin/python")

    working = stream(1, [(2, 40.0, "step 445 loss 0.41")], source="console.log")
    built = facts([watchdog(3, 2), watchdog(24, 3), aborted(50, 105.0)], ranks=(0, 1, 2, 3), activity=[working])
    assert rule("hang-never-joined").apply(built, start(built)).initiating.line.origin.rank == 1
    built = facts([watchdog(3, 2), watchdog(24, 3), aborted(1, 50.0)], ranks=(0, 1, 2, 3), activity=[working])
    assert rule("hang-never-joined").apply(built, start(built)) is None


def test_hang_never_joined_names_no_rank_of_which_no_line_is_in_view():
    """Ranks 0, 2 and 3 timed out; nothing at all of rank 1 is in view (a thread's excerpt): its
    lines were left out, which says nothing of its work. Rank 0 is the exception: it often logs
    without a rank of its own."""
    built = facts([timeout(5, rank) for rank in (0, 2, 3)], ranks=(0, 2, 3))
    assert rule("hang-never-joined").apply(built, start(built)) is None


def _lost_peer(line, rank):
    return hit("collective-timeout-peer-crash", line, rank=rank, source="console.log", role="collateral", weight=0.6,
               text=f"[rank{rank}]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:38038")


def test_peer_vanished_names_the_one_rank_that_printed_no_error():
    """Lightning's own launcher: rank 0 segfaulted and nothing reported it; ranks 1 and 2 of the
    three the job declared lost their peer. Rank 0 is named, pointed at by its start-up line."""
    declared = context("rank-declared", 5, source="console.log", captures={"global": "0"},
                       text="Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/3")
    world = IdentityMap(world=WorldSize(3, "All distributed processes registered. Starting with 3 processes"))
    built = facts([declared, _lost_peer(169, 2), _lost_peer(308, 1)], ranks=(1, 2), identity=world)
    decided = rule("peer-vanished").apply(built, start(built))
    assert decided.primary == "collective-timeout-peer-crash"
    assert decided.initiating.line.origin.rank == 0 and decided.initiating.line.origin.line == 5


def test_peer_vanished_needs_the_size_declared_when_one_rank_waited():
    """One rank lost a peer and the job's size is not declared: the silent rank seen could be one
    of many that never printed, so no rank is named; nor when the silent rank raised an error of
    its own."""
    declared = context("rank-declared", 7, source="console.log", captures={"global": "1"},
                       text="Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2")
    undeclared = facts([declared, _lost_peer(169, 0)], ranks=(0, 1))
    assert rule("peer-vanished").apply(undeclared, start(undeclared)) is None
    world = IdentityMap(world=WorldSize(2, "Starting with 2 processes"))
    own = hit("user-code-exception", 120, rank=1, source="console.log", text="[rank1]: IndexError: list index out of range")
    raised = facts([declared, own, _lost_peer(169, 0)], ranks=(0, 1), identity=world)
    assert rule("peer-vanished").apply(raised, start(raised)) is None
    silent = facts([declared, _lost_peer(169, 0)], ranks=(0, 1), identity=world)
    assert rule("peer-vanished").apply(silent, start(silent)).initiating.line.origin.rank == 1


def test_hang_never_joined_counts_a_rank_only_its_stream_shows():
    """Ray Train: the stalled worker's lines are rank 2's only through its pid (the input's ranks
    are the two that timed out); it is the one that never joined."""
    stalled = stream(2, [(31, 10.0, "(RayTrainWorker pid=5500) uploading checkpoint shard 2 to remote storage")],
                     source="console.log")
    built = facts([timeout(55, 0), timeout(60, 1)], ranks=(0, 1), activity=[stalled])
    decided = rule("hang-never-joined").apply(built, start(built))
    assert decided.initiating.line.origin.rank == 2 and "uploading checkpoint" in decided.initiating.line.text


def test_peer_vanished_by_the_launchers_report_of_a_dead_worker():
    """Ray Train: only rank 1 lost a peer before Ray stopped the group, so the others' waits do not
    tell; the controller's quote of rank 0's error is Ray's report that its process died: rank 0."""
    header = context("ray-error-snippet", 46, source="console.log", captures={"failed_rank": "0"},
                     text="(TrainController pid=9852) [Rank 0 Error Snippet]:")
    died = hit("torchelastic-child-failed", 65, source="console.log", role="collateral", weight=0.45, name="ray-actor-died",
               text="(TrainController pid=9852) The actor is dead because its worker process has died.")
    world = IdentityMap(world=WorldSize(3, "world_size=3"))
    quiet = [stream(r, [(20 + r, 10.0, f"(RayTrainWorker pid={9946 + r}) rank {r} step 4 loss 1.2")], source="console.log")
             for r in (0, 2)]
    built = facts([header, died, _lost_peer(38, 1)], ranks=(0, 1, 2), activity=quiet, identity=world)
    decided = rule("peer-vanished").apply(built, start(built))
    assert decided.initiating.line.origin.rank == 0 and "its launcher reports" in decided.because[-1].text
    unreported = facts([_lost_peer(38, 1)], ranks=(0, 1, 2), activity=quiet, identity=world)
    assert rule("peer-vanished").apply(unreported, start(unreported)) is None


def test_peer_lost_elsewhere_names_the_class_and_no_rank():
    """A thread's last 50 lines: ranks 0 and 1 lost their Gloo peer, and the rank that died is not
    in view (its traceback was above the excerpt): the others' entry is the verdict, with no rank;
    with an error of a rank's own in view, this rule has nothing to say."""
    built = facts([_lost_peer(50, 1), _lost_peer(90, 0)], ranks=(0, 1))
    decided = rule("peer-lost-elsewhere").apply(built, start(built))
    assert decided.primary == "collective-timeout-peer-crash" and decided.status == "failure"
    assert decided.initiating.line.origin.rank is None and decided.rank_decided
    own = hit("user-code-exception", 20, rank=2, source="console.log", text="[rank2]: IndexError: list index out of range")
    with_cause = facts([own, _lost_peer(50, 1)], ranks=(0, 1, 2))
    assert rule("peer-lost-elsewhere").apply(with_cause, start(with_cause)) is None
    # rank 2's traceback is in view and ends in an exception no entry knows: that is not elsewhere
    unknown = context("failed-traceback", 15, rank=2, source="console.log", text="[rank2]: Traceback (most recent call last):")
    unexplained = facts([unknown, _lost_peer(50, 1), _lost_peer(90, 0)], ranks=(0, 1, 2))
    assert rule("peer-lost-elsewhere").apply(unexplained, start(unexplained)) is None


def test_hang_silent_first_the_rank_the_others_went_past():
    def lines(rank, written=True):
        base = [(1, 100.0, f"{rank}: step 3000 loss 1.7"), (2, 110.0, f"{rank}: saving sharded checkpoint step 3000")]
        return base + ([(3, 140.0 + rank, f"{rank}: shard {rank} written in 29.4s")] if written else [])
    streams = [stream(rank, lines(rank, written=rank != 5)) for rank in range(8)]
    built = facts([], activity=streams)
    decided = rule("hang-silent-first").apply(built, Decision(hang="nothing was printed for 2.5 h"))
    assert decided.primary == "collective-timeout-straggler" and decided.initiating.line.origin.rank == 5


def test_hang_silent_first_a_rank_at_work_alone_before_one_quiet_by_design():
    """Only rank 0 logs steps; rank 1 prints its epoch line and nothing more, by design; rank 2 was
    last seen starting an evaluation of its own, and nothing was printed after it (a real torch 2.2
    run): rank 2 is where the hang is, not rank 1, whose epoch line the others printed and went past."""
    logger = stream(0, [(1, 37.448, "INFO train: epoch 0: rank 0 shard has 128 samples -> 8 steps"),
                        (2, 37.607, "INFO train: epoch 0 step 8/8 loss 1.3524 acc 0.312")])
    quiet = stream(1, [(1, 37.466, "INFO train: epoch 0: rank 1 shard has 128 samples -> 8 steps")])
    evaluating = stream(2, [(1, 37.330, "INFO train: epoch 0: rank 2 shard has 128 samples -> 8 steps"),
                            (2, 37.607, "INFO train: rank 2: evaluating epoch 0 on the held-out set")])
    built = facts([], activity=[logger, quiet, evaluating])
    decided = rule("hang-silent-first").apply(built, Decision(hang="nothing was printed for 7 s"))
    assert decided.initiating.line.origin.rank == 2


def test_hang_silent_first_a_rank_at_work_alone_with_its_output_in_two_files():
    """mpirun --output-filename (and torchrun --log-dir) keep each rank's stdout and stderr apart:
    every rank's stdout holds only gloo's untimed connection line, its stderr the log. Rank 1's
    stderr was last seen starting an evaluation (a real torch 2.8 run): its own stdout is not
    another rank that went on, and a file without times orders nothing."""
    def gloo(rank):
        return stream(rank, [(1, None, f"[Gloo] Rank {rank} is connected to 3 peer ranks.")], source=f"rank.{rank}/stdout")

    logs = [stream(0, [(4, 12.971, "INFO train: epoch 0 step 8/8 loss 1.3465 acc 0.359")], source="rank.0/stderr"),
            stream(1, [(3, 12.972, "INFO train: rank 1: evaluating epoch 0 on the held-out set")], source="rank.1/stderr"),
            stream(2, [(2, 12.876, "INFO train: epoch 0: rank 2 shard has 128 samples -> 8 steps")], source="rank.2/stderr")]
    built = facts([], activity=[*map(gloo, range(3)), *logs])
    decided = rule("hang-silent-first").apply(built, Decision(hang="nothing was printed for 8 s"))
    assert decided.initiating.line.origin.rank == 1
    # a rank of which no line carries a time: whether it went on after rank 1 nothing tells
    built = facts([], activity=[*map(gloo, range(4)), *logs])
    assert rule("hang-silent-first").apply(built, Decision(hang="nothing was printed for 8 s")) is None


def test_hang_silent_first_two_ranks_need_the_next_message_of_both():
    """Two ranks: rank 0 printed rank 1's last line and went on with lines it alone prints (a
    driver worker naming its parallel ranks): no sign rank 1 fell behind. Had rank 0 gone on with a line
    rank 1 prints too (the next step), rank 1 is the one behind."""
    quiet = stream(1, [(1, 10.0, "1: step 7 loss 2.2"), (2, 11.0, "1: custom allreduce disabled")])
    hang = Decision(hang="nothing was printed for 12 min")

    def rank0(after):
        return stream(0, [(1, 10.0, "0: step 7 loss 2.2"), (2, 11.0, "0: custom allreduce disabled"), (3, 90.0, after)])
    alone = facts([], activity=[rank0("0: rank 0 is assigned as DP rank 0, TP rank 0"), quiet])
    assert rule("hang-silent-first").apply(alone, hang) is None
    stepped = facts([], activity=[rank0("0: step 8 loss 2.1"), quiet])
    assert rule("hang-silent-first").apply(stepped, hang).initiating.line.origin.rank == 1


def test_hang_silent_first_the_only_logging_rank_that_went_off_to_work_alone():
    """Only rank 0 logs steps (rank 1 is quiet by design: its last line is a start-up line rank 0
    printed too); rank 0 was last seen starting an evaluation: rank 0 is the one the others wait for."""
    def logging_rank(last):
        lines = [(1, 10.0, "epoch 0: rank 0 shard has 96 samples -> 6 steps"), (2, 11.0, "epoch 0 step 3/6 loss 2.2"),
                 (3, 12.0, "epoch 0 step 6/6 loss 2.1"), (4, 12.1, last)]
        return StreamActivity("rank0.log", 0, None, tuple(StreamLine(*line) for line in lines), False,
                              tuple(StreamLine(*line) for line in lines[1:3]))
    quiet = stream(1, [(1, 10.0, "epoch 0: rank 1 shard has 96 samples -> 6 steps")])
    hang = Decision(hang="nothing was printed for 40 min")
    evaluating = facts([], activity=[logging_rank("rank 0: running evaluation on 2,000 held-out samples"), quiet])
    assert rule("hang-silent-first").apply(evaluating, hang).initiating.line.origin.rank == 0
    saved = facts([], activity=[logging_rank("checkpoint saved to ckpt/epoch0.pt"), quiet])
    decided = rule("hang-silent-first").apply(saved, hang)
    assert decided is None or decided.initiating.line.origin.rank != 0


def _failure_table(entries) -> str:
    """torchrun's failure table (torch 2.x layout) for (rank, exit code, signal) entries, first the root cause."""
    def entry(index, rank, code, signal):
        return (f"[{index}]:\n  time      : 2024-05-01_10:00:00\n  host      : node-a\n  rank      : {rank} (local_rank: {rank})\n"
                f"  exitcode  : {code} (pid: {4000 + rank})\n  error_file: <N/A>\n"
                f"  traceback : Signal {abs(int(code))} ({signal}) received by PID {4000 + rank}\n")
    root, *others = entries
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ntrain.py FAILED\n"
            + "-" * 60 + "\nFailures:\n" + "".join(entry(i + 1, *e) for i, e in enumerate(others)) + "-" * 60
            + "\nRoot Cause (first observed failure):\n" + entry(0, *root) + "=" * 60 + "\n")


def test_rank_launcher_tie_when_the_table_stamps_several_failures_with_its_root_causes_second():
    """Ranks 0 and 2 exited with code 1 in the same second (no error files): the table's root cause
    is rank 0 only because it is listed first; with rank 2 a second later, the table does tell."""
    from firstfault.pipeline import diagnose_texts

    tied = diagnose_texts([("console.log", _failure_table([(0, "1", "-"), (2, "1", "-"), (1, "-15", "SIGTERM")]))])
    assert tied.initiating is None or tied.initiating.rank is None
    assert [item.text for item in tied.because if item.rule == "rank-launcher-tie"][0].startswith(
        "which rank failed first cannot be told from torchrun's failure table: it lists ranks 0, 2 failing")
    later = _failure_table([(0, "1", "-"), (2, "1", "-"), (1, "-15", "SIGTERM")]).replace(
        "10:00:00\n  host      : node-a\n  rank      : 2", "10:00:01\n  host      : node-a\n  rank      : 2")
    told = diagnose_texts([("console.log", later)])
    assert told.initiating.rank == 0 and not any(item.rule == "rank-launcher-tie" for item in told.because)


def test_rank_from_table_record_names_the_worker_whose_record_quotes_the_error():
    """Only the table is left (the end of a log): rank 2's record quotes its error file, the
    traceback of a KeyError; the table's root cause is rank 2, and another record a SIGTERM."""
    from firstfault.pipeline import diagnose_texts

    table = _failure_table([(2, "1", "-"), (1, "-15", "SIGTERM")]).replace(
        "  traceback : Signal 1 (-) received by PID 4002\n",
        "  traceback : Traceback (most recent call last):\n    File \"train.py\", line 12, in main\n"
        "      label = row['label']\n  KeyError: 'label'\n")
    assert "  KeyError: 'label'" in table
    diagnosis = diagnose_texts([("console.log", table)])
    assert diagnosis.initiating.rank == 2, diagnosis.because
    assert [item.rule for item in diagnosis.because if item.rule.startswith("rank-")][0] == "rank-from-table-record"
    # tied with rank 3 in its second: the record says whose line it is, not who failed first
    tied = _failure_table([(2, "1", "-"), (3, "1", "-")]).replace(
        "  traceback : Signal 1 (-) received by PID 4002\n", "  traceback : Traceback (most recent call last):\n  KeyError: 'label'\n")
    diagnosis = diagnose_texts([("console.log", tied)])
    assert not any(item.rule == "rank-from-table-record" for item in diagnosis.because)


def test_one_host_alike_names_the_host_not_the_first_printed_rank():
    """A Ray job on two spot nodes (dev case): one node's pod was evicted, and its four workers
    (ranks 4-7) all reported the SIGTERM as their own first error; the other node's only lost
    them. The host started it; which of its ranks printed first says nothing. With a rank of the
    other node failing of its own as well, the rule does not apply."""
    from firstfault.pipeline import diagnose_paths, diagnose_texts

    case = REPO / "tests" / "fixtures" / "dev" / "preempt-k8s-spot-reclaim-ray-ppo" / "logs"
    diagnosis = diagnose_paths([str(case)])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (None, "10.1.39.138"), diagnosis.because
    assert any(step.rule == "one-host-alike" for step in diagnosis.because)
    texts = [(path.name, path.read_text(encoding="utf-8")) for path in sorted(case.iterdir())]
    line = "(PolicyWorker pid=4502, ip=10.1.39.138) [rank7] *** SIGTERM received at time=1779080604 on cpu 41 ***\n"
    assert any(line in text for _name, text in texts)
    elsewhere = line + "(PolicyWorker pid=3120, ip=10.1.40.12) [rank0] *** SIGTERM received at time=1779080604 on cpu 3 ***\n"
    both = [(name, text.replace(line, elsewhere)) for name, text in texts]
    assert not any(step.rule == "one-host-alike" for step in diagnose_texts(both).because)


def test_host_of_tied_ranks_names_the_one_host_of_every_tied_rank():
    """A tie on node-a, with another host in view: node-a is where it started, whichever rank it was."""
    from firstfault.pipeline import diagnose_texts

    error = "RuntimeError: Error while deserializing header: HeaderTooLarge\n"
    table = error + _failure_table([(0, "1", "-"), (2, "1", "-")])
    other = ("node0.log", "node-b:4410:4410 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>\n")
    diagnosis = diagnose_texts([other, ("node1.log", table)])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (None, "node-a")
    assert any(item.rule == "host-of-tied-ranks" for item in diagnosis.because)
    apart = diagnose_texts([other, ("node1.log", table.replace("host      : node-a\n  rank      : 2", "host      : node-c\n  rank      : 2"))])
    assert apart.initiating.host is None
    # srun saw a task fail on the other node too: which node failed first, the table does not say
    both = diagnose_texts([other, ("node1.log", table + "srun: error: node-a: task 1: Exited with exit code 1\n"
                                   "srun: error: node-b: task 0: Exited with exit code 1\n")])
    assert both.initiating.host is None
    short = diagnose_texts([other, ("node1.log", table + "srun: error: node-a.cluster: task 1: Exited with exit code 1\n")])
    assert short.initiating.host == "node-a"


def test_hang_aborted_together_names_the_one_rank_its_launcher_only_stopped():
    """Ranks 1-3 died of SIGABRT (the NCCL watchdog's abort, its timeout lines not pasted) and rank 0
    was still running when the launcher stopped it: rank 0 is the rank the others waited for."""
    from firstfault.pipeline import diagnose_texts

    aborts = [(rank, "-6", "SIGABRT") for rank in (2, 1, 3)]
    diagnosis = diagnose_texts([("console.log", _failure_table([*aborts, (0, "-15", "SIGTERM")]))])
    assert diagnosis.primary.failure_id == "collective-timeout-straggler"
    assert diagnosis.initiating.rank == 0
    assert any(item.rule == "hang-aborted-together" for item in diagnosis.because)
    # one abort is a native crash of one rank as far as the table tells (the others only stopped)
    alone = diagnose_texts([("console.log", _failure_table([(2, "-6", "SIGABRT"), (0, "-15", "SIGTERM"),
                                                             (1, "-15", "SIGTERM")]))])
    assert alone.primary.failure_id != "collective-timeout-straggler"
    # two ranks still running: some aborts may follow a peer's failure (NCCL's error handling aborts too)
    two = diagnose_texts([("console.log", _failure_table([*aborts[:2], (0, "-15", "SIGTERM"), (3, "-15", "SIGTERM")]))])
    assert not any(item.rule == "hang-aborted-together" for item in two.because)
    # every rank in view aborted: a collective timed out, and which rank was late is not told (the
    # host is the job's one host, not the first abort's)
    every = diagnose_texts([("console.log", _failure_table(aborts))])
    assert every.primary.failure_id == "collective-timeout-straggler"
    assert (every.initiating.rank, every.initiating.host) == (None, "node-a")
    assert any(item.rule == "host-only-one" for item in every.because)
    # the watchdog's own lines in view: the hang rules read who was late from them, not this one
    watchdog = ("[rank1]:[E1205 10:00:00.000000 4001 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 "
                "milliseconds before timing out.\n")
    seen = diagnose_texts([("console.log", watchdog + _failure_table([*aborts, (0, "-15", "SIGTERM")]))])
    assert not any(item.rule == "hang-aborted-together" for item in seen.because)
    assert any(item.rule == "hang-aborted-together" for item in every.because)


def test_hang_aborted_together_in_the_unpadded_table_of_torch_1_9():
    """torch 1.9-1.10 printed the table unpadded (`rank: 3 (local_rank: 3)`, `msg: "Signal 6 ..."`):
    its rows say which rank ended how, as the padded ones do."""
    from firstfault.pipeline import diagnose_texts

    def entry(index, rank, code, signal):
        return (f"[{index}]:\n  time: 2021-08-14_11:52:40\n  rank: {rank} (local_rank: {rank})\n  exitcode: {code} (pid: {370 + rank})\n"
                f'  error_file: <N/A>\n  msg: "Signal {abs(int(code))} ({signal}) received by PID {370 + rank}"\n')
    table = ("Root Cause:\n" + entry(0, 3, "-6", "SIGABRT") + "=" * 39 + "\nOther Failures:\n"
             + entry(1, 1, "-6", "SIGABRT") + entry(2, 0, "-15", "SIGTERM") + "*" * 39 + "\n")
    diagnosis = diagnose_texts([("console.log", table)])
    assert [(row.rank, row.ended) for row in diagnosis.ranks] == [(0, "stopped"), (1, "crashed"), (3, "crashed")]
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank) == ("collective-timeout-straggler", 0)


def test_hang_all_timed_out_names_no_rank():
    built = facts([timeout(5, 0), timeout(5, 1)], ranks=(0, 1))
    decided = rule("hang-all-timed-out").apply(built, start(built))
    assert decided.primary == "collective-timeout-straggler"


def test_hang_all_timed_out_on_several_hosts_names_no_host():
    """The line it points at is the first waiter's: on one of two hosts, that is not where the hang
    started (on one host, it is: the job's only one)."""
    first = replace(timeout(5, 2), line=LogLine("Watchdog caught collective operation timeout", Origin("node-a.log", 5, 2, "node-a", None)))
    other = replace(timeout(6, 9), line=LogLine("Watchdog caught collective operation timeout", Origin("node-b.log", 6, 9, "node-b", None)))
    built = facts([first, other], ranks=(2, 9))
    decided = rule("hang-all-timed-out").apply(built, start(built))
    assert decided.initiating.line.origin.host is None and decided.host_decided
    alone = facts([first, replace(other, line=replace(other.line, origin=replace(other.line.origin, host="node-a")))], ranks=(2, 9))
    assert rule("hang-all-timed-out").apply(alone, start(alone)).initiating.line.origin.host == "node-a"


def test_hang_after_the_end_a_lone_wait_begun_after_training_ended():
    done = context("job-succeeded", 4, source="rank0.log", time=1000.0, text="Training complete")
    lone = replace(timeout(9, 0, time=2800.0), captures={"timeout_ms": "1800000"})
    built = facts([done, lone], ranks=range(4))
    decided = rule("hang-after-the-end").apply(built, start(built))
    assert (decided.primary, decided.initiating.line.origin.rank) == ("collective-mismatch", 0)
    early = replace(timeout(9, 0, time=2000.0), captures={"timeout_ms": "1800000"})  # began at 200 s, during training
    built = facts([done, early], ranks=range(4))
    assert rule("hang-after-the-end").apply(built, start(built)) is None
    two = facts([done, lone, replace(timeout(9, 1, time=2800.0), captures={"timeout_ms": "1800000"})], ranks=range(4))
    assert rule("hang-after-the-end").apply(two, start(two)) is None  # two ranks waited: for someone still at work


def test_hang_after_the_end_a_lone_rank_that_lost_its_peers_after_training_ended():
    """Gloo sees the other ranks exit at once: no timeout, no hang, and the rank's launcher
    reports its exit code 1; the rank still ended waiting, in a collective begun after the end."""
    done = context("job-succeeded", 27, source="console.log", time=1000.0, text="training finished after 16 steps")
    lost = timeout(42, 0, time=1000.0, text="RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:18321")
    exited = context("launcher-failed", 43, rank=0, source="console.log", captures={"code": "1", "local": "0"}, time=1001.5)
    built = facts([done, lost, exited], ranks=range(3))
    assert built.rows[0].ended == "lost a peer"  # not "failed": the exit code is its wait's exception
    decided = rule("hang-after-the-end").apply(built, start(built))
    assert (decided.primary, decided.initiating.line.origin.rank) == ("collective-mismatch", 0)
    assert "lost its peers" in decided.because[-1].text
    before = facts([done, replace(lost, line=replace(lost.line, origin=replace(lost.line.origin, time=900.0))), exited],
                   ranks=range(3))
    assert rule("hang-after-the-end").apply(before, start(before)) is None  # during training: a peer died
    crashed = context("launcher-failed", 44, rank=1, source="console.log", captures={"code": "-11", "local": "1"}, time=999.0)
    built = facts([done, lost, exited, crashed], ranks=range(3))
    assert rule("hang-after-the-end").apply(built, start(built)) is None  # rank 1 crashed at exit: that is what it lost


def test_hang_unattributed_when_the_stop_ended_a_hang():
    built = facts([hit("preempted-sigterm", 50, time=10_000.0, source="slurm.out")])
    decided = rule("hang-unattributed").apply(built, Decision(hang="nothing was printed for 3 h"))
    assert decided.primary == "collective-timeout-straggler" and "3 h" in decided.because[-1].text


# initiating rank --------------------------------------------------------------------------------

def _decided(match, built):
    return Decision(roots=built.roots, status="failure", primary=match.entry_id, initiating=match)


def test_odd_one_out_picks_the_rank_whose_own_collective_differs():
    text = "Rank {r} is running collective: CollectiveFingerPrint(OpType={op}), but Rank 9 is running collective: x"
    mismatches = [hit("collective-mismatch", 4, rank=r, source=f"rank{r}.log",
                      text=text.format(r=r, op="ALLREDUCE" if r != 2 else "BROADCAST")) for r in range(4)]
    built = facts(mismatches)
    decided = rule("odd-one-out").apply(built, _decided(mismatches[0], built))
    assert decided.initiating.line.origin.rank == 2


def test_mismatch_no_odd_one_when_two_reports_disagree_and_nothing_breaks_the_tie():
    """Only rank 0's and rank 2's reports are in view, each with its own collective: the first
    printed is not the one that started it; with a third agreeing with rank 0, rank 2 is odd."""
    text = "Rank {r} is running collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[{n}]), but Rank 9 is running collective: x"

    def report(r, n):
        return hit("collective-mismatch", 4, rank=r, source=f"rank{r}.log", text=text.format(r=r, n=n))
    pair = [report(0, 3), report(2, 4)]
    built = facts(pair)
    decided = rule("mismatch-no-odd-one").apply(built, _decided(pair[0], built))
    assert decided.rank_decided and decided.initiating.line.origin.rank is None
    three = [*pair, report(1, 3)]
    built = facts(three)
    assert rule("mismatch-no-odd-one").apply(built, _decided(three[0], built)) is None


def test_every_rank_alike_names_no_rank_when_each_raised_it_first():
    """Every rank raised the same error as its own first one, seconds apart (a CPU-only build asked
    for NCCL): no rank started it. Not when a rank that printed did not raise it, when a rank failed
    otherwise first, when they were minutes apart, or when the job had more ranks than raised it."""
    text = "RuntimeError: Distributed package doesn't have NCCL built in"

    def raised(r, time, entry="cuda-unavailable"):
        return hit(entry, 7, rank=r, time=time, source=f"rank{r}.log", text=text)

    def apply(matches, ranks, primary, world=None):
        activity = [stream(r, [(7, 100.0, text)]) for r in ranks]
        identity = IdentityMap(world=WorldSize(world, "declared")) if world else None
        built = facts(matches, ranks=ranks, activity=activity, identity=identity)
        return rule("every-rank-alike").apply(built, _decided(primary, built))

    alike = [raised(r, 100.0 + r) for r in range(3)]
    decided = apply(alike, range(3), alike[0])
    assert decided.rank_decided and decided.initiating.line.origin.rank is None
    assert "every rank (ranks 0-2)" in decided.because[-1].text
    assert apply(alike[:2], range(3), alike[0]) is None  # rank 2 printed, and raised nothing
    assert apply(alike, range(3), alike[0], world=8) is None  # 5 ranks of the job are not in view
    otherwise = raised(0, 90.0, entry="user-code-exception")
    assert apply([otherwise, *alike], range(3), alike[1]) is None  # rank 0 failed otherwise first
    apart = [*alike[:2], raised(2, 400.0)]
    assert apply(apart, range(3), alike[0]) is None  # rank 2 five minutes later: not one shared cause


def test_first_second_alike_names_no_rank_among_ranks_tied_in_the_first_second():
    """Horovod's console stamps whole seconds: 3 of a 416-rank job gave up waiting for a store key
    in the same second. Which came first the times cannot tell: no rank. Not when the stamps are
    finer than seconds, not when one rank failed alone a second earlier, not for another failure."""
    text = "what():  [horovod/common/gloo/http_store.cc:111] Wait timeout for key(s): [global/276]"

    def waited(rank, time, entry="rendezvous-failure"):
        return hit(entry, 30 + rank, rank=rank, time=time, source="horovodrun.log", text=text)

    def apply(matches):
        built = facts(matches, ranks=range(416))
        return rule("first-second-alike").apply(built, _decided(matches[0], built))

    tied = [waited(rank, 1591828898.0) for rank in (127, 8, 17)]
    decided = apply(tied)
    assert decided.rank_decided and decided.initiating.line.origin.rank is None
    assert "ranks 8,17,127" in decided.because[-1].text
    assert apply([waited(rank, 1591828898.0 + rank / 1000) for rank in (127, 8, 17)]) is None  # finer stamps order them
    assert apply([waited(127, 1591828897.0), *tied[1:]]) is None  # rank 127 alone, a second before the others
    assert apply([tied[0], waited(8, 1591828898.0, entry="cuda-oom")]) is None  # not one failure


def test_every_rank_alike_with_no_activity_reads_the_ranks_the_input_shows():
    """A console whose only rank-prefixed lines are the ranks' tracebacks (the HF Trainer under
    torchrun, offline): no activity stream has a rank, so the ranks the input shows are those that
    must all have raised it; with rank 2 in the input and silent, not every rank raised it."""
    text = "OSError: We couldn't connect to 'https://huggingface.co' to load the files"
    alike = [hit("hub-unreachable", 71 + 49 * r, rank=r, time=100.0 + r / 5, source="console.log", text=text) for r in range(2)]
    built = facts(alike, ranks=(0, 1))
    decided = rule("every-rank-alike").apply(built, _decided(alike[1], built))
    assert decided.rank_decided and decided.initiating.line.origin.rank is None
    wider = facts(alike, ranks=(0, 1, 2))
    assert rule("every-rank-alike").apply(wider, _decided(alike[1], wider)) is None


def test_every_rank_alike_not_when_the_ranks_first_raised_different_exceptions():
    """Rank 1's KeyError, then torchrun's restart whose set-up failed on both ranks with a
    RuntimeError (one class, user code, for both): rank 1's first error, earlier in the file though
    its line has no time of its own, is not rank 0's, so no `every rank alike`."""
    key = hit("user-code-exception", 81, rank=1, source="console.log", text="[default1]:[rank1]: KeyError: 'label'")
    mesh = [hit("user-code-exception", line, rank=rank, time=100.0, source="console.log",
                text=f"[default{rank}]:RuntimeError: Gloo connectFullMesh failed with [pair.cc:152] timed out connecting")
            for rank, line in ((1, 235), (0, 286))]
    activity = [stream(r, [(80, 90.0, "step 1")], source="console.log") for r in (0, 1)]
    built = facts([key, *mesh], ranks=(0, 1), activity=activity)
    assert rule("every-rank-alike").apply(built, _decided(key, built)) is None
    alike = facts(mesh, ranks=(0, 1), activity=activity)
    assert rule("every-rank-alike").apply(alike, _decided(mesh[0], alike)).initiating.line.origin.rank is None


def test_every_rank_alike_leaves_a_disagreement_to_its_odd_one():
    """Every rank reports a collective mismatch, but rank 2's own collective differs: alike in kind
    only, so the rule leaves the rank that odd-one-out kept."""
    text = "Rank {r} is running collective: CollectiveFingerPrint(OpType={op}), but Rank 9 is running collective: x"
    mismatches = [hit("collective-mismatch", 4, rank=r, source=f"rank{r}.log", time=100.0,
                      text=text.format(r=r, op="ALLREDUCE" if r != 2 else "BROADCAST")) for r in range(4)]
    built = facts(mismatches, ranks=range(4), activity=[stream(r, [(4, 100.0, "x")]) for r in range(4)])
    assert rule("every-rank-alike").apply(built, _decided(mismatches[2], built)) is None


def test_rank_from_pid():
    killed = hit("host-oom-killed", 2, source="dmesg.txt", text="Out of memory: Killed process 88124 (python3)")
    worker = Link((pid_key(88124), rank_key(5)), how="the launcher's report names the rank's pid", where=("a.log", 3))
    built = facts([killed], identity=IdentityMap([worker]))
    assert rule("rank-from-pid").apply(built, _decided(killed, built)).rank == 5


def test_rank_from_bus():
    xid = hit("gpu-fallen-off-bus", 2, source="dmesg.txt", text="NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus")
    nccl = context("device-nccl-bus", 9, captures={"rank": "3", "nranks": "8", "device": "3", "bus": "3b000"})
    built = facts([xid, nccl])
    assert rule("rank-from-bus").apply(built, _decided(xid, built)).rank == 3


def test_rank_from_same_fault_nearby():
    bare = hit("cuda-illegal-memory-access", 10)
    named = hit("cuda-illegal-memory-access", 40, rank=1)
    built = facts([bare, named])
    assert rule("rank-from-same-fault-nearby").apply(built, _decided(bare, built)).rank == 1


def _frame(line, file, source="console.log"):
    return context("stack-frame", line, source=source, captures={"file": file, "func": "main"},
                   text=f'  File "{file}", line 6, in main')


def test_raised_by_the_launcher_names_no_rank():
    """DeepSpeed 0.15's launcher on a CPU machine without numactl raised before it started a rank
    (a real run): the one process in view is the launcher, not rank 0."""
    header = context("failed-traceback", 4, source="console.log", text="Traceback (most recent call last):")
    error = hit("user-code-exception", 9, source="console.log",
                text="FileNotFoundError: [Errno 2] No such file or directory: 'numactl'")
    launcher = [header, _frame(5, "/venv/bin/deepspeed"), _frame(7, "/venv/lib/python3.11/site-packages/deepspeed/launcher/runner.py"), error]
    built = facts(launcher, single=True)
    decided = rule("raised-by-the-launcher").apply(built, _decided(error, built))
    assert decided.rank is None and decided.rank_decided
    script = [header, _frame(5, "/job/train.py"), _frame(7, "/venv/lib/python3.11/site-packages/deepspeed/utils/numa.py"), error]
    built = facts(script, single=True)  # the script's own traceback: the only process is rank 0
    assert rule("raised-by-the-launcher").apply(built, _decided(error, built)) is None
    built = facts(launcher)  # several processes: another rule says which
    assert rule("raised-by-the-launcher").apply(built, _decided(error, built)) is None


def test_rank_only_process():
    bare = hit("cuda-oom", 10)
    built = facts([bare], single=True)
    assert rule("rank-only-process").apply(built, _decided(bare, built)).rank == 0
    several = facts([bare])
    assert rule("rank-only-process").apply(several, _decided(bare, several)) is None


def test_rank_only_process_not_for_a_process_that_could_not_join():
    """A real torchrun agent whose rendezvous endpoint's name does not resolve started no worker:
    its console is one process, and it is no rank (tests/fixtures/real/dns-tee-ws2-torch213)."""
    dns = hit("rendezvous-failure", 3, source="console.log", name="store-name-not-resolved",
              text="[W1206 10:52:42.257151864 socket.cpp:764] [c10d] The IPv6 network addresses of (trainer-master.invalid, "
                   "29400) cannot be retrieved (gai error: -2 - Name or service not known).")
    built = facts([dns], single=True)
    assert rule("rank-only-process").apply(built, _decided(dns, built)) is None


def test_rank_only_process_not_from_the_kernel_s_lines_alone():
    """A dmesg with one Xid or OOM kill is the host's account of some process: no process line is in
    view, so it is no 'only process, rank 0'; beside the process's own `Killed` line it is."""
    xid = hit("gpu-fallen-off-bus", 1, source="dmesg.txt",
              text="[ 8812.120431] NVRM: Xid (PCI:0000:3b:00): 79, pid=4321, name=python3, GPU has fallen off the bus.")
    oom = hit("host-oom-killed", 1, source="journal.txt",
              text="Dec 05 12:56:08 gpu-node-3 kernel: Out of memory: Killed process 4321 (python3) total-vm:98765432kB")
    for line in (xid, oom):
        built = facts([line], single=True)
        assert rule("rank-only-process").apply(built, _decided(line, built)) is None
    own = hit("host-oom-killed", 40, source="train.log", role="symptom", text="train.sh: line 10: 4321 Killed  python train.py")
    built = facts([oom, own], single=True)
    assert rule("rank-only-process").apply(built, _decided(oom, built)).rank == 0


def test_rank_launcher_first_ignores_its_own_sigterms():
    bare = hit("cuda-oom", 10)
    sigterm = context("launcher-failed", 20, rank=0, captures={"code": "-15", "local": "0"}, time=5.0)
    failed = context("launcher-failed", 21, rank=3, captures={"code": "1", "local": "3"}, time=6.0)
    built = facts([bare, sigterm, failed])
    assert rule("rank-launcher-first").apply(built, _decided(bare, built)).rank == 3


def test_rank_launcher_first_names_no_rank_for_a_stop_another_agent_received():
    stop = hit("preempted-sigterm", 12, source="node1.log", text="Received 15 death signal, shutting down workers")
    elsewhere = context("launcher-failed", 30, rank=0, source="node0.log", captures={"code": "1", "local": "0"}, time=6.0)
    built = facts([stop, elsewhere])
    assert rule("rank-launcher-first").apply(built, _decided(stop, built)) is None
    own = context("launcher-failed", 14, rank=3, source="node1.log", captures={"code": "-9", "local": "1"}, time=5.0)
    built = facts([stop, elsewhere, own])
    assert rule("rank-launcher-first").apply(built, _decided(stop, built)).rank == 3


def test_rank_launcher_first_takes_no_report_from_another_host():
    """The OOM killer's line is on one node; the launcher that reports a worker's exit runs on
    the other: its worker is not the process killed here."""
    killed = hit("host-oom-killed", 22, source="dgx-a100-18/dmesg.txt", host="dgx-a100-18",
                 text="Out of memory: Killed process 398016 (python)")
    other = context("launcher-failed-deepspeed", 49, rank=3, source="pdsh_launcher.log", host="dgx-a100-17",
                    captures={"code": "-9", "local": "3"}, time=6.0)
    built = facts([killed, other])
    assert rule("rank-launcher-first").apply(built, _decided(killed, built)) is None
    same = context("launcher-failed-deepspeed", 50, rank=13, source="pdsh_launcher.log", host="dgx-a100-18",
                   captures={"code": "-9", "local": "5"}, time=7.0)
    built = facts([killed, other, same])
    assert rule("rank-launcher-first").apply(built, _decided(killed, built)).rank == 13


def test_rank_launcher_first_for_a_kill_by_signal_takes_a_process_killed_by_one():
    """A process the OOM killer ended died by SIGKILL: a report of an ordinary exit (code 1) is
    another process, unless it is the only process that failed (the killed DataLoader worker's
    rank)."""
    killed = hit("host-oom-killed", 1, source="dmesg.txt", text="Out of memory: Killed process 21860 (python3)")
    exits = [context("launcher-failed-srun", 30 + task, rank=task, source="slurm.out", captures={"code": "1", "task": str(task)},
                     time=5.0 + task) for task in (2, 4)]
    built = facts([killed, *exits])
    assert rule("rank-launcher-first").apply(built, _decided(killed, built)) is None
    signalled = context("launcher-failed-srun", 20, rank=3, source="slurm.out", captures={"signal": "Killed", "task": "3"},
                        time=9.0)
    built = facts([killed, *exits, signalled])
    assert rule("rank-launcher-first").apply(built, _decided(killed, built)).rank == 3
    built = facts([killed, exits[0]])
    assert rule("rank-launcher-first").apply(built, _decided(killed, built)).rank == 2


def test_rank_launcher_first_names_no_waiter_for_a_straggler():
    """A straggler verdict means another rank was slow: the rank the launcher saw exit first is
    one that gave up waiting, so it is not named as the one that started it."""
    wait = hit("collective-timeout-straggler", 10, role="symptom", text="RuntimeError: Socket Timeout")
    failed = context("launcher-failed", 21, rank=2, captures={"code": "1", "local": "2"}, time=6.0)
    built = facts([wait, failed])
    assert rule("rank-launcher-first").apply(built, _decided(wait, built)) is None


# host, consequences, action ---------------------------------------------------------------------

def test_host_named_on_its_line():
    killed = hit("host-oom-killed", 5, text="2 Workers killed due to memory pressure (OOM) at node (ID: ab12, IP: 10.0.3.9)")
    ip = context("host-ray-node-ip", 5, captures={"host": "10.0.3.9"})
    elsewhere = context("host-running-on", 1, captures={"host": "head-node-1"})
    built = facts([elsewhere, killed, ip])
    assert rule("host-named-on-its-line").apply(built, _decided(killed, built)).host == "10.0.3.9"
    other_line = facts([killed, context("host-ray-node-ip", 6, captures={"host": "10.0.3.9"})])
    assert rule("host-named-on-its-line").apply(other_line, _decided(killed, other_line)) is None
    loopback = facts([killed, context("host-rank-node-pair", 5, captures={"host": "localhost", "rank": "0"})])
    assert rule("host-named-on-its-line").apply(loopback, _decided(killed, loopback)) is None


def test_host_of_rank():
    bare = hit("cuda-oom", 10, rank=5)
    built = facts([bare], identity=IdentityMap([Link((rank_key(5),), "node018", "an init line", ("a.log", 1), 5)]))
    assert rule("host-of-rank").apply(built, _decided(bare, built)).host == "node018"


def test_host_of_rank_through_an_srun_task_per_node():
    bare = hit("cuda-oom", 10, rank=11)
    tasks = {0: ("gpu-a", ("a.log", 1)), 1: ("gpu-b", ("a.log", 2))}
    built = facts([bare], ranks=range(16), identity=IdentityMap(task_hosts=tasks, local_world=8))
    assert rule("host-of-rank").apply(built, _decided(bare, built)).host == "gpu-b"


def test_host_only_one():
    bare = hit("cuda-oom", 10, rank=0)
    built = facts([bare], identity=IdentityMap(named_hosts=("kettle", "localhost")))
    assert rule("host-only-one").apply(built, _decided(bare, built)).host == "kettle"
    other_node = hit("cuda-oom", 10, rank=9)
    built = facts([other_node], identity=IdentityMap(named_hosts=("kettle",), local_world=8))
    assert rule("host-only-one").apply(built, _decided(other_node, built)) is None


def test_consequences_names_what_the_first_fault_explains():
    assert_ = hit("cuda-device-side-assert", 3, rank=2, source="rank2.log")
    built = facts([assert_, timeout(9, 0), timeout(9, 1)])
    decided = rule("consequences").apply(built, _decided(assert_, built))
    assert "collective-timeout-peer-crash on ranks 0-1" in decided.because[-1].text
    assert "consequences of cuda-device-side-assert" in decided.because[-1].text


def test_action_from_entry_excludes_the_host_for_hardware():
    xid = hit("gpu-fallen-off-bus", 2, source="dmesg.txt", host="gpu-node-7")
    built = facts([xid])
    decided = rule("action-from-entry").apply(built, _decided(xid, built))
    assert decided.action == "exclude-host-and-restart"
    commands = dict(decided.action_detail)["commands"]
    assert any("scontrol update NodeName=gpu-node-7 State=DRAIN" in command for command in commands)
    assert any(command == "kubectl cordon gpu-node-7" for command in commands)


def test_action_from_entry_defaults_to_fix_and_rerun():
    oom = hit("cuda-oom", 2, rank=0)
    built = facts([oom])
    assert rule("action-from-entry").apply(built, _decided(oom, built)).action == "fix-and-rerun"


# the table as a whole ---------------------------------------------------------------------------

def test_decide_records_which_rules_decided():
    built = facts([hit("cuda-device-side-assert", 3, rank=2, time=10.0, source="rank2.log"), timeout(9, 0, time=20.0)])
    decided = decide(built)
    assert decided.primary == "cuda-device-side-assert"
    assert [item.rule for item in decided.because] == ["earliest-strong-root", "consequences", "action-from-entry"]


def test_every_rule_of_the_table_has_a_test_here():
    tests = {name for name in dir(sys.modules[__name__]) if name.startswith("test_")}
    missing = [item.id for _stage, item in all_rules()
               if not any(name.startswith("test_" + item.id.replace("-", "_")) for name in tests)]
    assert missing == []


def _stack(rank, source, line, funcs, marker="KeyboardInterrupt", ops=()):
    frames = [context("stack-frame", line - 2 * (len(funcs) - index), rank=rank, source=source,
                      captures={"file": f"/src/{func}.py", "func": func}, text=f'File "/src/{func}.py", line 3, in {func}')
              for index, func in enumerate(funcs)]
    op_lines = [context("frame", line - 1, rank=rank, source=source, captures={"op": op}) for op in ops]
    return [*frames, *op_lines, context("hang-stack-marker", line, rank=rank, source=source, text=marker)]


def test_hang_stacks_differ_evaluation_against_backward_is_uneven_batches():
    matches = []
    for rank in range(3):
        matches += _stack(rank, f"rank{rank}.log", 40, ["main", "backward", "run_backward"], ops=("run_backward",))
    matches += _stack(3, "rank3.log", 40, ["main", "evaluate", "gather", "all_gather"], ops=("all_gather",))
    built = facts(matches)
    decided = rule("hang-stacks-differ").apply(built, start(built))
    assert decided.primary == "uneven-batches-hang" and decided.initiating.line.origin.rank == 3


def test_hang_stacks_differ_a_collective_only_one_rank_calls_is_a_mismatch():
    matches = _stack(0, "rank0.log", 40, ["train", "save_checkpoint", "_checkpoint_tag_validation"])
    matches += _stack(1, "rank1.log", 40, ["train", "backward", "all_reduce"], ops=("all_reduce",))
    built = facts(matches)
    decided = rule("hang-stacks-differ").apply(built, start(built))
    assert decided.primary == "collective-mismatch" and decided.initiating.line.origin.rank == 0


def test_external_stop_ended_a_hang_after_a_short_silence_when_one_rank_stopped_first():
    stop = hit("preempted-sigterm", 50, time=208.0, source="slurm.out")
    def lines(rank, saved=True):
        return [(1, 196.0, "epoch 0 step 7/8 loss 1.35"), (2, 198.0, "epoch 0 step 8/8 loss 1.34"),
                (3, 199.0, "saving checkpoint"), *([(4, 199.5, "checkpoint saved")] if saved else [])]
    streams = [StreamActivity(f"rank{rank}.log", rank, None, tuple(StreamLine(*line) for line in lines(rank, rank != 3)), False,
                              tuple(StreamLine(*line) for line in lines(rank)[:2])) for rank in range(4)]
    built = facts([stop], activity=streams)
    decided = rule("external-stop-ended-a-hang").apply(built, start(built))
    assert decided is not None and decided.roots == ()


def test_hang_silent_first_when_only_one_rank_logs_and_it_began_work_of_its_own():
    logger = StreamActivity("slurm.out", 0, None, (StreamLine(5, 35.0, "0: epoch 0 step 8/8 loss 1.35"),
                                                   StreamLine(6, 35.3, "0: rank 0: evaluating epoch 0 on the held-out set")),
                            False, (StreamLine(4, 34.0, "0: epoch 0 step 5/8 loss 1.37"), StreamLine(5, 35.0, "0: epoch 0 step 8/8 loss 1.35")))
    quiet = [StreamActivity("slurm.out", rank, None, (StreamLine(rank, 31.0, f"{rank}: rank {rank} shard has 128 samples"),)) for rank in (1, 2)]
    built = facts([], activity=[logger, *quiet])
    decided = rule("hang-silent-first").apply(built, Decision(hang="nothing was printed for 8 s"))
    assert decided.initiating.line.origin.rank == 0


def test_hang_silent_first_a_rank_that_is_not_the_logger_began_work_alone_and_nobody_printed_after():
    """Rank 0 logs the steps; rank 3, not the logger, was last seen starting an evaluation of its
    own; no rank printed anything after that (they waited in the epoch-end barrier): rank 3."""
    def quiet(rank, time=31.0):
        return StreamActivity("node.log", rank, None, (StreamLine(rank, time, f"epoch 0: rank {rank} shard has 128 samples -> 8 steps"),))
    logger = StreamActivity("node.log", 0, None, (StreamLine(10, 31.0, "epoch 0: rank 0 shard has 128 samples -> 8 steps"),
                                                  StreamLine(11, 35.0, "epoch 0 step 8/8 loss 1.35")),
                            False, (StreamLine(11, 35.0, "epoch 0 step 8/8 loss 1.35"),))
    evaluating = StreamActivity("node.log", 3, None, (StreamLine(13, 31.0, "epoch 0: rank 3 shard has 128 samples -> 8 steps"),
                                                      StreamLine(14, 35.1, "rank 3: evaluating epoch 0 on the held-out set")))
    hang = Decision(hang="nothing was printed for 8 s")
    decided = rule("hang-silent-first").apply(facts([], activity=[logger, quiet(1), quiet(2), evaluating, quiet(4)]), hang)
    assert decided is not None and decided.initiating.line.origin.rank == 3
    # a rank that printed after rank 3 began (its step went on): rank 3's evaluation is no proof
    went_on = StreamActivity("node.log", 4, None, (StreamLine(15, 31.0, "epoch 0: rank 4 shard has 128 samples -> 8 steps"),
                                                   StreamLine(16, 40.0, "rank 4: heartbeat ok")))
    decided = rule("hang-silent-first").apply(facts([], activity=[logger, quiet(1), quiet(2), evaluating, went_on]), hang)
    assert decided is None or decided.initiating.line.origin.rank != 3


def test_loopback_across_hosts_is_a_virtual_interface_fault():
    loopback = context("nccl-loopback-interface", 3, rank=0, captures={"interface": "lo", "address": "127.0.0.1"},
                       host="gpu-a", text="gpu-a:1:1 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>")
    built = facts([loopback, hit("user-code-exception", 9, rank=5, weight=0.5, host="gpu-b")],
                  identity=IdentityMap(named_hosts=("gpu-a", "gpu-b")))
    decided = rule("loopback-across-hosts").apply(built, start(built))
    assert [match.entry_id for match in decided.symptoms] == ["nccl-virtual-interface"]
    one_host = facts([loopback], identity=IdentityMap(named_hosts=("gpu-a",)))
    assert rule("loopback-across-hosts").apply(one_host, start(one_host)) is None


def test_outlived_by_progress_of_a_later_attempt_of_the_same_worker():
    crash = hit("user-code-exception", 15, source="logs/worker-0.previous.log", weight=0.5,
                text="ValueError: host not found: Name or service not known")
    restarted = StreamActivity("logs/worker-0.log", None, None, (StreamLine(40, None, "done"),), False,
                               (StreamLine(20, None, "epoch 1 step 100 loss 1.9"), StreamLine(30, None, "epoch 1 step 200 loss 1.7")))
    failed_before = StreamActivity("logs/worker-0.previous.log", None, None, (StreamLine(15, None, crash.line.text),))
    built = facts([crash], activity=[failed_before, restarted], single=True)
    decided = rule("outlived-by-progress").apply(built, start(built))
    assert decided.roots == ()


def test_crash_took_down_peers_makes_the_job_class_a_peer_crash():
    relations = Relations(core_of={"native-crash": "native-crash"})
    crash = hit("native-crash", 5, rank=2, source="console.log", text="Signal 11 (SIGSEGV) received by PID 7")
    built = build_facts([crash, timeout(9, 0), timeout(9, 1)], InputSummary(ranks=(0, 1, 2)), False, None, relations)
    decided = rule("crash-took-down-peers").apply(built, _decided(crash, built))
    assert decided.failure_class == "collective-timeout-peer-crash"
    alone = build_facts([crash], InputSummary(ranks=(2,)), False, None, relations)
    assert rule("crash-took-down-peers").apply(alone, _decided(crash, alone)) is None


def test_rules_command_lists_every_rule_in_order():
    from .conftest import run_cli

    listed = [line.split()[1] for line in run_cli("rules").stdout.decode().splitlines()]
    assert listed == [item.id for _stage, item in all_rules()]


def test_explained_by_another_a_symptom_can_explain_a_root():
    relations = Relations(explains={"nccl-ib-async-error": frozenset({"nccl-ib-timeout"})})
    port = hit("nccl-ib-async-error", 3, rank=0, role="symptom", weight=0.85, time=100.0, text="Got async event : port error")
    completion = hit("nccl-ib-timeout", 4, rank=0, weight=0.9, time=100.0, text="Got completion ... error 12")
    built = build_facts([port, completion], InputSummary(ranks=(0,)), False, None, relations)
    decided = rule("explained-by-another").apply(built, start(built))
    assert decided.roots == () and [m.entry_id for m in decided.symptoms] == ["nccl-ib-async-error"]


# how the job ended, who is who, what each rank did last -----------------------------------------

def test_job_finished_after_its_errors_is_healthy():
    oom = hit("cuda-oom", 10, source="train.log", role="symptom", text="CUDA out of memory. Tried to allocate 200.00 MiB")
    done = context("job-succeeded", 90, source="train.log", text="30 epochs completed in 1.392 hours.")
    progress = stream(None, [(50, None, "29/29 box_loss 0.05 100%| 420/420")], source="train.log")
    built = facts([oom, done], activity=[progress])
    decided = rule("job-finished").apply(built, start(built))
    assert decided.status == "healthy" and "recovered" in decided.because[-1].text
    later = hit("cuda-oom", 95, source="train.log", role="symptom")
    built = facts([oom, done, later], activity=[progress])
    assert rule("job-finished").apply(built, start(built)) is None  # something failed after it


def test_job_finished_is_not_a_recovery_when_the_failure_lasted_to_the_end():
    nan = hit("loss-nan", 48, source="slurm.out", role="symptom", text="0: epoch 4 step 100/100 loss nan acc 0.167")
    done = context("job-succeeded", 50, source="slurm.out", text="0: training finished: 100 steps in 4.7s")
    tail = stream(0, [(47, None, "0: epoch 4 step 95/100 loss nan"), (48, None, "0: epoch 4 step 100/100 loss nan acc 0.167")],
                  source="slurm.out")
    built = facts([nan, done], activity=[tail])
    assert rule("job-finished").apply(built, start(built)) is None


def test_job_finished_on_one_rank_does_not_order_another_ranks_untimed_failure_before_it():
    """A real torch 2.8 run: rank 3 alone all-reduced after training; its peers exited, and its
    traceback (no time of its own: it carries its line before's, 12 ms before rank 0's finish)
    ended its process. Nothing says the failure came before the finish."""
    lost = hit("collective-timeout-peer-crash", 30, rank=3, source="rank3.log", time=1000.691, inherited=True,
               role="collateral", text="[rank3]: RuntimeError: [pair.cc:535] Read error [127.0.0.1]:44176: Connection reset by peer")
    done = context("job-succeeded", 40, rank=0, source="rank0.log", time=1000.703, text="INFO train: training finished after 16 steps")
    ended = stream(3, [(5, 1000.691, "INFO train: rank 3: gathering final metrics from every rank"), (30, None, lost.line.text)])
    built = facts([lost, done], activity=[ended])
    assert rule("job-finished").apply(built, start(built)) is None
    # its own time: it came before the finish, which the run then reached
    timed = hit("collective-timeout-peer-crash", 30, rank=3, source="rank3.log", time=1000.691, role="collateral", text=lost.line.text)
    built = facts([timed, done], activity=[ended])
    assert rule("job-finished").apply(built, start(built)).status == "healthy"
    # or its process went on after it
    went_on = stream(3, [(30, None, lost.line.text), (31, 1000.695, "INFO train: epoch 2 step 1/8 loss 1.2")])
    built = facts([lost, done], activity=[went_on])
    assert rule("job-finished").apply(built, start(built)).status == "healthy"


def test_job_finished_then_a_warning_that_the_store_went_away_is_teardown():
    """A real two-node torchrun run (the project's CI): node 0's agent, shutting the rendezvous down
    after `training finished`, warned that the store (node 1's agent, gone) closed the connection.
    Every process exited 0. An error after the finish, or a warning of anything but a lost peer,
    still says the job did not end there."""
    done = context("job-succeeded", 17, source="node0.log", time=1000.154, text="[trainer0]:2026-12-06 12:01:05,154 INFO train: training finished after 16 steps")
    warned = hit("tcpstore-timeout", 18, source="node0.log", time=1000.941, role="collateral", text=(
        "[W1206 12:01:05.941173814 TCPStore.cpp:115] [c10d] recvVector failed on SocketImpl(fd=3): Failed to recv, "
        "got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?"))
    built = facts([done, warned])
    assert rule("job-finished").apply(built, start(built)).status == "healthy"
    logged = replace(warned, line=replace(warned.line, text="[trainer0]:2026-12-06 12:01:05,941 WARNING store: connection closed"))
    built = facts([done, logged])
    assert rule("job-finished").apply(built, start(built)).status == "healthy"
    raised = replace(warned, line=replace(warned.line, text="[rank1]: RuntimeError: [pair.cc:535] Connection closed by peer [127.0.0.1]:9"))
    built = facts([done, raised])
    assert rule("job-finished").apply(built, start(built)) is None  # an error, not a warning
    logged_error = replace(warned, line=replace(warned.line, text="[E1206 12:01:05.941173814 TCPStore.cpp:115] recvVector failed"))
    built = facts([done, logged_error])
    assert rule("job-finished").apply(built, start(built)) is None
    own = replace(warned, signature=replace(warned.signature, role="root"))
    built = facts([done, own])
    assert rule("job-finished").apply(built, start(built)) is None  # a warning of a failure of its own


def test_job_finished_in_another_run_kept_beside_the_failed_one_is_no_recovery():
    """A folder with the failed run's console and a later run's (or sacct's account of another job):
    the other run's finish does not speak for a failure whose file ended before that run began."""
    oom = hit("cuda-oom", 10, source="console.log", time=1000.0, role="symptom")
    done = context("job-succeeded", 48, source="rerun/console.log", time=2000.0, text="training finished after 16 steps")
    sacct = context("job-succeeded", 3, source="rerun/sacct.txt", text="7712034.0     COMPLETED        1   gpu-c07   02:57:30      0:0")

    def summary(spans):
        return InputSummary(files=("console.log", "rerun/console.log", "rerun/slurm-7712034.out"), spans=spans)

    apart = (("console.log", 990.0, 1010.0), ("rerun/console.log", 1900.0, 2000.0), ("rerun/slurm-7712034.out", 1900.0, 2000.0))
    for finish in (done, sacct):
        matches = [oom, finish]
        built = build_facts(matches, summary(apart), False, None, RELATIONS, (), build_identity(matches))
        assert rule("job-finished").apply(built, start(built)) is None
    together = (("console.log", 990.0, 1010.0), ("rerun/console.log", 900.0, 2000.0), ("rerun/slurm-7712034.out", 900.0, 2000.0))
    for finish in (done, sacct):
        matches = [oom, finish]
        built = build_facts(matches, summary(together), False, None, RELATIONS, (), build_identity(matches))
        assert rule("job-finished").apply(built, start(built)).status == "healthy"
    # torchrun's restart: the failed attempt's file and the next attempt's do not overlap, but the
    # launcher's log spans both: one run, and its finish speaks for the failure it restarted from
    bridged = (*apart, ("launcher.log", 980.0, 2010.0))
    summary_bridged = InputSummary(files=(*summary(apart).files, "launcher.log"), spans=bridged)
    built = build_facts([oom, done], summary_bridged, False, None, RELATIONS, (), build_identity([oom, done]))
    assert rule("job-finished").apply(built, start(built)).status == "healthy"


def test_job_finished_of_a_rerun_in_the_same_folder_end_to_end():
    """The folder as engineers keep it: the failed run's console and the rerun's, which finished."""
    from firstfault.pipeline import diagnose_texts

    failed = ("[default1]:2026-12-02 18:22:30,101 INFO train: epoch 0 step 3/8 loss 1.3\n"
              "[default1]:[rank1]: OSError: [Errno 28] No space left on device\n"
              "E1202 18:22:34.300000 411 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
              "local_rank: 1 (pid: 433) of binary: /usr/bin/python3\n")
    rerun = ("[default0]:2026-12-02 18:23:02,500 INFO train: epoch 0 step 1/8 loss 1.4\n"
             "[default0]:2026-12-02 18:23:07,853 INFO train: training finished after 16 steps\n")
    diagnosis = diagnose_texts([("console.log", failed), ("rerun/console.log", rerun)])
    assert diagnosis.status == "failure" and diagnosis.primary.failure_id == "disk-full"
    assert diagnosis.initiating.rank == 1


def test_finished_after_it_drops_the_errors_a_run_finished_after_in_its_own_file():
    """A previous run kept beside the failed one caught an ImportError and finished: its error is
    what it recovered from, not a rival to the failed run's OOM; a finish with `loss nan` to the
    last step recovered from nothing."""
    caught = hit("python-import-error", 5, source="previous/console.log", role="root", weight=0.7, time=100.0)
    done = context("job-succeeded", 48, source="previous/console.log", time=160.0, text="training finished after 16 steps")
    oom = hit("cuda-oom", 30, rank=1, source="console.log", role="root", time=500.0)
    built = facts([caught, done, oom])
    decided = rule("finished-after-it").apply(built, start(built))
    assert [i.failure_id for i in decided.roots] == ["cuda-oom"]
    nan = hit("loss-nan", 47, source="previous/console.log", role="symptom", text="0: epoch 4 step 100/100 loss nan")
    tail = stream(0, [(47, 150.0, "0: epoch 4 step 100/100 loss nan")], source="previous/console.log")
    built = facts([nan, done, oom], activity=[tail])
    assert rule("finished-after-it").apply(built, start(built)) is None
    # one console: rank 1 failed, rank 0 printed its finish, then the launcher reported rank 1's
    # exit: that file did not finish, and rank 1's error stays
    crash = hit("disk-full", 20, rank=1, source="console.log", role="root")
    finish = context("job-succeeded", 30, rank=0, source="console.log", text="[default0]: training finished after 16 steps")
    report = context("launcher-failed", 40, source="console.log", captures={"code": "1"},
                     text="failed (exitcode: 1) local_rank: 1 (pid: 433) of binary: /usr/bin/python3")
    built = facts([crash, finish, report])
    assert rule("finished-after-it").apply(built, start(built)) is None


def test_restarted_and_went_on_drops_the_errors_before_the_restart():
    crash = hit("nccl-remote-error", 306, rank=0, source="agent.log", role="symptom")
    restart = context("job-restarted", 358, source="agent.log",
                      text="Worker group FAILED. 3/3 attempts left; will restart worker group")
    after = stream(None, [(400, None, "rank0 | step 12050 | loss 2.29"), (700, None, "rank0 | step 30000 | loss 2.10")],
                   source="agent.log")
    built = facts([crash, restart], activity=[after])
    decided = rule("restarted-and-went-on").apply(built, start(built))
    assert decided.symptoms == () and decided.restart is restart
    stalled = facts([crash, restart], activity=[stream(None, [(360, None, "Rendezvous'ing worker group")], source="agent.log")])
    assert rule("restarted-and-went-on").apply(stalled, start(stalled)) is None


def test_waiting_for_a_failed_rank_drops_the_wait():
    error = hit("user-code-exception", 37, rank=0, source="mpirun.log", weight=0.5, text="KeyError: 'val_top5'")
    stall = hit("collective-mismatch", 38, rank=4, source="mpirun.log", weight=0.7, text="One or more tensors were submitted")
    missing = context("missing-ranks", 40, rank=4, source="mpirun.log", captures={"ranks": "0"})
    built = facts([error, stall, missing])
    decided = rule("waiting-for-a-failed-rank").apply(built, start(built))
    assert [incident.failure_id for incident in decided.roots] == ["user-code-exception"]
    alone = facts([stall, missing])
    assert rule("waiting-for-a-failed-rank").apply(alone, start(alone)) is None


def test_hang_step_behind_with_the_epoch_ended_is_uneven_batches():
    def stepping(rank):
        line = StreamLine(10 + rank, 100.0 + rank, f"Rank {rank} step {75 if rank == 5 else 76} processed 7 samples in 0.71s")
        return StreamActivity("run.log", rank, None, (line,), False, (line,))

    ranks = [stepping(rank) for rank in range(6)]
    end = stream(None, [(40, 110.0, "Maximum number of steps reached")], source="run.log", unprefixed=True)
    built = facts([], activity=[*ranks, end])
    decided = rule("hang-step-behind").apply(built, Decision(hang="nothing was printed for 29 min"))
    assert decided.primary == "uneven-batches-hang" and decided.initiating.line.origin.rank == 5
    straggling = facts([], activity=ranks)
    decided = rule("hang-step-behind").apply(straggling, Decision(hang="nothing was printed for 29 min"))
    assert decided.primary == "collective-timeout-straggler"


def test_hang_first_collective_on_one_node_is_the_p2p_path():
    first = [timeout(5, rank, time=1800.0 + rank, seq="1", op="ALLGATHER") for rank in range(4)]
    built = facts(first, ranks=range(4))
    decided = rule("hang-first-collective").apply(built, start(built))
    assert decided.primary == "nccl-p2p-failure"
    later = [timeout(5, rank, time=1800.0, seq="14411", op="ALLREDUCE") for rank in range(4)]
    built = facts(later, ranks=range(4))
    assert rule("hang-first-collective").apply(built, start(built)) is None


def test_rank_from_device_index():
    oom = hit("cuda-oom", 24, text="CUDA out of memory. Tried to allocate 1.02 GiB (GPU 2; 10.92 GiB total capacity)")
    built = facts([oom], ranks=range(4))
    assert rule("rank-from-device-index").apply(built, _decided(oom, built)).rank == 2
    alone = facts([oom], ranks=(0,))
    assert rule("rank-from-device-index").apply(alone, _decided(oom, alone)) is None


def test_rank_complement_names_the_one_rank_that_did_not_wait():
    error = hit("user-code-exception", 32, source="node1.log", text="ValueError: Image features and image tokens do not match")
    waits = [timeout(40, rank, time=1000.0 + rank, seq="118", op="ALLGATHER") for rank in range(16) if rank != 13]
    built = facts([error, *waits], ranks=[rank for rank in range(16) if rank != 13],
                  identity=IdentityMap(world=WorldSize(16, "--num_processes 16")))
    assert rule("rank-complement").apply(built, _decided(error, built)).rank == 13
    two_missing = facts([error, *waits[2:]], identity=IdentityMap(world=WorldSize(16, "--num_processes 16")))
    assert rule("rank-complement").apply(two_missing, _decided(error, two_missing)) is None


def test_rank_complement_of_a_two_rank_job_needs_its_size_declared():
    """DeepSpeed's launcher reports `exits with return code = -9` for a rank it does not name
    truly; rank 1 lost its peer. In a job declared as 2 ranks the other is rank 0; with the size
    not declared, rank 0 could be one of many ranks that never printed."""
    killed = hit("host-oom-killed", 77, source="console.log", role="symptom", weight=0.6,
                 text="[ERROR] [launch.py:259:sigkill_handler] [...] exits with return code = -9")
    lost = hit("collective-timeout-peer-crash", 74, rank=1, source="console.log", role="collateral", weight=0.45,
               text="[rank1]: RuntimeError: [pair.cc:537] Read error [127.0.0.1]:33442: Connection reset by peer")
    quiet = stream(0, [(70, 100.0, "2026-12-06 04:56:16,225 INFO train: rank 0 step 4 loss 1.3795")], source="console.log")
    declared = facts([killed, lost], ranks=(0, 1), activity=[quiet], identity=IdentityMap(world=WorldSize(2, "dist_world_size=2")))
    assert rule("rank-complement").apply(declared, _decided(killed, declared)).rank == 0
    undeclared = facts([killed, lost], ranks=(0, 1), activity=[quiet])
    assert rule("rank-complement").apply(undeclared, _decided(killed, undeclared)) is None


def test_rank_waited_for_names_the_rank_whose_key_never_came():
    """Rank 1 gave up on rank 0's ncclUniqueId while rank 0 tokenized: under a straggler verdict
    rank 0 started it, pointed at by its own last line; rank 1's own failure stays its own."""
    text = ("RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
            "key-value store by key '0', but store->get('0') got error: Socket Timeout")
    wait = hit("tcpstore-timeout", 14, rank=1, source="console.log", role="symptom", weight=0.55, text=text,
               captures={"id_root": "0"})
    busy = stream(0, [(9, 10.0, "Running tokenizer on dataset: 41%")], source="console.log")
    relations = Relations(core_of={"tcpstore-timeout": "collective-timeout-straggler"})
    built = build_facts([wait], InputSummary(ranks=(0, 1)), False, None, relations, (busy,), IdentityMap())
    decided = rule("rank-waited-for").apply(built, _decided(wait, built))
    assert decided.initiating.line.origin.rank == 0 and "tokenizer" in decided.initiating.line.text
    other = Relations(core_of={"tcpstore-timeout": "tcpstore-timeout"})
    own = build_facts([wait], InputSummary(ranks=(0, 1)), False, None, other, (busy,), IdentityMap())
    assert rule("rank-waited-for").apply(own, _decided(wait, own)) is None


def test_rank_complement_from_a_gpu_snapshot_taken_during_the_hang():
    error = hit("user-code-exception", 116, source="console.log", text="FileNotFoundError: [Errno 2] No such file or directory")
    rows = [context("device-smi-process", 30 + gpu, source="nvidia-smi.txt", captures={"device": str(gpu), "pid": str(41120 + gpu)})
            for gpu in range(8) if gpu != 6]
    declared = [context("rank-declared", rank + 1, source="console.log", captures={"rank": str(rank)}) for rank in range(8)]
    built = facts([error, *rows, *declared])
    decided = rule("rank-complement").apply(built, _decided(error, built))
    assert decided.rank == 6


def test_rank_from_device_event_names_the_process_the_xid_names():
    cudnn = hit("cudnn-status-error", 165, source="console.log", text="RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR")
    xid = context("device-xid-pid", 10, source="dmesg.txt", captures={"bus": "db", "pid": "13641"})
    old = context("device-xid-pid", 3, source="dmesg.txt", captures={"bus": "3d", "pid": "35521"})
    process = Link((pid_key(13641), rank_key(7)), how="NCCL's init line names the rank", where=("console.log", 93))
    relations = Relations(categories={"cudnn-status-error": "device"})
    built = build_facts([cudnn, xid, old], InputSummary(ranks=tuple(range(8))), False, None, relations, (),
                        IdentityMap([process]))
    assert rule("rank-from-device-event").apply(built, _decided(cudnn, built)).rank == 7
