"""A log pasted hard-wrapped (a terminal's copy, a mail: long lines broken at one width) is
diagnosed as the log itself, on the same line numbers; a log whose longest lines are records of
one template, or the same line repeated, is no wrap and stays as written."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.ingest.sources import InputFile
from firstfault.ingest.wrapped import unwrapped
from firstfault.pipeline import diagnose_paths, diagnose_texts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# cases a wrap at 120 characters turns into other verdicts (first sight, 2026-12-05)
CASES = ["dev/abi-flashattn-wheel-built-for-other-torch", "dev/accelerate-rank0-200g-offset-index-barrier-timeout",
         "real/autograd-inplace-srun-ws3-r2", "real/collective-after-fit-plain-ws4-r1",
         "dev/budgetbert-uneven-shards-epoch-end-hang",
         # device-side asserts, one template repeated, each wrapped right after a blank (first sight
         # of the wrapped forms, 2026-12-05: answered healthy)
         "upstream/cuda-device-side-assert-llama2c-windows-no-kernel-name",
         "upstream/cuda-device-side-assert-semseg-spatial-nll-template-args"]


def wrapped(data: bytes, width: int) -> bytes:
    lines = []
    for line in data.split(b"\n"):
        lines += [line[start:start + width] for start in range(0, len(line), width)] or [b""]
    return b"\n".join(lines)


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("width", [80, 120])
def test_a_hard_wrapped_log_gives_the_logs_diagnosis(case, width, tmp_path):
    logs = FIXTURES / case / "logs"
    for path in sorted(logs.rglob("*")):
        if path.is_file():
            copy = tmp_path / "logs" / path.relative_to(logs)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(wrapped(path.read_bytes(), width))
    assert verdict(diagnose_paths([str(tmp_path / "logs")])) == verdict(diagnose_paths([str(logs)]))


def test_the_pieces_are_joined_and_the_line_numbers_kept():
    line = b"[rank3]: RuntimeError: CUDA error: device-side assert triggered while the loader fed batch 1234 of 5000"
    text = wrapped(b"\n".join([b"[rank0]: step 1 loss 2.0 tokens 51234 lr 0.0001 grad norm 1.02"] + [line] * 4), 48)
    item = unwrapped(InputFile(display="t.log", relative="t.log", content=text))
    assert item.content.split(b"\n")[0].startswith(b"[rank0]: step 1") and item.content.count(b"\n") == text.count(b"\n")
    assert item.content.split(b"\n")[1:3] == [b"", line]  # an empty line where the first line's piece was
    diagnosis = diagnose_texts([("pasted.txt", text)])
    assert verdict(diagnosis) == ("cuda-device-side-assert", 3, None)
    assert text.split(b"\n")[diagnosis.initiating.line - 1].startswith(b"[rank3]: RuntimeError")


@pytest.mark.parametrize("case_file", [
    # the same long warning once per rank, then its source line
    "real/exc-index-error-spawn-ws6-r4/logs/console.log",
    # fixed-format records, all of one width
    "dev/hpc-dgx-node-ecc-8gpu-ddp-rank5/logs/torchelastic/attempt_0/5/stdout.log",
])
def test_records_of_one_width_are_no_wrap(case_file):
    path = FIXTURES / case_file
    item = InputFile(display=path.name, relative=path.name, path=path)
    assert unwrapped(item) is item


def test_a_line_longer_than_the_width_shows_it_is_no_wrap():
    pieces = [b"x" * 60 + b"ab", b"cdef continues here", b"y" * 60 + b"ab", b"cd more", b"z" * 60 + b"ab", b"cd end"]
    text = b"\n".join(pieces + [b"a line of its own, longer than the others' width of sixty-two"]) + b"\n"
    assert unwrapped(InputFile(display="t", relative="t", content=text)).content is not text  # without it: a wrap
    longer = text + b"w" * 70 + b"\n"
    item = InputFile(display="t", relative="t", content=longer)
    assert unwrapped(item) is item


def test_a_coloured_log_is_measured_as_the_terminal_showed_it():
    line = b"[rank3]: RuntimeError: CUDA error: device-side assert triggered while the loader fed batch 1234 of 5000"
    plain = wrapped(b"\n".join([line] * 4), 48)
    coloured = plain.replace(b"RuntimeError", b"\x1b[31mRuntimeError\x1b[0m")  # codes after the wrap
    item = unwrapped(InputFile(display="t.log", relative="t.log", content=coloured))
    assert item.content == unwrapped(InputFile(display="t.log", relative="t.log", content=plain)).content


def test_a_wrapped_log_without_a_last_line_end_is_joined_too(tmp_path):
    # the whole text in hand, its last line is complete though it ends without '\n' (a paste)
    case = FIXTURES / "upstream/host-oom-killed-anomalygpt-deepspeed-sigkill-local-rank1/logs/train.log"
    cut = tmp_path / "train.log"
    cut.write_bytes(case.read_bytes().rstrip(b"\n"))
    assert verdict(diagnose_paths([str(cut)])) == verdict(diagnose_paths([str(case)]))
