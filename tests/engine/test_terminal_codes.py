"""A log captured with its terminal colours (rich, loguru, colorlog, a CI runner, `script`) is read
as its text: colour and cursor sequences are dropped as the blocks are read, so signatures,
launcher prefixes and times are found where they are, on the same line numbers."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.ingest.reader import ReadStats, read_blocks
from firstfault.ingest.sources import InputFile
from firstfault.pipeline import diagnose_paths

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = ["dev/real-39-srun-ws3", "real/native-bus-error-plain-ws3", "real/hang-checkpoint-time-limit-logdir-ws3-r1",
         "upstream/loss-nan-msswift-megatron-ray-rank13"]
COLOURS = [(b"ERROR", b"\x1b[31mERROR\x1b[0m"), (b"Error", b"\x1b[1;31mError\x1b[0m"), (b"WARNING", b"\x1b[33mWARNING\x1b(B\x1b[m"),
           (b"INFO", b"\x1b[38;2;0;200;0mINFO\x1b[39m"), (b"[rank", b"\x1b[2m[rank"), (b"\n", b"\x1b[K\n")]


def coloured(data: bytes) -> bytes:
    for plain, painted in COLOURS:
        data = data.replace(plain, painted)
    return data


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None,
            initiating.line if initiating else None, initiating.text if initiating else None)


@pytest.mark.parametrize("case", CASES)
def test_a_coloured_log_gives_the_diagnosis_of_its_text(case, tmp_path):
    logs = FIXTURES / case / "logs"
    for path in sorted(logs.rglob("*")):
        if path.is_file():
            copy = tmp_path / "logs" / path.relative_to(logs)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(coloured(path.read_bytes()))
    assert verdict(diagnose_paths([str(tmp_path / "logs")])) == verdict(diagnose_paths([str(logs)]))


def blocks(content: bytes) -> list[bytes]:
    return [block.data for block in read_blocks(InputFile(display="t", relative="t", content=content), ReadStats())]


def test_colours_cursor_moves_and_character_sets_are_dropped_and_nothing_else():
    text = (b"\x1b[1;31mError\x1b[0m: x \x1b(B\x1b[K done\n\x1b[38;2;255;0;0mred\x1b[m \x1b[2J\x1b[Hok\n"
            b"[rank3]: plain [1;31m text\n")
    assert blocks(text) == [b"Error: x  done\nred ok\n[rank3]: plain [1;31m text"]


def test_other_sequences_stay_for_the_reports_to_show_escaped():
    # an OSC 52 clipboard write or an OSC 8 link is no colour: tests/engine/test_terminal_escapes.py
    text = b"x \x1b]52;c;ZWNobyBwd25lZA==\x07 y \x1b]8;;http://a\x1b\\link\x1b]8;;\x1b\\\n"
    assert blocks(text) == [text.rstrip(b"\n")]


def test_a_log_without_escapes_is_read_as_it_is():
    text = b"step 1 [31m is text here\nstep 2\n"
    assert blocks(text) == [text.rstrip(b"\n")]
