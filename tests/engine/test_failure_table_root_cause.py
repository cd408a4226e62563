"""torchrun's failure table is often all a log keeps of the worker that failed (its own output
went to a file not given, or a paste cut it): the record under `Root Cause (first observed
failure)` names where the failure started, even when nothing says what it was."""
from __future__ import annotations

from pathlib import Path

from firstfault.pipeline import diagnose_paths, diagnose_texts

CONSOLE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "exc-index-error-tee-ws7-r5" / "logs" / "console.log"


def table_only() -> str:
    """The real run's console from its launcher's failure table on (rank 5's IndexError above it)."""
    lines = CONSOLE.read_text(encoding="utf-8").split("\n")
    start = next(index for index, line in enumerate(lines) if line.startswith("torch.distributed.elastic.multiprocessing.errors.ChildFailedError"))
    return "\n".join(lines[start:])


def test_the_root_cause_record_names_the_rank_when_nothing_says_what_failed():
    text = table_only()
    assert "IndexError" not in text and "rank      : 5 (local_rank: 5)" in text
    diagnosis = diagnose_texts([("console.log", text)])
    assert diagnosis.status == "unknown" and diagnosis.primary is None  # what failed, the table does not say
    assert diagnosis.initiating.rank == 5
    assert diagnosis.initiating.text.strip().startswith("exitcode  : 1 (pid: ")
    assert text.split("\n")[diagnosis.initiating.line - 1].strip().startswith("exitcode  : 1")


def test_a_root_cause_the_launcher_stopped_itself_names_no_rank():
    """A record of the launcher's own SIGTERM (the job was stopped from outside) is no first failure."""
    text = table_only().replace("exitcode  : 1 (pid: 5564) ", "exitcode  : -15 (pid: 5564) ")
    assert text != table_only()
    diagnosis = diagnose_texts([("console.log", text)])
    assert diagnosis.initiating is None or diagnosis.initiating.rank != 5


def test_the_root_cause_is_the_record_under_its_header_not_another_failure_listed_before_it():
    """Rank 1 failed of its own too, a second later (in the same second, it would be a tie: below)."""
    text = table_only().replace("time      : 2026-12-05_11:19:26\n  host      : localhost\n  rank      : 1 (local_rank: 1)\n"
                                "  exitcode  : -15 (pid: 5560)  (SIGTERM)",
                                "time      : 2026-12-05_11:19:27\n  host      : localhost\n  rank      : 1 (local_rank: 1)\n"
                                "  exitcode  : 1 (pid: 5560)")
    assert text != table_only()
    diagnosis = diagnose_texts([("console.log", text)])
    assert diagnosis.initiating.rank == 5


def test_asked_why_that_rank_the_answer_cites_the_root_cause_record():
    from firstfault.ask import answer, intent_of
    from firstfault.render.contract import to_contract

    text = table_only()
    contract = to_contract(diagnose_texts([("console.log", text)]))
    reply = answer(intent_of("why rank 5?"), contract)
    root_line = contract["initiating"]["line"]
    assert text.split("\n")[root_line - 1].strip().startswith("exitcode  : 1")
    assert any(f"at console.log:{root_line}." in line for line in reply.lines), reply.lines


REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def test_a_root_cause_tied_in_its_second_with_other_failures_names_no_rank():
    """torch 2.0 ran this job (its agent polled every 5 s): rank 1 raised, the others lost it,
    and all four exits are stamped 07:17:12 with no error file, so the table's root cause is
    rank 0 only because it is the lowest rank listed (`get_first_failure`: min over whole seconds)."""
    console = REAL / "autograd-inplace-tee-ws4-r1-torch20" / "logs" / "console.log"
    lines = console.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("torch.distributed.elastic.multiprocessing.errors.ChildFailedError"))
    text = "\n".join(lines[start:])
    assert text.count("time      : 2026-12-06_07:17:12") == 4 and "rank      : 0 (local_rank: 0)" in text
    diagnosis = diagnose_texts([("console.log", text)])
    assert diagnosis.initiating is None or diagnosis.initiating.rank is None
    tie = [step for step in diagnosis.because if step.rule == "rank-launcher-tie"]
    assert tie and "ranks 0, 1, 2, 3" in tie[0].text
    # each exit-code row is shown once among the likely error lines (it is both the entry's row and a failure sign)
    shown = [(item.source, item.line) for item in diagnosis.error_lines]
    assert len(shown) == len(set(shown)) and any(text.split("\n")[line - 1].startswith("  exitcode") for _, line in shown)

    # one second apart, the same table does tell: the root cause is first
    later = text.replace("time      : 2026-12-06_07:17:12\n  host      : localhost\n  rank      : 2",
                         "time      : 2026-12-06_07:17:13\n  host      : localhost\n  rank      : 2")
    for rank in (1, 3):
        later = later.replace(f"time      : 2026-12-06_07:17:12\n  host      : localhost\n  rank      : {rank}",
                              f"time      : 2026-12-06_07:17:13\n  host      : localhost\n  rank      : {rank}")
    assert later.count("07:17:13") == 3
    assert diagnose_texts([("console.log", later)]).initiating.rank == 0


def last_lines(path: Path, count: int = 50) -> str:
    """A real log's last `count` non-empty lines: the end a thread quotes."""
    return "\n".join([line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()][-count:])


def test_tied_ranks_whose_own_lines_lost_a_peer_leave_the_one_that_did_not():
    """Both nodes' ends of a two-node torch 2.3 job: on node 1, ranks 2 and 3 exited in the same
    second; rank 3's line says it lost a peer, rank 2 (whose DataLoader worker was killed)
    printed nothing in these lines. Node 1's agent reported its failure first."""
    logs = REAL / "dataloader-worker-killed-twonode-ws4-r2-torch23" / "logs"
    texts = [(name, last_lines(logs / name)) for name in ("node0.log", "node1.log")]
    assert "[rank2]" not in texts[1][1] and "[rank3]: RuntimeError" in texts[1][1] and "Connection closed by peer" in texts[1][1]
    diagnosis = diagnose_texts(texts)
    assert diagnosis.initiating is not None and diagnosis.initiating.rank == 2
    assert not any(step.rule == "rank-launcher-tie" for step in diagnosis.because)


def test_a_tie_on_one_host_still_names_the_host():
    """Every rank of a second node failed alike in one second: no rank started it, but its host did."""
    records = []
    for index, rank in enumerate(range(8, 12)):
        records.append(f"[{rank}]:\n  time      : 2026-01-05_10:00:07\n  host      : gpu-b07\n  rank      : {rank} (local_rank: {index})\n"
                       f"  exitcode  : 1 (pid: {7712 + index})\n  error_file: <N/A>\n"
                       "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    text = "\n".join(["RuntimeError: Error while deserializing header: HeaderTooLarge",
                      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60,
                      "train.py FAILED", "-" * 60, "Failures:", *records[1:], "-" * 60,
                      "Root Cause (first observed failure):", records[0], "=" * 60])
    node0 = "gpu-b03:4410:4410 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>"  # two hosts in view
    diagnosis = diagnose_texts([("node0.log", node0), ("node1.log", text)])
    assert diagnosis.initiating is None or diagnosis.initiating.rank is None
    assert diagnosis.initiating is not None and diagnosis.initiating.host == "gpu-b07", diagnosis.because


def _table(host: str, rows: list[tuple[int, int, str, str]]) -> str:
    """A failure table of one agent; rows (rank, local rank, time, exit code), the last its root cause."""
    records = [f"[{index}]:\n  time      : 2026-01-05_{time}\n  host      : {host}\n  rank      : {rank} (local_rank: {local})\n"
               f"  exitcode  : {code} (pid: {7000 + rank})\n  error_file: <N/A>\n"
               "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
               for index, (rank, local, time, code) in enumerate(rows)]
    return "\n".join(["AssertionError: Torch not compiled with CUDA enabled",
                      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60,
                      "train.py FAILED", "-" * 60, "Failures:", *records[:-1], "-" * 60,
                      "Root Cause (first observed failure):", records[-1], "=" * 60])


def test_failures_of_one_second_tie_across_the_nodes_tables():
    """Each agent of a two-node job prints its own table (seen in real runs on two named hosts):
    node 0's says rank 0 failed at 10:00:07 (rank 1 it stopped), node 1's ties ranks 2 and 3 in
    that second. The first failure is any of ranks 0, 2 and 3, on either host: neither is named."""
    node0 = _table("gpu-a100-017", [(1, 1, "10:00:07", "-15"), (0, 0, "10:00:07", "1")])
    node1 = _table("ip-10-0-3-17", [(3, 1, "10:00:07", "1"), (2, 0, "10:00:07", "1")])
    diagnosis = diagnose_texts([("node0.log", node0), ("node1.log", node1)])
    assert diagnosis.initiating is None or (diagnosis.initiating.rank is None and diagnosis.initiating.host is None), \
        diagnosis.because
    tie = [step for step in diagnosis.because if step.rule == "rank-launcher-tie"]
    assert tie and "ranks 0, 2, 3" in tie[0].text, diagnosis.because


def test_an_error_quoted_in_a_failure_table_record_is_that_record_s_rank():
    """The end of a real two-node run on named hosts (`@record`): rank 0's own lines are cut, and
    the error is left only in its record's `traceback :` quote, on node 0's host. Node 1's agent
    reported its own worker (rank 1, which lost rank 0) a second later: it is not the first."""
    logs = REAL / "checkpoint-weights-only-twonode-ws2-r0-hosts" / "logs"
    texts = [(name, last_lines(logs / name)) for name in ("node0.log", "node1.log")]
    assert "[rank0]" not in texts[0][1] and "  _pickle.UnpicklingError: Weights only load failed" in texts[0][1]
    diagnosis = diagnose_texts(texts)
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (0, "compute-2-11"), diagnosis.because
    assert any(step.rule == "rank-from-table-record" for step in diagnosis.because)
    # a record of a signal death says how its worker died, not that it started the failure
    killed = texts[0][1].replace("exitcode  : 1 (pid:", "exitcode  : -6 (pid:")
    diagnosis = diagnose_texts([("node0.log", killed), texts[1]])
    assert not any(step.rule == "rank-from-table-record" for step in diagnosis.because)


def test_a_tied_record_that_quotes_a_lost_peer_did_not_start_it():
    """A real six-rank run on named hosts, its ends as quoted: the two agents' tables tie node 0's
    rank 0 and node 1's rank 5 (a KeyError), both exit 1 at 12:43:23; rank 0's record quotes that
    it lost its Gloo peer, so rank 5 is the first, on node 1's host."""
    logs = REAL / "exc-missing-key-twonode-ws6-r5-hosts" / "logs"
    texts = [(name, last_lines(logs / name)) for name in ("node0.log", "node1.log")]
    diagnosis = diagnose_texts(texts)
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (5, "trn-pool-c2"), diagnosis.because


def test_a_node_s_file_name_does_not_number_its_ranks_when_its_table_does():
    """A real two-node run under torch 2.9 (c10d rendezvous, which numbers nodes in the order they
    joined and ignores --node_rank): `node1.log` ran rank 0, as its failure table says, and the OOM
    killer's SIGKILL of its pid is rank 0's, on node 1's host."""
    logs = REAL / "oom-killer-twonode-ws2-r0-hosts-torch29-py313" / "logs"
    assert "rank      : 0 (local_rank: 0)" in (logs / "node1.log").read_text(encoding="utf-8")
    diagnosis = diagnose_paths([str(logs)])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (0, "ip-10-0-3-17"), diagnosis.because
    hosts = {row.rank: row.host for row in diagnosis.ranks}
    assert hosts == {0: "ip-10-0-3-17", 1: "node0157"}


def test_a_name_s_node_number_is_void_once_a_table_contradicts_it_and_a_full_host_is_not_the_other_node_s():
    """A real two-node run under torch 2.8: the scheduler's SIGTERM reached node 1's agent, whose
    worker (rank 0: the rendezvous numbered node 0 second) handled it; node 0's table says it ran
    rank 1 on node0157. So `node1.log` is not ranks 1..: its lines are not rank 1's, and node0157,
    the one host named, is not theirs (node 1's agent printed no table, and no line names its host)."""
    logs = REAL / "sigterm-handled-twonode-ws2-r0-hosts-torch28" / "logs"
    assert "rank      : 1 (local_rank: 0)" in (logs / "node0.log").read_text(encoding="utf-8")
    diagnosis = diagnose_paths([str(logs)])
    assert diagnosis.initiating.source.endswith("node1.log")
    assert diagnosis.initiating.rank in (None, 0) and diagnosis.initiating.host is None, diagnosis.because
