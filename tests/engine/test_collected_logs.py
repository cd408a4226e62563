"""A log as kubelet (CRI: `<time> stderr F `) or a CI runner (`<time> `) stored it: the rank a
launcher prefix names is read behind the collector's time, and the time is kept; a text whose
lines do not all start with such a time is read as it is."""
from __future__ import annotations

import json

import pytest

from firstfault.ingest.collected import as_logged
from firstfault.ingest.sources import InputFile
from firstfault.pipeline import diagnose_texts

CRI = b"2026-12-05T08:00:0%dZ stderr F "
ACTIONS = b"2026-12-05T08:00:0%d.1234567Z "
# srun's task labels: the rank is said nowhere else on the line
LINES = [b"0: step 1 loss 2.0", b"1: step 1 loss 2.0", b"1: RuntimeError: CUDA error: device-side assert triggered",
         b"0: step 2 loss 1.9"]


def collected(prefix: bytes, lines=LINES) -> bytes:
    return b"\n".join((prefix % second) + line for second, line in enumerate(lines)) + b"\n"


def rewritten(text: bytes) -> bytes | None:
    item = InputFile(display="t.log", relative="t.log", content=text)
    result = as_logged(item, text[:4096])
    return None if result is item else result.content


def docker_json(lines=LINES) -> bytes:
    """Docker's json-file driver: one record a line."""
    return b"".join(json.dumps({"log": line.decode() + "\n", "stream": "stderr", "time": "2026-12-05T08:00:0%dZ" % second},
                               separators=(",", ":")).encode() + b"\n" for second, line in enumerate(lines))


@pytest.mark.parametrize("form", ["cri", "actions", "docker"])
def test_the_rank_behind_the_collectors_time_is_read_and_the_time_kept(form):
    text = docker_json() if form == "docker" else collected(CRI if form == "cri" else ACTIONS)
    diagnosis = diagnose_texts([("pod.log", text)])
    assert diagnosis.primary.failure_id == "cuda-device-side-assert"
    assert diagnosis.initiating.rank == 1 and diagnosis.initiating.line == 3
    assert diagnosis.initiating.time is not None and int(diagnosis.initiating.time) % 60 == 2  # 08:00:02


def test_the_time_goes_behind_the_launcher_prefix_and_nccl_lines_are_left_as_written():
    text = collected(CRI, [b"  3: step 1", b"[default1]:[rank5]:loss nan", b"plain line",
                           b"gpu-7:412:412 [3] NCCL INFO comm 0x1 rank 3 nranks 8", b"[1,2]<stdout>:x"])
    assert rewritten(text) == (b"  3: 2026-12-05T08:00:00Z step 1\n[default1]:[rank5]:2026-12-05T08:00:01Z loss nan\n"
                               b"2026-12-05T08:00:02Z plain line\ngpu-7:412:412 [3] NCCL INFO comm 0x1 rank 3 nranks 8\n"
                               b"[1,2]<stdout>:2026-12-05T08:00:04Z x\n")


def test_the_time_goes_behind_pdshs_host_too_where_the_host_and_rank_are_read():
    """DeepSpeed's multi-node launcher runs pdsh, which puts the node before each line; a
    collector's time in front of it hid the host (and the rank behind it)."""
    text = collected(CRI, [b"gpu-node-3: [rank29]: step 1 loss 2.0", b"10.0.0.7: [rank1]: step 1 loss 2.0",
                           b"gpu-node-3: [rank29]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                           b"Epoch: 1 step 2"])
    assert rewritten(text).split(b"\n")[:2] == [b"gpu-node-3: [rank29]:2026-12-05T08:00:00Z  step 1 loss 2.0",
                                                b"10.0.0.7: [rank1]:2026-12-05T08:00:01Z  step 1 loss 2.0"]
    assert rewritten(text).split(b"\n")[3] == b"2026-12-05T08:00:03Z Epoch: 1 step 2"  # a word, no host
    diagnosis = diagnose_texts([("pod.log", text)])
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank, diagnosis.initiating.host) == ("cuda-oom", 29, "gpu-node-3")


@pytest.mark.parametrize("text", [
    # a log of its own with times first: some lines do not start with one
    b"2026-12-05T08:00:00Z start\n  File \"x.py\", line 3\n2026-12-05T08:00:01Z RuntimeError: x\n",
    # times of the log's own format, not a collector's
    b"2026-12-05 08:00:00,000 INFO step 1\n2026-12-05 08:00:01,000 INFO step 2\n",
    b"[rank0]: step 1\n",
    b"",
    # an application's own JSON lines (no collector's `log` and `time`), and a record that is no record
    b'{"level": "info", "msg": "step 1", "log": 3}\n{"level": "error", "msg": "CUDA error"}\n',
    b'{"log": "x\\n", "stream": "stderr", "time": "2026-12-05T08:00:00Z"}\n{"log": [[[[[[1]]]]]]}\n',
])
def test_a_text_not_every_line_of_which_starts_with_a_collectors_time_is_read_as_it_is(text):
    assert rewritten(text) is None
