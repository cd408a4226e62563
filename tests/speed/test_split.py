"""A file cut into parts and scanned part by part gives the scan (and so the diagnosis) a whole
read gives: on every corpus case, cut into many small parts, and on generated big files with
faults planted where the cuts fall.

The corpus check runs the parts in this process (each on its own scanner, as a worker process
has its own copy), with blocks of 512 bytes so that a few-KB log is cut several times; the big
files go through the real process pool with the real block size.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from firstfault.pipeline import diagnose_paths
from firstfault.ingest import reader
from firstfault.ingest.sources import expand_inputs
from firstfault.ingest.timestamps import Clock
from firstfault.match import parallel, split
from firstfault.match.scanner import Scanner
from firstfault.render.contract import render as render_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SETS = ("dev", "upstream", "real")
SMALL_BLOCK = 512


def cases(name: str) -> list[Path]:
    return sorted(path for path in (FIXTURES / name).iterdir() if path.is_dir())


def split_scan(workers: list[Scanner], main: Scanner, item):
    """What scan_files does with a cut file, its parts run here, each by one of the `workers`'
    scanners (kept from part to part and file to file, as a worker process keeps its own copy);
    None when the file is not cut."""
    parts = split.plan_parts(item, split.file_size(item), len(workers), main.clock.reference_year)
    if not parts:
        return None
    scans = [split.scan_part(workers[part.index % len(workers)], item, part, penultimate=part.index == len(parts) - 2)
             for part in parts]
    return split.merge_parts(main, item, parts, scans)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(reader, "BLOCK_BYTES", SMALL_BLOCK)
    # as with the real sizes (64 KiB, 4 MiB), a line kept whole is shorter than a block
    monkeypatch.setattr(reader, "MAX_LINE", SMALL_BLOCK // 2)
    monkeypatch.setattr(reader, "_WINDOW", SMALL_BLOCK // 4)
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 2 * SMALL_BLOCK)


@pytest.mark.parametrize("corpus", SETS)
def test_every_corpus_file_cut_in_parts_scans_as_a_whole(corpus, signatures, small_blocks):
    cut = 0
    workers = [Scanner(signatures) for _ in range(4)]
    whole, parted = Scanner(signatures), Scanner(signatures)
    for case in cases(corpus):
        inputs, _ = expand_inputs([str(case)])
        whole.clock, parted.clock = Clock(), Clock()  # each case a diagnosis of its own
        for item in inputs:
            expected = whole.scan(item)
            merged = split_scan(workers, parted, item)
            if merged is None:
                parted.scan(item)
                continue
            cut += 1
            assert merged == expected, f"{case.name}/{item.relative}"
            assert parted.clock.reference_year == whole.clock.reference_year, f"{case.name}/{item.relative}"
    assert cut >= 20  # the check really cut files


def write_big_console(path: Path, lines: int, planted: dict[int, str], prefix=lambda n: "") -> None:
    """A console of `lines` timed step lines with `planted` lines (line number -> text)."""
    with open(path, "w") as handle:
        for number in range(1, lines + 1):
            if number in planted:
                handle.write(planted[number] + "\n")
                continue
            seconds = number // 1000
            handle.write(f"{prefix(number)}2026-11-02 10:{seconds // 60 % 60:02d}:{seconds % 60:02d},000 INFO "
                         f"step {number:07d} loss {1 + (number % 97) / 100:.2f} tokens/s 51234 padding {'x' * 40}\n")


def diagnoses_agree(paths, monkeypatch) -> str:
    monkeypatch.setenv(parallel.WORKERS_VARIABLE, "1")
    serial = render_json(diagnose_paths(paths))
    monkeypatch.setenv(parallel.WORKERS_VARIABLE, "2")
    spread = render_json(diagnose_paths(paths))
    assert spread == serial
    return serial


@pytest.fixture
def cut_small(monkeypatch):
    """Blocks of 1 MiB, and files from 4 MiB up are cut (two workers: a 12 MiB file in parts of
    3, 3, 2, 2 and 2 MiB)."""
    monkeypatch.setattr(reader, "BLOCK_BYTES", 1024 * 1024)
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 4 * 1024 * 1024)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1024 * 1024)


def planted_at_cuts(total_lines: int, line_bytes: int, workers: int, texts: list[str]) -> dict[int, str]:
    """Put `texts` around where the cuts of a file of total_lines lines fall."""
    planted = {}
    for cut_index, offset in enumerate(split.cut_offsets(total_lines * line_bytes, workers, reader.BLOCK_BYTES)):
        line = offset // line_bytes
        for shift, text in enumerate(texts):
            planted[line - 1 + shift + cut_index % 2] = text
    return planted


LINE_BYTES = len("2026-11-02 10:00:00,000 INFO step 0000001 loss 1.01 tokens/s 51234 padding " + "x" * 40 + "\n")


def test_faults_planted_at_the_cuts_give_the_serial_diagnosis(tmp_path, cut_small, monkeypatch):
    fault = ("RuntimeError: CUDA error: device-side assert triggered\n"
             "CUDA kernel errors might be asynchronously reported at some other API call")
    timeout = ("[rank1]:[E1102 10:07:41.000000 101 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=912, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
               "ran for 600010 milliseconds before timing out.")
    lines = 110_000  # ~12 MB
    planted = planted_at_cuts(lines, LINE_BYTES, 2, [fault.split("\n")[0], fault.split("\n")[1], timeout])
    log = tmp_path / "train.log"
    write_big_console(log, lines, planted)
    assert log.stat().st_size >= split.SPLIT_MIN_BYTES
    inputs, _ = expand_inputs([str(log)])
    parts = split.plan_parts(inputs[0], log.stat().st_size, 2, None)
    assert len(parts) >= 3
    data = log.read_bytes()
    planted_at = [found.start() for found in re.finditer(rb"RuntimeError: CUDA error", data)]
    for part in parts[1:]:
        assert any(abs(part.start - offset) < 3 * LINE_BYTES for offset in planted_at)  # a fault at every cut
    report = diagnoses_agree([str(log)], monkeypatch)
    assert "cuda-device-side-assert" in report


def test_a_part_that_reads_one_rank_after_several_is_rescanned(tmp_path, cut_small, monkeypatch, signatures):
    """Four ranks write the first lines, then only rank 0: a later part, read alone, takes its
    lines for one process's; the merge sees that a whole read would not, and scans on from there
    itself (same scan, only slower)."""
    lines = 110_000
    log = tmp_path / "train.log"
    write_big_console(log, lines, {100_000: "[rank0]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"},
                      prefix=lambda n: f"[rank{n % 4 if n < 2000 else 0}]:")
    inputs, _ = expand_inputs([str(log)])
    item = inputs[0]
    parts = split.plan_parts(item, log.stat().st_size, 2, None)
    assert len(parts) >= 3
    scans = [split.scan_part(Scanner(signatures), item, part, part.index == len(parts) - 2) for part in parts]
    merging = Scanner(signatures)
    rescans = []
    scan_blocks = merging.scan_blocks
    monkeypatch.setattr(merging, "scan_blocks", lambda *args, **kwargs: rescans.append(args) or scan_blocks(*args, **kwargs))
    merged = split.merge_parts(merging, item, parts, scans)
    assert rescans  # the merge scanned on itself
    assert merged == Scanner(signatures).scan(item)
    report = diagnoses_agree([str(log)], monkeypatch)
    assert "cuda-oom" in report


def _parts_of_a_console_whose_last_part_holds_fewer_ranks(tmp_path, signatures):
    """Four ranks write the first lines, then only ranks 0 and 1 (still several, so no part is
    rescanned): the last part's worker found the tails of two rank streams, the merge knows four,
    and finds them again from the file's last two blocks."""
    log = tmp_path / "train.log"
    write_big_console(log, 110_000, {109_990: "[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"},
                      prefix=lambda n: f"[rank{n % 4 if n < 30_000 else n % 2}]:")
    item = expand_inputs([str(log)])[0][0]
    parts = split.plan_parts(item, log.stat().st_size, 2, None)
    assert len(parts) >= 3
    scans = [split.scan_part(Scanner(signatures), item, part, part.index == len(parts) - 2) for part in parts]
    return log, item, parts, scans


def test_the_merge_reads_the_files_last_blocks_again_when_it_needs_them(tmp_path, cut_small, monkeypatch, signatures):
    """The workers send where the file's last blocks lie, not their bytes; the merge reads them
    again when it must find the tails itself."""
    log, item, parts, scans = _parts_of_a_console_whose_last_part_holds_fewer_ranks(tmp_path, signatures)
    assert all(tail.data is None for scanned in scans for tail in scanned.tail_blocks)  # spans, not bytes
    read_again = []
    read_span = reader.read_span
    monkeypatch.setattr(reader, "read_span", lambda *args: read_again.append(args) or read_span(*args))
    merged = split.merge_parts(Scanner(signatures), item, parts, scans)
    assert read_again
    assert merged == Scanner(signatures).scan(item)
    assert merged.tails  # found again from the blocks read again


def test_a_file_cut_short_before_the_merge_is_reported_partly_read(tmp_path, cut_small, signatures):
    """The file shrank between the workers' reads and the merge: its last blocks cannot be read
    again; the scan says so instead of failing."""
    log, item, parts, scans = _parts_of_a_console_whose_last_part_holds_fewer_ranks(tmp_path, signatures)
    with open(log, "r+b") as handle:
        handle.truncate(log.stat().st_size // 2)
    merged = split.merge_parts(Scanner(signatures), item, parts, scans)
    assert "changed while firstfault read it" in merged.stats.truncated
    assert merged.tails == {}
    assert any(hit.text.startswith("[rank1]: RuntimeError: CUDA out of memory") for hit in merged.hits)
