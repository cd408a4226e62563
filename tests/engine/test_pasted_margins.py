"""A log pasted as a Markdown code block (every line indented) or quoted in a reply (`> `, `> > `)
is diagnosed as the log itself, with its line numbers; a log whose margin some line lacks keeps
it."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.dumps.discover import classify
from firstfault.ingest.margin import without_margin
from firstfault.ingest.sources import InputFile
from firstfault.pipeline import diagnose_paths, diagnose_texts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# a launcher prefix at each line's start tells the rank (srun, --tee), tracebacks, a lone line
CASES = ["dev/real-39-srun-ws3", "real/ddp-reentrant-checkpoint-tee-ws3-r1", "real/native-bus-error-plain-ws3",
         "real/hang-checkpoint-time-limit-logdir-ws3-r1", "upstream/loss-nan-msswift-megatron-ray-rank13"]
MARGINS = {"code block": lambda line: b"    " + line if line.strip() else line,
           "tab": lambda line: b"\t" + line if line.strip() else line,
           "quote": lambda line: b"> " + line,
           "quote of a quote": lambda line: b"> > " + line if line.strip() else b">>"}


def with_margin(folder: Path, target: Path, margin) -> Path:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            copy = target / path.relative_to(folder)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(b"\n".join(map(margin, path.read_bytes().split(b"\n"))))
    return target


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None,
            initiating.line if initiating else None)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("margin", MARGINS)
def test_a_log_pasted_with_a_margin_gives_the_logs_diagnosis(case, margin, tmp_path):
    logs = FIXTURES / case / "logs"
    pasted = with_margin(logs, tmp_path / "logs", MARGINS[margin])
    assert verdict(diagnose_paths([str(pasted)])) == verdict(diagnose_paths([str(logs)]))  # same line numbers too


def test_a_pasted_text_in_the_web_app_too():
    text = b"    [rank1]: RuntimeError: CUDA error: device-side assert triggered\n    [rank0]: step 3\n"
    diagnosis = diagnose_texts([("pasted.txt", text)])
    assert verdict(diagnosis)[:2] == ("cuda-device-side-assert", 1)


@pytest.mark.parametrize("text", [
    # only the first lines are indented (a configuration dump), the log after it is not
    b"    lr: 0.1\n    batch: 16\n[rank0]: step 1\n  File \"x.py\", line 3, in f\nRuntimeError: boom\n",
    # one space is no paste's margin: srun right-aligns its labels
    b" 3: step 1\n 3: step 2\n 3: RuntimeError: boom\n",
    # an interpreter session, not a quote
    b">>> import torch\n>>> torch.zeros(1).cuda()\nRuntimeError: CUDA error: no kernel image\n",
    b"",
])
def test_a_margin_some_line_lacks_is_kept(text):
    item = InputFile(display="t.log", relative="t.log", content=text)
    assert without_margin(item) is item


def test_the_margin_is_taken_off_every_line_and_no_line_is_lost():
    text = b"    a\n\n    b\n      indented more\n    c"
    item = without_margin(InputFile(display="t.log", relative="t.log", content=text))
    assert item.content == b"a\n\nb\n  indented more\nc"
    quoted = without_margin(InputFile(display="t.log", relative="t.log", content=b"> > a\n> >\n> > > b\n"))
    assert quoted.content == b"a\n\n> b\n"  # a quote in the quote stays


def test_an_indented_log_whose_lines_end_in_parentheses_is_no_stack_dump():
    log = b"".join(b"    0: epoch 0 step %d loss 0.%d (1174.5 samples/s)\n" % (step, step) for step in range(40))
    assert classify("slurm-1.out", log) is None
    dump = b"Thread 0x7f00 (active): \"MainThread\"\n    forward (model.py:12)\n    train (train.py:40)\n"
    assert classify("stacks-rank0.txt", dump) == "stacks"
