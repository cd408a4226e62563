"""Consoles the ranks share: without a launcher prefix (torchrun without --tee, a job's output
piped to one file): torch prefixes only its tracebacks (`[rankN]:`), and the workers' own messages
name their rank in their first words. Each such message is its rank's (what each rank did last).
And pdsh's console of several nodes, where each node's local ranks are global through that node's
own pairs."""
from __future__ import annotations

from firstfault.pipeline import diagnose_texts


def _console() -> str:
    """Three ranks log steps; rank 2 stops after step 11, ranks 0 and 1 log step 12; then every
    rank's receive times out (torch's `[rankN]:` on each traceback line)."""
    lines = [f"2026-12-05 10:00:{step:02d},{rank}00 INFO train: rank {rank}: step {step} loss 2.1"
             for step in (10, 11) for rank in range(3)]
    lines += [f"2026-12-05 10:00:12,{rank}00 INFO train: rank {rank}: step 12 loss 2.0" for rank in range(2)]
    for rank in range(3):
        lines += [f"[rank{rank}]: Traceback (most recent call last):",
                  f'[rank{rank}]:   File "train.py", line 9, in <module>',
                  f"[rank{rank}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                  "Timed out waiting 1800000ms for recv operation to complete"]
    return "\n".join(lines) + "\n"


def test_messages_that_name_their_rank_are_that_ranks_in_a_console_of_tracebacks():
    diagnosis = diagnose_texts([("console.log", _console())])
    assert {row.rank: row.last_step for row in diagnosis.ranks} == {0: 12, 1: 12, 2: 11}
    assert diagnosis.primary.failure_id == "collective-timeout-straggler"
    assert diagnosis.initiating.rank == 2


def _pdsh_console() -> str:
    """pdsh's console of two nodes of two ranks (`gpu-node-1: [default0]:`): rank 2 (node 1's local
    rank 0) stops after step 11; the other three time out, their tracebacks pairing local and global
    ranks (`[default1]:[rank3]:`) on node 1 as on node 0."""
    def line(node, local, text, paired=False):
        return f"gpu-node-{node}: [default{local}]:" + (f"[rank{2 * node + local}]:" if paired else "") + text
    lines = [line(node, local, f"2026-12-05 10:00:{step:02d},{node}{local}0 INFO train: step {step} loss 2.1")
             for step in (10, 11, 12) for node in range(2) for local in range(2) if (node, local, step) != (1, 0, 12)]
    for node, local in ((0, 0), (0, 1), (1, 1)):
        lines += [line(node, local, "Traceback (most recent call last):", True),
                  line(node, local, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                                    "Timed out waiting 1800000ms for recv operation to complete", True)]
    return "\n".join(lines) + "\n"


def test_each_nodes_local_ranks_are_global_through_that_nodes_own_pairs():
    """Node 1's `[default1]:[rank3]:` says its local ranks start at 2 (the file's pairs, most of
    them node 0's, would say 0): its silent local rank 0 is rank 2."""
    diagnosis = diagnose_texts([("pdsh.log", _pdsh_console())])
    assert {row.rank: row.last_step for row in diagnosis.ranks} == {0: 12, 1: 12, 2: 11, 3: 12}
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, "gpu-node-1")


def test_a_nodes_local_rank_with_no_pair_of_its_own_is_no_global_rank():
    """Node 1's local rank 1 raises, in a torch that prints no `[rankN]:` there; only node 0's
    tracebacks pair its ranks: nothing says where node 1's ranks start, so its local rank 1 is not
    taken for rank 1 (node 0's); the host is known."""
    lines = [line for line in _pdsh_console().splitlines() if not line.startswith("gpu-node-1: [default1]:[rank3]")]
    lines.insert(len(lines) - 4, "gpu-node-1: [default1]:ValueError: record 4411 has no label")
    diagnosis = diagnose_texts([("pdsh.log", "\n".join(lines) + "\n")])
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (None, "gpu-node-1")
