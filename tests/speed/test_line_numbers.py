"""Line numbers count '\\n' only, as `grep -n` does: tqdm's '\\r' redraws and CRLF line ends do
not shift them, across block boundaries too."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from firstfault.ingest import reader
from firstfault.ingest.sources import InputFile
from firstfault.match.scanner import Scanner

PLANTED = "RuntimeError: CUDA error: an illegal memory access was encountered"


def build_log(lines: int) -> bytes:
    out = []
    for number in range(1, lines + 1):
        if number % 7 == 0:
            out.append("Epoch 1:  10%|█         | 10/100\rEpoch 1:  11%|█         | 11/100\r" * 3)
        elif number % 11 == 0:
            out.append(f"2026-12-02 10:00:00,000 INFO step {number}\r")  # a CRLF line end
        elif number % 997 == 0:
            out.append(f"[rank{number % 8}]: {PLANTED}")
        else:
            out.append(f"[rank{number % 8}]: 2026-12-02 10:00:00,000 - INFO - step {number} loss=2.0")
    return ("\n".join(out) + "\n").encode("utf-8")


def grep_lines(path) -> list[int]:
    if shutil.which("grep"):
        result = subprocess.run(["grep", "-n", "-F", PLANTED, str(path)], capture_output=True, text=True, check=False)
        return [int(line.split(":", 1)[0]) for line in result.stdout.splitlines()]
    data = path.read_bytes().split(b"\n")
    return [index + 1 for index, line in enumerate(data) if PLANTED.encode() in line]


@pytest.mark.parametrize("engine", ["hyperscan", "python"])
def test_hit_lines_agree_with_grep(tmp_path, signatures, monkeypatch, engine):
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    monkeypatch.setattr(reader, "BLOCK_BYTES", 64 * 1024)  # many block boundaries
    path = tmp_path / "tqdm.log"
    path.write_bytes(build_log(12000))
    scan = Scanner(signatures, engine).scan(InputFile(display=str(path), relative=path.name, path=path))
    found = sorted({hit.line for hit in scan.hits if PLANTED in hit.text})
    assert found == grep_lines(path)
    assert scan.stats.lines == path.read_bytes().count(b"\n") + 0  # the final line ends in '\n'


def test_display_text_keeps_the_last_progress_segment(signatures):
    content = f"Epoch 1:  10%|█ | 1/10\rEpoch 1:  20%|██ | 2/10\r[rank3]: {PLANTED}\n".encode()
    scan = Scanner(signatures).scan(InputFile(display="x", relative="x", content=content))
    texts = {hit.text for hit in scan.hits}
    assert f"[rank3]: {PLANTED}" in texts
