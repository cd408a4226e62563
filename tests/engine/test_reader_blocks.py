"""A plain file on disk is read block by block with one exact read each (reader._plain_blocks);
the blocks, line numbers and read counts are those of the general loop (reader._blocks), which
reads a block's worth and cuts it at its last line end: on generated files whose lines are short,
long (past the probe, past a block, past MAX_LINE), empty, at exact block multiples, without a
final line end, read whole and in ranges."""
from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firstfault.ingest import reader
from firstfault.ingest.reader import ReadStats, read_blocks
from firstfault.ingest.sources import InputFile

BLOCK = 4096
PROBE = 256


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(reader, "BLOCK_BYTES", BLOCK)
    monkeypatch.setattr(reader, "TAIL_PROBE", PROBE)
    monkeypatch.setattr(reader, "MAX_LINE", 3000)
    monkeypatch.setattr(reader, "_WINDOW", 1500)


def _line(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.04:
        return b"x" * rng.randint(PROBE, 2 * BLOCK)  # longer than the probe, or than a block
    if kind < 0.08:
        return b""
    if kind < 0.10:
        return "é█ ".encode() * rng.randint(1, 40)
    return b"step %d loss=%.3f" % (rng.randint(0, 10**6), rng.random()) + b" ." * rng.randint(0, 60)


def _files(tmp_path: Path) -> list[Path]:
    rng = random.Random(7)
    paths = []
    for index in range(40):
        body = b"\n".join(_line(rng) for _ in range(rng.randint(1, 300)))
        if index % 3:
            body += b"\n"
        if index % 10 == 4:
            body = body[:BLOCK * 3] if len(body) > BLOCK * 3 else body  # ends exactly at a read
        if index % 10 == 5:
            body = body[:BLOCK * 2 - 1] + b"\n" + body[BLOCK * 2:]  # a line ends at a read's last byte
        path = tmp_path / f"f{index}.log"
        path.write_bytes(body)
        paths.append(path)
    return paths


def _general(path: Path, start: int = 0, stop: int | None = None):
    """What the reader gave before: the general loop over a buffered file."""
    stats = ReadStats()
    raw = open(path, "rb")
    with raw:
        if start or stop is not None:
            begin = reader.range_start(raw, start)
            if begin is None:
                return None
            raw.seek(begin)
            pending = raw.read(start - begin)
            blocks = reader._blocks(raw, stats, False, pending=pending, first=start == 0,
                                    budget=None if stop is None else stop - start)
        else:
            blocks = reader._blocks(raw, stats, False)
        return _described(blocks, stats)


def _described(blocks, stats: ReadStats):
    seen = [(block.first_line, block.data, block.line_count) for block in blocks]
    return seen, (stats.lines, stats.bytes, stats.long_lines)


def _plain(path: Path, start: int = 0, stop: int | None = None):
    stats = ReadStats()
    item = InputFile(display=path.name, relative=path.name, path=path)
    with open(path, "rb") as raw:
        if (start or stop is not None) and reader.range_start(raw, start) is None:
            return None
    return _described(read_blocks(item, stats, decode=False, start=start, stop=stop), stats)


def test_plain_reads_give_the_general_loops_blocks(tmp_path: Path):
    for path in _files(tmp_path):
        assert _plain(path) == _general(path), path.name


def test_plain_reads_of_ranges_give_the_general_loops_blocks(tmp_path: Path):
    compared = 0
    for path in _files(tmp_path):
        size = path.stat().st_size
        cuts = list(range(0, size + BLOCK, BLOCK))
        for start, stop in zip(cuts, cuts[2:] + [None]):
            expected = _general(path, start, stop)
            assert _plain(path, start, stop) == expected, (path.name, start, stop)
            compared += expected is not None
    assert compared > 100


def test_a_file_that_is_not_plain_text_still_goes_the_general_way(tmp_path: Path):
    import gzip

    text = b"line one\nline two\n" * 500
    packed = tmp_path / "log.gz"
    packed.write_bytes(gzip.compress(text))
    wide = tmp_path / "ps.log"
    wide.write_bytes(text.decode().encode("utf-16"))
    for path in (packed, wide):
        stats = ReadStats()
        blocks = list(read_blocks(InputFile(display=path.name, relative=path.name, path=path), stats, decode=False))
        assert b"".join(block.data + b"\n" for block in blocks) == text
    assert not reader._plain_text_file(io.BytesIO(text))  # in memory: no descriptor


@pytest.mark.parametrize("where", ["file", "memory"])
def test_a_last_line_without_a_line_end_stays_in_the_block_of_the_lines_before_it(tmp_path: Path, where):
    # a process killed mid-write leaves its last line without '\n': the lines before it are its context
    text = b"[ERROR] report of rank 3\ncontinued\n] exits with return code = -9"
    path = tmp_path / "cut.log"
    path.write_bytes(text)
    item = (InputFile(display=path.name, relative=path.name, path=path) if where == "file"
            else InputFile(display="pasted", relative="pasted", content=text))
    stats = ReadStats()
    blocks = list(read_blocks(item, stats, decode=False))
    assert [(block.first_line, block.line_count, block.data) for block in blocks] == [(1, 3, text)]
    assert stats.lines == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=300), min_size=0, max_size=40), st.integers(min_value=0, max_value=4))
def test_newlines_counts_as_bytes_count_does(lengths, scale):
    """Long lines are counted by deleting their ends, short ones byte by byte: the same count."""
    from firstfault.ingest.reader import COUNT_BY_DELETION_MIN, newlines

    line = b"".join(b"x" * length + b"\n" for length in lengths) or b"\n"
    data = line * (COUNT_BY_DELETION_MIN // len(line) + 1) * scale + b"tail without an end"
    assert newlines(data) == data.count(b"\n")
