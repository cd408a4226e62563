"""A launcher's own errors before it started its workers are not where a failure started when it
then started them: torchrun starts workers only once its rendezvous is complete. Seen in real runs
of torch 2.1 and 2.4, where a second agent on the rendezvous host logs that the store's port is
taken, joins as a client, and the job trains on (tests/fixtures/real, `*-twonode-*-torch2*`)."""
from __future__ import annotations

from firstfault.ingest.sources import InputFile
from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_texts, scanner_for
from firstfault.watch.incremental import IncrementalScan

AGENT = """WARNING:__main__:
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
*****************************************
[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29511 (errno: 98 - Address already in use).
[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29511 (errno: 98 - Address already in use).
[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.
"""
WORKERS = """[trainer0]:2026-12-06 06:52:15,547 INFO train: rank 2/4 (local rank 0) joined the process group
[trainer1]:2026-12-06 06:52:15,550 INFO train: rank 3/4 (local rank 1) joined the process group
[trainer0]:2026-12-06 06:52:16,209 INFO train: epoch 0 step 1/8 loss 1.39
[trainer1]:Traceback (most recent call last):
[trainer1]:  File "/srv/job/train.py", line 390, in train
[trainer1]:    labels = torch.tensor([classes[int(label)] for label in labels])
[trainer1]:IndexError: list index out of range
"""
FIRST_WORKER_LINE = AGENT.count("\n") + 1


def diagnosis_of(text: str):
    return diagnose_texts([("node1.log", text)], kb=load_knowledge_base())


def test_a_launcher_error_before_its_workers_started_is_not_the_first_fault():
    diagnosis = diagnosis_of(AGENT + WORKERS)
    assert diagnosis.inputs.launched == (("node1.log", FIRST_WORKER_LINE),)
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert diagnosis.initiating.rank == 3
    assert any(because.rule == "launcher-went-on" for because in diagnosis.because)


def test_the_same_error_with_no_workers_after_it_is_the_first_fault():
    raised = "RuntimeError: The server socket has failed to listen on any local network address.\n"
    diagnosis = diagnosis_of(AGENT + raised)
    assert diagnosis.inputs.launched == ()
    assert diagnosis.primary.failure_id == "port-in-use"


def test_torchs_own_rank_prefix_says_nothing_of_a_launcher():
    """`[rank1]:` is printed by torch in any launcher's workers (a Lightning console prefixes
    only the other ranks' tracebacks): it does not show that a launcher's rendezvous completed."""
    own = WORKERS.replace("[trainer0]:", "").replace("[trainer1]:", "[rank1]:")
    diagnosis = diagnosis_of(AGENT + own)
    assert diagnosis.inputs.launched == ()
    assert diagnosis.primary.failure_id == "port-in-use"


def test_a_console_fed_line_by_line_finds_the_same_first_worker_line():
    scanner = scanner_for(load_knowledge_base())
    whole = scanner.scan(InputFile(display="node1.log", relative="node1.log", content=(AGENT + WORKERS).encode()))
    growing = IncrementalScan(scanner_for(load_knowledge_base()), InputFile(display="node1.log", relative="node1.log"))
    for line in (AGENT + WORKERS).encode().splitlines(keepends=True):
        growing.feed(line)
    assert whole.first_launched == growing.scan.first_launched == FIRST_WORKER_LINE


def test_the_first_worker_line_is_found_past_a_long_preamble():
    """The agent may print a lot before its workers start (NCCL or rendezvous debug lines): the
    first worker line is found wherever it is in the block, not only among its first lines."""
    preamble = "".join(f"I1206 06:52:{index % 60:02d}.000000 140 torch/distributed/elastic/rendezvous/api.py:1] "
                       f"rendezvous round {index} keep-alive ok\n" for index in range(1500))
    diagnosis = diagnosis_of(preamble + AGENT + WORKERS)
    assert len(preamble) > 100_000
    assert diagnosis.inputs.launched == (("node1.log", 1500 + FIRST_WORKER_LINE),)
    assert diagnosis.primary.failure_id == "user-code-exception"


def test_a_run_that_got_past_its_launchers_bind_errors_and_finished_is_healthy():
    """torch 2.2 with TORCH_CPP_LOG_LEVEL=INFO (a real run): the agent logs the bind failure and its
    `[E socket.cpp:500] ... failed to listen` at error level, connects as a client, and the job
    trains to the end. Neither line is a failure sign the run did not go past."""
    trained = "".join(f"[trainer0]:2026-12-06 07:40:27,{500 + step:03d} INFO train: epoch 0 step {step}/8 loss 1.3{step} acc 0.3\n"
                      for step in range(1, 9))
    diagnosis = diagnosis_of(AGENT + WORKERS.split("[trainer1]:Traceback")[0] + trained)
    assert diagnosis.status == "healthy"


def test_what_the_launcher_went_past_is_reported_apart_from_the_collateral():
    """The bind errors neither started the failure nor followed from it: the contract lists them
    under `went_past`, not `collateral`, and every report says so."""
    from firstfault.render.contract import to_contract
    from firstfault.render.markdown import render as render_markdown
    from firstfault.render.terminal import TerminalReport

    diagnosis = diagnosis_of(AGENT + WORKERS)
    contract = to_contract(diagnosis)
    assert [item["failure_id"] for item in contract["went_past"]] == ["port-in-use"]
    assert contract["went_past"][0]["first"]["line"] == AGENT.split("\n").index(
        next(line for line in AGENT.split("\n") if "failed to bind" in line)) + 1
    assert "port-in-use" not in [item["failure_id"] for item in contract["collateral"]]
    assert not any("port-in-use" in item["text"] for item in contract["because"] if item["rule"] == "consequences")
    kb = load_knowledge_base()
    assert "Errors the run went past" in TerminalReport(kb, color=False).render(diagnosis)
    assert "### Errors the run went past" in render_markdown(diagnosis, kb)
