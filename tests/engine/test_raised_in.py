"""A signature may hold only where its exception was raised (`raised_in`, correlate/raised_in.py):
a connection reset taken in a DataLoader's batch handover is a dead worker, elsewhere it is not."""
from __future__ import annotations

from pathlib import Path

from firstfault.pipeline import diagnose_texts

TRAINING = "\n".join(f"2026-03-01 10:00:{second:02d},000 INFO step {second} loss 0.{90 - second}" for second in range(20))

# as a real run printed it (torch 2.13, Python 3.11): the worker was SIGKILLed while the main
# process was taking a batch's tensor from the worker's resource sharer
HANDOVER = """Traceback (most recent call last):
  File "/job/train.py", line 88, in <module>
    for batch in loader:
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 725, in __next__
    data = self._next_data()
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1291, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 122, in get
    return _ForkingPickler.loads(res)
  File "/opt/venv/lib/python3.11/site-packages/torch/multiprocessing/reductions.py", line 538, in rebuild_storage_fd
    fd = df.detach()
  File "/usr/lib/python3.11/multiprocessing/resource_sharer.py", line 57, in detach
    with _resource_sharer.get_connection(self._id) as conn:
  File "/usr/lib/python3.11/multiprocessing/resource_sharer.py", line 86, in get_connection
    c = Client(address, authkey=process.current_process().authkey)
  File "/usr/lib/python3.11/multiprocessing/connection.py", line 395, in _recv
    chunk = read(handle, remaining)
ConnectionResetError: [Errno 104] Connection reset by peer"""

# the same exception from a metrics client: a network error of the script's own
ELSEWHERE = """Traceback (most recent call last):
  File "/job/train.py", line 91, in <module>
    upload_metrics(step)
  File "/usr/lib/python3.11/http/client.py", line 1378, in getresponse
    response.begin()
  File "/usr/lib/python3.11/socket.py", line 706, in readinto
    return self._sock.recv_into(b)
ConnectionResetError: [Errno 104] Connection reset by peer"""


def _diagnose(*parts: str):
    return diagnose_texts([("train.log", "\n".join(parts) + "\n")])


def test_a_reset_in_the_batch_handover_is_a_dead_dataloader_worker():
    diagnosis = _diagnose(TRAINING, HANDOVER)
    assert diagnosis.status == "failure"
    assert diagnosis.primary.failure_id == "dataloader-worker-killed"
    assert "ConnectionResetError" in diagnosis.initiating.text


def test_the_same_reset_raised_elsewhere_is_the_scripts_own_exception():
    diagnosis = _diagnose(TRAINING, ELSEWHERE)
    assert diagnosis.primary.failure_id == "user-code-exception"


def test_the_frames_are_the_exceptions_own_traceback_not_an_earlier_one():
    # a handover that went wrong and was handled earlier does not lend its frames to a later reset
    earlier = HANDOVER.replace("ConnectionResetError: [Errno 104] Connection reset by peer", "OSError: [Errno 24] Too many open files")
    diagnosis = _diagnose(TRAINING, earlier, TRAINING, ELSEWHERE)
    assert all(finding.failure_id != "dataloader-worker-killed" for finding in (diagnosis.primary, *diagnosis.collateral))


def test_a_handover_reset_in_one_ranks_stream_needs_that_ranks_frames():
    # two ranks in one console: rank 0's frames do not make rank 1's reset a handover
    rank0 = "\n".join(f"[rank0]: {line}" for line in HANDOVER.splitlines()[:-1])
    rank1 = "\n".join(f"[rank1]: {line}" for line in ELSEWHERE.splitlines())
    diagnosis = _diagnose(TRAINING, rank0, rank1)
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert diagnosis.initiating.rank == 1


def test_kb_check_holds_raised_in_frames_to_their_examples(tmp_path: Path):
    from firstfault.kb.loader import ENTRIES_DIR, check_entries

    root = tmp_path / "entries" / "memory"
    root.mkdir(parents=True)
    text = (ENTRIES_DIR / "memory" / "dataloader-worker-killed.yaml").read_text()
    frame = r"""'multiprocessing/resource_sharer\.py", line \d+, in (?:detach|get_connection)'"""
    assert frame in text
    near_miss = "'  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 122, in get'"
    assert near_miss in text
    broken = text.replace(frame, r"""'resource_sharer\.py", line \d+, in _serve'""").replace(
        near_miss, "'  File \"/usr/lib/python3.11/multiprocessing/resource_sharer.py\", line 140, in _serve'")
    (root / "dataloader-worker-killed.yaml").write_text(broken)
    _entries, problems = check_entries(root.parent)
    messages = [problem.message for problem in problems]
    assert any("matches none of its examples" in message for message in messages), messages
    assert any("raised_in near-miss frame matches" in message for message in messages), messages


# errno 11 from a fork (a real run in a pids cgroup, tests/fixtures/real/pids-plain-git-torch28) is
# a task limit; from a non-blocking socket with nothing to read it is not
FORK_EAGAIN = """Traceback (most recent call last):
  File "/job/train.py", line 43, in main
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
  File "/usr/lib/python3.11/subprocess.py", line 1026, in __init__
    self._execute_child(args, executable, preexec_fn, close_fds,
  File "/usr/lib/python3.11/subprocess.py", line 1883, in _execute_child
    self.pid = _fork_exec(
BlockingIOError: [Errno 11] Resource temporarily unavailable"""

SOCKET_EAGAIN = """Traceback (most recent call last):
  File "/job/train.py", line 97, in <module>
    poll_scheduler(sock)
  File "/usr/lib/python3.11/socket.py", line 705, in readinto
    return self._sock.recv_into(b)
BlockingIOError: [Errno 11] Resource temporarily unavailable"""


def test_errno_11_is_a_task_limit_only_when_a_fork_raised_it():
    forked = diagnose_texts([("train.log", TRAINING + "\n" + FORK_EAGAIN)])
    assert forked.primary.failure_id == "process-limit-reached"
    polled = diagnose_texts([("train.log", TRAINING + "\n" + SOCKET_EAGAIN)])
    assert polled.primary is None or polled.primary.failure_id != "process-limit-reached"
