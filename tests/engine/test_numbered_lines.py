"""A log pasted with its line numbers (`grep -n ''`, context lines and `--` among them; `cat -n`,
`nl`) is diagnosed as the log itself, with the paste's line numbers; texts whose lines start with
numbers that do not grow line by line (srun's task labels, times) stay as they are."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.ingest.numbered import without_line_numbers
from firstfault.ingest.sources import InputFile
from firstfault.pipeline import diagnose_paths, diagnose_texts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# the rank is told by a launcher prefix at each line's start (srun's label, --tee's, Ray's), or
# by a traceback's frames, or by a lone line
CASES = ["dev/real-39-srun-ws3", "real/ddp-reentrant-checkpoint-tee-ws3-r1", "real/exc-index-error-tee-ws7-r5",
         "real/hang-checkpoint-time-limit-logdir-ws3-r1", "upstream/loss-nan-msswift-megatron-ray-rank13"]
NUMBERS = {"grep -n": lambda number, line: b"%d:%s" % (number, line),
           "cat -n": lambda number, line: b"%6d\t%s" % (number, line)}


def numbered(folder: Path, target: Path, number) -> Path:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            copy = target / path.relative_to(folder)
            copy.parent.mkdir(parents=True, exist_ok=True)
            lines = path.read_bytes().rstrip(b"\n").split(b"\n")
            copy.write_bytes(b"\n".join(number(index, line) for index, line in enumerate(lines, start=1)) + b"\n")
    return target


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None,
            initiating.line if initiating else None)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("form", NUMBERS)
def test_a_log_pasted_with_its_line_numbers_gives_the_logs_diagnosis(case, form, tmp_path):
    logs = FIXTURES / case / "logs"
    pasted = numbered(logs, tmp_path / "logs", NUMBERS[form])
    assert verdict(diagnose_paths([str(pasted)])) == verdict(diagnose_paths([str(logs)]))  # same line numbers too


def test_grep_n_with_context_lines_and_separators():
    """`grep -n -C1 -e Error train.log`: the numbers jump between groups, `-` marks context lines."""
    text = (b"118-[rank1]: step 40 loss 2.1\n119:[rank1]: Traceback (most recent call last):\n"
            b"120-[rank1]:   File \"train.py\", line 12, in <module>\n--\n"
            b"131-[rank1]:     labels = lookup[index]\n132:[rank1]: IndexError: list index out of range\n")
    diagnosis = diagnose_texts([("grep.txt", text)])
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank, diagnosis.initiating.line) == ("user-code-exception", 1, 6)


def test_a_one_line_paste_without_a_line_end():
    """`grep -n` of one line, pasted without the line end after it: the head is the whole text,
    and its one line counts."""
    text = b"1:  File \"train.py\", line 12, in <module>"
    item = InputFile(display="grep.txt", relative="grep.txt", content=text)
    assert without_line_numbers(item, text).content == b"  File \"train.py\", line 12, in <module>"


@pytest.mark.parametrize("text", [
    # srun --label: the task numbers repeat
    b"0: [rank0]: step 1\n1: [rank1]: step 1\n0: [rank0]: step 2\n1: [rank1]: step 2\n",
    # times at the start of each line: the hour does not grow line by line
    b"08:00:01 INFO step 1\n08:00:02 INFO step 2\n08:00:03 INFO step 3\n",
    # numbered lines among others
    b"1: started\n2: loading\nRuntimeError: x\n3: done\n",
    # numbers that fall back (two numbered files pasted one after the other read as two)
    b"1:a\n2:b\n3:c\n1:d\n2:e\n",
    # too few to tell, and not a file numbered from its first line
    b"7:a\n9:b\n",
])
def test_lines_whose_numbers_do_not_count_lines_keep_them(text):
    item = InputFile(display="x.log", relative="x.log", content=text)
    assert without_line_numbers(item, text) is item
