"""torchrun's failure table is often all a log keeps of the worker that failed (its own output
went to a file not given, or a paste cut it): the record under `Root Cause (first observed
failure)` names where the failure started, even when nothing says what it was."""
from __future__ import annotations

from pathlib import Path

from firstfault.pipeline import diagnose_texts

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
    text = table_only().replace("rank      : 1 (local_rank: 1)\n  exitcode  : -15 (pid: 5560)  (SIGTERM)",
                                "rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 5560)")
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
