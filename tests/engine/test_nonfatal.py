"""Tracebacks Python printed and went on from (destructors, background threads, queue feeders)
are not failures; the same exception raised in the main flow is."""
from __future__ import annotations

from pathlib import Path

from firstfault.pipeline import diagnose_texts

TRAINING = "\n".join(f"2026-03-01 10:00:{second:02d},000 INFO step {second} loss 0.{90 - second}" for second in range(30))

IGNORED_IN_DEL = """Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f1c2a3b4d30>
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1479, in __del__
    self._shutdown_workers()
  File "/usr/lib/python3.11/multiprocessing/process.py", line 149, in join
    assert self._parent_pid == os.getpid(), 'can only join a child process'
AssertionError: can only join a child process"""

THREAD = """Exception in thread Thread-5 (_thread_body):
Traceback (most recent call last):
  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner
    self.run()
  File "/opt/venv/lib/python3.11/site-packages/wandb/sdk/internal/file_stream.py", line 255, in _thread_body
    self._send(ready_chunks)
requests.exceptions.ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))"""

FEEDER = """Traceback (most recent call last):
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 244, in _feed
    send_bytes(obj)
  File "/usr/lib/python3.11/multiprocessing/connection.py", line 411, in _send_bytes
    self._send(header + buf)
BrokenPipeError: [Errno 32] Broken pipe"""

MAIN_FLOW = """Traceback (most recent call last):
  File "/job/train.py", line 58, in main
    names.append(LABELS[len(LABELS)])
IndexError: list index out of range"""


def _status(*parts: str) -> str:
    return diagnose_texts([("train.log", "\n".join(parts) + "\n")]).status


def test_nonfatal_tracebacks_leave_a_run_healthy():
    # at the end of the log too (printed at shutdown), where no later output shows the run went on
    for traceback in (IGNORED_IN_DEL, THREAD, FEEDER):
        assert _status(TRAINING, traceback) == "healthy", traceback.splitlines()[0]
        assert _status(TRAINING, traceback, TRAINING) == "healthy", traceback.splitlines()[0]


def test_a_main_flow_exception_after_a_nonfatal_one_is_still_the_failure():
    diagnosis = diagnose_texts([("train.log", "\n".join((TRAINING, IGNORED_IN_DEL, TRAINING, MAIN_FLOW)) + "\n")])
    assert diagnosis.status == "failure"
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert "IndexError" in diagnosis.initiating.text


# --- torchrun's agent after its workers ended -------------------------------------------------

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
# a real run's second agent (torch 2.13, two agents as two nodes): agent 0, which holds the store,
# left the exit barrier first, so agent 1's wait lost the connection; then its heartbeat and its
# rendezvous shutdown failed, and the store client warned with a C++ backtrace
AGENT_TEARDOWN = (REAL / "collective-after-fit-twonode-ws6-r0" / "logs" / "node1.log").read_text().splitlines()[51:]
HEALTHY = REAL / "healthy-noisy-twonode-ws8-r0" / "logs"


def _healthy_run_with(node1_tail: list[str]):
    texts = {path.name: path.read_text() for path in sorted(HEALTHY.iterdir())}
    texts["node1.log"] += "\n".join(node1_tail) + "\n"
    return diagnose_texts(sorted(texts.items()))


def test_the_agent_teardown_after_a_finished_run_leaves_it_healthy():
    assert AGENT_TEARDOWN[0].endswith("Error waiting on exit barrier. Elapsed: 0.4899415969848633 seconds")
    assert any(line.startswith("frame #1: c10::DistError::DistError(") for line in AGENT_TEARDOWN)
    diagnosis = _healthy_run_with(AGENT_TEARDOWN)
    assert diagnosis.status == "healthy", diagnosis.because


def test_the_barrier_traceback_is_a_failure_without_the_line_that_says_the_agent_caught_it():
    # the same traceback, raised where nothing caught it, is what ended that process
    diagnosis = _healthy_run_with(AGENT_TEARDOWN[1:8])
    assert diagnosis.status != "healthy"


def test_a_cpp_backtrace_is_as_grave_as_the_line_it_belongs_to():
    # its frames name functions (`c10::DistError::DistError(`), they state no error of their own
    backtrace = [line for line in AGENT_TEARDOWN if line.startswith(("Exception raised from", "frame #"))]
    warning = next(line for line in AGENT_TEARDOWN if "sendBytes failed" in line)
    assert warning.startswith("[W") and len(backtrace) > 5
    assert _status(TRAINING, warning, *backtrace) == "healthy"
    # the same message logged at error level, with the same backtrace: the run did not go on from it
    assert _status(TRAINING, warning.replace("[W1205", "[E1205", 1), *backtrace) != "healthy"
