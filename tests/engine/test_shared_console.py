"""A console the ranks share without a launcher prefix (torchrun without --tee, a job's output
piped to one file): torch prefixes only its tracebacks (`[rankN]:`), and the workers' own messages
name their rank in their first words. Each such message is its rank's (what each rank did last)."""
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
