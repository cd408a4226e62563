"""Many files pasted into one text (`tail -n +1 logs/*`, `grep -rn ... logs/`) are diagnosed as the
files themselves: each file's name still says which rank or node wrote it, each file's lines stay
one stream, and evidence points at the line of the text given. Logs that only look a little like
such a text stay one log."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.ingest.combined import split_combined
from firstfault.ingest.sources import InputFile
from firstfault.pipeline import diagnose_paths, diagnose_texts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# cases whose ranks are told by their files' names (rankN.log, attempt_0/N/, nodeN.log,
# stdout.rankN.log), or whose files hold ranks that print no prefix of their own
CASES = ["dev/real-12-plain-ws4", "real/hang-checkpoint-time-limit-plain-ws4", "real/native-bus-error-plain-ws3",
         "real/collective-mismatch-extra-barrier-logdir-ws3-r1", "real/loss-nan-twonode-ws4-r2",
         "dev/semseg-mapillary-label-assert-8gpu", "real/oom-killer-srun-ws2"]


def log_files(case: str) -> list[tuple[str, bytes]]:
    logs = FIXTURES / case / "logs"
    return [(str(path.relative_to(logs.parent)), path.read_bytes()) for path in sorted(logs.rglob("*")) if path.is_file()]


def tail_output(files) -> bytes:
    """What `tail -n +1 FILE...` prints."""
    return b"\n".join(f"==> {name} <==\n".encode() + data.rstrip(b"\n") + b"\n" for name, data in files)


def grep_output(files, numbered: bool) -> bytes:
    """What `grep -H ''` (or `grep -Hn ''`) prints for FILE..., context separators of `-C` among them."""
    lines = []
    for name, data in files:
        for number, line in enumerate(data.rstrip(b"\n").split(b"\n"), start=1):
            lines.append(name.encode() + (b":%d:" % number if numbered else b":") + line)
        lines.append(b"--")
    return b"\n".join(lines) + b"\n"


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("form", ["tail", "grep", "grep -n"])
def test_files_pasted_into_one_text_give_the_diagnosis_of_the_files(case, form, tmp_path):
    files = log_files(case)
    text = tail_output(files) if form == "tail" else grep_output(files, numbered=form == "grep -n")
    combined = tmp_path / "combined.log"
    combined.write_bytes(text)
    expected = diagnose_paths([str(FIXTURES / case / "logs")])
    assert verdict(diagnose_paths([str(combined)])) == verdict(expected)
    assert verdict(diagnose_texts([("pasted.txt", text)])) == verdict(expected)  # pasted in the web app


def test_evidence_points_at_the_line_of_the_text_given(tmp_path):
    files = [("logs/rank0.log", b"step 1\nstep 2\n"),
             ("logs/rank1.log", b"step 1\nRuntimeError: CUDA error: device-side assert triggered\nstep 2\n")]
    combined = tmp_path / "combined.log"
    combined.write_bytes(tail_output(files))
    diagnosis = diagnose_paths([str(combined)])
    lines = combined.read_bytes().split(b"\n")
    assert diagnosis.initiating.rank == 1
    assert lines[diagnosis.initiating.line - 1].startswith(b"RuntimeError: CUDA error: device-side assert")
    assert diagnosis.initiating.source == f"logs/rank1.log in {combined}"


def test_nothing_before_the_first_file_is_lost():
    steps = b"".join(b"logs/rank%d.log:%d:step %d\n" % (rank, step, step) for rank in (0, 1) for step in range(1, 11))
    text = b"$ grep -rn . logs/\nRuntimeError: CUDA error: an illegal memory access was encountered\n" + steps
    pieces = split_combined(InputFile(display="t.txt", relative="t.txt", content=text))
    assert [(piece.relative, piece.first_line) for piece in pieces] == [("t.txt", 1), ("logs/rank0.log", 3),
                                                                          ("logs/rank1.log", 13)]
    assert pieces[0].content.startswith(b"$ grep") and b"illegal memory access" in pieces[0].content
    assert pieces[1].content.startswith(b"step 1\nstep 2\n")


def test_an_srun_task_label_after_a_file_name_is_no_line_number():
    text = b"".join(b"logs/slurm-7.out:%d: step %d\n" % (task, step) for step in range(3) for task in (0, 1))
    pieces = split_combined(InputFile(display="t.txt", relative="t.txt", content=text))
    assert len(pieces) == 1 and pieces[0].content.startswith(b"0: step 0\n1: step 0\n")


def test_grep_line_numbers_are_taken_off():
    text = b"logs/rank3.log:10:step 1\nlogs/rank3.log-11-step 2\nlogs/rank3.log:12:NCCL WARN x\n--\nlogs/rank3.log:40:y\n"
    (piece,) = split_combined(InputFile(display="t.txt", relative="t.txt", content=text))
    assert piece.relative == "logs/rank3.log" and piece.content == b"step 1\nstep 2\nNCCL WARN x\n\ny\n"


@pytest.mark.parametrize("text", [
    # a console whose lines carry launcher prefixes, not file names
    b"[rank0]:step 1\n[rank1]:step 1\n[rank1]:RuntimeError: CUDA error: out of memory\n[rank0]:step 2\n",
    # notes that quote `grep -c` counts among other lines
    b"# a scaling sweep\n$ grep -c 'Wait timeout' a.log b.log\na.log:0\nb.log:26\nthe job at 8 nodes ran\n"
    b"[0]<stdout>:Epoch 0 iter 400\n",
    # a build log and Python warnings: source files, not a job's files
    b"src/ops/attn.cu:12:3: warning: unused variable\nsrc/ops/attn.cu:40:1: error: expected ';'\nsrc/x.cc:1:2: note: x\n",
    b"/usr/lib/python3/site-packages/torch/x.py:12: UserWarning: a\n/usr/lib/x.py:13: UserWarning: b\n/a/b.py:1: Warn\n",
    # a log that quotes a tail header further down
    b"step 1\nstep 2\n==> rank1.log <==\nRuntimeError: boom\n",
    # Python logging's default format
    b"INFO:root:step 1\nINFO:root:step 2\nERROR:root:RuntimeError: boom\nINFO:root.log:x\n",
])
def test_a_log_that_only_looks_like_pasted_files_stays_one_log(text):
    item = InputFile(display="t.log", relative="t.log", content=text)
    assert split_combined(item) == [item]


def compose_output(files, colour: bool = False) -> bytes:
    """What `docker compose logs` prints when each file was a container's output (`trainer-1`, ...):
    names padded to the longest, a bar, the lines interleaved one by one (on a terminal, each name
    in its colour)."""
    streams = [data.rstrip(b"\n").split(b"\n") for _name, data in files]
    width = len(f"trainer-{len(files)}")
    lines = []
    for index in range(max(map(len, streams))):
        for number, stream in enumerate(streams, start=1):
            if index < len(stream):
                name = f"trainer-{number}".ljust(width).encode() + b"  |"
                name = b"\x1b[3%dm" % (number % 7) + name + b"\x1b[0m" if colour else name
                lines.append(name + b" " + stream[index])
    return b"\n".join(lines) + b"\n"


COMPOSE_CASES = ["real/exc-index-error-tee-ws7-r5", "real/native-segfault-tee-ws10-r9", "real/sigkill-rank-srun-ws5-r4",
                 "real/collective-mismatch-extra-barrier-tee-ws4"]


@pytest.mark.parametrize("case", COMPOSE_CASES)
@pytest.mark.parametrize("form", ["plain", "colour"])
def test_a_containers_output_through_docker_compose_gives_the_diagnosis_of_its_log(case, form):
    """One container ran the job (its console, the scheduler's output): Compose's name and bar
    before each line, the name coloured, change nothing."""
    files = [file for file in log_files(case) if not file[0].startswith("logs/dmesg")]
    text = compose_output(files, colour=form == "colour")
    expected = diagnose_paths([str(FIXTURES / case / "logs")])
    assert verdict(diagnose_texts([("compose.log", text)])) == verdict(expected)


def test_compose_cuts_its_containers_apart_and_keeps_the_line_numbers():
    text = (b"trainer-1  | [rank0]: step 1 loss 2.0\n"
            b"trainer-2  | [rank1]: step 1 loss 2.1\n"
            b"trainer-1  | [rank0]: Traceback (most recent call last):\n"
            b"trainer-1  | [rank0]: RuntimeError: CUDA error: device-side assert triggered\n"
            b"trainer-2  | [rank1]: waiting in all_reduce\n")
    pieces = split_combined(InputFile(display="compose.log", relative="compose.log", content=text))
    assert [piece.display for piece in pieces] == ["trainer-1 in compose.log", "trainer-2 in compose.log"]
    assert {piece.relative for piece in pieces} == {"compose.log"}  # a replica's number is no rank
    assert pieces[1].content.split(b"\n")[1] == b"[rank1]: step 1 loss 2.1"
    assert pieces[1].content.split(b"\n")[0] == b""  # the other container's line, left empty
    diagnosis = diagnose_texts([("compose.log", text)])
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank) == ("cuda-device-side-assert", 0)
    assert (diagnosis.initiating.source, diagnosis.initiating.line) == ("trainer-1 in compose.log", 4)


def test_compose_logs_with_times_read_each_rank_behind_its_time():
    """`docker compose logs -t`: the time after the bar goes behind the launcher prefix, as a
    collector's time does, so the rank is read."""
    text = (b"trainer-1  | 2026-12-05T08:00:01.000000000Z [rank0]: step 7 loss 2.0\n"
            b"trainer-2  | 2026-12-05T08:00:01.500000000Z [rank1]: step 7 loss 2.1\n"
            b"trainer-2  | 2026-12-05T08:00:02.000000000Z [rank1]: Traceback (most recent call last):\n"
            b"trainer-2  | 2026-12-05T08:00:02.000000000Z [rank1]: IndexError: list index out of range\n"
            b"trainer-1  | 2026-12-05T08:10:02.000000000Z [rank0]: RuntimeError: [gloo/transport/tcp/pair.cc:534] "
            b"Connection closed by peer [10.0.0.2]:6011\n")
    diagnosis = diagnose_texts([("compose.log", text)])
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank) == ("user-code-exception", 1)
    assert (diagnosis.initiating.source, diagnosis.initiating.line) == ("trainer-2 in compose.log", 4)


@pytest.mark.parametrize("text", [
    # Lightning's model summary and a Markdown table: bars, but no container names before them
    b"  | Name     | Type   | Params\n0 | backbone | ResNet | 11.2 M\n1 | head     | Linear | 5.1 K\n"
    b"11.2 M    Trainable params\n",
    b"| rank | loss |\n| --- | --- |\n| 0 | 2.0 |\n| 1 | 2.1 |\n",
    # two lines of a container among a log's own
    b"worker-1 | started\nworker-2 | started\n[rank0]: step 1 loss 2.0\n[rank0]: step 2 loss 1.9\n"
    b"[rank0]: step 3 loss 1.8\n[rank0]: step 4 loss 1.7\n",
])
def test_a_log_with_bars_is_no_compose_output(text):
    assert split_combined(InputFile(display="x.log", relative="x.log", content=text))[0].content == text


def kubectl_prefixed(case: str, pods: list[str]) -> bytes:
    """What `kubectl logs -l job-name=... --prefix` prints for these pods: each pod's lines in turn."""
    logs = FIXTURES / case / "logs"
    return b"".join(b"[pod/%s/pytorch] " % pod.encode() + line + b"\n"
                    for pod in pods for line in (logs / f"{pod}.log").read_bytes().rstrip(b"\n").split(b"\n"))


def test_kubectls_prefixed_pods_give_the_diagnosis_of_the_pods_files(tmp_path):
    """`kubectl logs -l ... --prefix` of a Kubeflow PyTorchJob's three pods (the scheduler preempted
    worker 1): each pod's lines are the file `kubectl logs <pod>` saves, named by the pod; the
    evidence cites the line of the text given."""
    case = "upstream/preempted-sigterm-k8s-scheduler-preempted-worker-pod-sigkill"
    pods = ["train-bert-master-0", "train-bert-worker-0", "train-bert-worker-1"]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "all-pods.log").write_bytes(kubectl_prefixed(case, pods))
    per_pod = tmp_path / "per-pod"
    per_pod.mkdir()
    for path in (FIXTURES / case / "logs").iterdir():  # and the describe output the user also has
        for folder in (per_pod,) if path.stem in pods else (per_pod, logs):
            (folder / path.name).write_bytes(path.read_bytes())
    expected = diagnose_paths([str(per_pod)])
    diagnosis = diagnose_paths([str(logs)])
    assert verdict(diagnosis) == verdict(expected) == ("preempted-sigterm", 2, "train-bert-worker-1")
    assert diagnosis.initiating.source.startswith("train-bert-worker-1/pytorch in ")
    text_line = kubectl_prefixed(case, pods).split(b"\n")[diagnosis.initiating.line - 1]
    assert text_line.startswith(b"[pod/train-bert-worker-1/pytorch] ") and diagnosis.initiating.time == expected.initiating.time


def test_one_pods_prefixed_lines_are_that_pods_and_a_quoted_prefix_leaves_a_log_as_it_is():
    one = b"[pod/bert-worker-1/pytorch] [rank1]: step 1 loss 2.0\n[pod/bert-worker-1/pytorch] [rank1]: RuntimeError: x\n" * 3
    (piece,) = split_combined(InputFile(display="w.log", relative="w.log", content=one))
    assert (piece.display, piece.relative, piece.content) == ("bert-worker-1/pytorch in w.log", "bert-worker-1", one)
    assert split_combined(piece) == [piece]  # once named by its pod, the text is that pod's
    quoted = b"[rank0]: step 1\n[pod/bert-worker-1/pytorch] [rank1]: RuntimeError: x\n[rank0]: step 2\n[rank0]: step 3\n"
    assert split_combined(InputFile(display="x.log", relative="x.log", content=quoted))[0].content == quoted
