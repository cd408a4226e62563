"""What the environment and odd inputs must not break: damaged gzip (everything before the
damage kept, at any offset), UTF-16 logs, file names with glob characters, very deep folders,
`**` over links to parent folders, files gone mid-run, an unusable cache directory."""
from __future__ import annotations

import gzip
import io
import json
import os
import random
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from firstfault.ingest.reader import ReadStats, read_blocks
from firstfault.ingest.sources import InputFile, expand_inputs
from firstfault.kb import load_knowledge_base
from firstfault.pipeline import scanner_for

from .conftest import REPO, run_cli

FAULT = "[rank0]: RuntimeError: CUDA error: device-side assert triggered\n"


def _noise(lines: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    return "".join(f"step {i} loss {rng.random():.6f} lr {rng.random():.3e} id {rng.getrandbits(40):x}\n" for i in range(lines)).encode()


def _recoverable(compressed: bytes) -> int:
    """How many bytes zlib can decode before it finds the damage, fed one byte at a time."""
    decoder, out = zlib.decompressobj(31), 0
    for index in range(len(compressed)):
        try:
            out += len(decoder.decompress(compressed[index:index + 1]))
        except zlib.error:
            break
    return out


class _Unseekable(io.RawIOBase):
    """A pipe: bytes that can be read once, in order."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, size: int = -1) -> bytes:
        return self._data.read(size)


def _read_all(item: InputFile) -> tuple[bytes, ReadStats]:
    stats = ReadStats()
    data = b"\n".join(block.data for block in read_blocks(item, stats, decode=False))
    return data, stats


@pytest.mark.parametrize("offset", [1_000, 100_000, 200_000, 255_000, -5])
@pytest.mark.parametrize("source", ["file", "memory"])
def test_gzip_damage_keeps_everything_before_it(tmp_path, offset, source):
    plain = _noise(60_000)  # ~3.4 MB that compresses to ~1.5 MB: the first 256 KiB hold ~500 KB
    compressed = bytearray(gzip.compress(plain))
    position = offset if offset > 0 else len(compressed) + offset  # -5: the CRC of the trailer
    compressed[position] ^= 0xFF
    damaged = bytes(compressed)
    clean = len(zlib.decompressobj(31).decompress(damaged[:position]))  # what the bytes before the damage hold
    path = tmp_path / "rank0.log.gz"
    path.write_bytes(damaged)
    item = InputFile(display="rank0.log.gz", relative="rank0.log.gz", path=path) if source == "file" else \
        InputFile(display="rank0.log.gz", relative="rank0.log.gz", content=damaged)
    data, stats = _read_all(item)
    assert stats.truncated, "the damage is reported"
    # all of it, up to the line the damage cuts (what a decoder emits past the damage before it
    # notices is kept too: it cannot be told from the log)
    assert len(data) >= clean - 2000, (len(data), clean)
    assert data[:clean - 2000] == plain[:clean - 2000]


def test_gzip_from_stdin_keeps_everything_before_damage():
    from firstfault.ingest.gzip_stream import GzipStream

    plain = _noise(20_000)
    compressed = bytearray(gzip.compress(plain))
    compressed[len(compressed) // 2] ^= 0xFF
    stream = GzipStream(_Unseekable(bytes(compressed)))  # stdin: zlib with a copy of its state per piece
    out = bytearray()
    with pytest.raises(gzip.BadGzipFile):
        while True:
            piece = stream.read(1 << 16)
            if not piece:
                break
            out += piece
    assert len(out) >= _recoverable(bytes(compressed)) - 1


def test_a_gzip_input_stops_at_its_expansion_limit():
    packed = gzip.compress(b"line\n" * 2_000_000)
    item = InputFile(display="big.gz", relative="big.gz", content=packed, max_bytes=1_000_000)
    data, stats = _read_all(item)
    assert len(data) <= 1_000_000 and "limit" in stats.truncated


def test_utf16_logs_are_read(tmp_path):
    (tmp_path / "powershell.log").write_bytes(("\ufeffstarting\r\n" + FAULT.replace("\n", "\r\n")).encode("utf-16-le"))
    (tmp_path / "big-endian.log").write_bytes(("\ufeffstarting\n" + FAULT).encode("utf-16-be"))
    (tmp_path / "no-bom.log").write_bytes(("starting job\n" + FAULT).encode("utf-16-le"))
    result = run_cli("diagnose", str(tmp_path), "--format", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"
    assert not report["inputs"]["skipped"], report["inputs"]["skipped"]
    assert len(report["inputs"]["files"]) == 3


def test_a_utf16_paste_is_read_back_as_any_paste_is(tmp_path):
    """A hard-wrapped console saved by PowerShell (UTF-16 with a BOM, CRLF): its wrapped lines are
    joined as a UTF-8 paste's are, so DeepSpeed's report of the kill, broken over three lines, is
    read whole (its command's start and its return code on one line)."""
    source = Path(__file__).resolve().parents[1] / "fixtures" / "upstream" / "host-oom-killed-anomalygpt-deepspeed-sigkill-local-rank1"
    text = (source / "logs" / "train.log").read_text()
    (tmp_path / "train.log").write_bytes(("\ufeff" + text.replace("\n", "\r\n")).encode("utf-16-le"))
    report = json.loads(run_cli("diagnose", str(tmp_path / "train.log"), "--format", "json").stdout)
    assert report["primary"]["failure_id"] == "host-oom-killed"
    said = report["primary"]["evidence"][0]["text"]
    assert "'--local_rank=1'" in said and "exits with return code = -9" in said


def test_a_file_named_with_glob_characters_is_taken_literally(tmp_path):
    (tmp_path / "rank[1].log").write_text(FAULT.replace("rank0", "rank1"))
    (tmp_path / "rank1.log").write_text("[rank1]: all good\n")
    inputs, skipped = expand_inputs([str(tmp_path / "rank[1].log")])
    assert [item.path.name for item in inputs] == ["rank[1].log"] and not skipped
    inputs, _ = expand_inputs([str(tmp_path / "rank[0-9].log")])  # a real pattern is still a pattern
    assert [item.path.name for item in inputs] == ["rank1.log"]


@pytest.fixture
def deep_folder():
    """A folder 1,100 levels deep, made and removed one level at a time: os.makedirs and
    shutil.rmtree recurse, and so does pytest's clean-up of its own temporary folders, so the
    tree lives outside them and is removed here whatever happens."""
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="firstfault-deep-"))
    levels = [folder]
    try:
        for _ in range(1100):
            levels.append(levels[-1] / "d")
            levels[-1].mkdir()
        (levels[-1] / "rank0.log").write_text(FAULT)
        yield folder
    finally:
        for level in reversed(levels):
            for child in level.iterdir():
                if not child.is_dir():
                    child.unlink()
            level.rmdir()


def test_a_folder_1100_levels_deep(deep_folder):
    (deep_folder / "top.log").write_text("hello\n")
    result = run_cli("diagnose", str(deep_folder), "--format", "json")
    (deep_folder / "top.log").unlink()
    assert "RecursionError" not in result.stderr.decode() and "Traceback" not in result.stderr.decode()
    assert result.returncode == 1
    assert json.loads(result.stdout)["primary"]["failure_id"] == "cuda-device-side-assert"


def test_a_double_star_glob_over_links_to_parent_folders_ends(tmp_path):
    root = tmp_path / "logs"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "rank0.log").write_text(FAULT)
    for name, target in (("up", ".."), ("top", "../.."), ("self", ".")):
        os.symlink(target, root / "a" / "b" / name)
    os.symlink("..", root / "a" / "loop")
    started = time.monotonic()
    result = run_cli("diagnose", str(root / "**" / "*.log"), "--format", "json")
    assert time.monotonic() - started < 60
    assert result.returncode == 1, result.stderr.decode()
    assert json.loads(result.stdout)["inputs"]["files"] == [str(root / "a" / "b" / "rank0.log")]


def test_links_to_folders_inside_a_walk_are_named_not_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "rank0.log").write_text(FAULT)
    os.symlink(tmp_path, tmp_path / "real" / "parent")
    inputs, skipped = expand_inputs([str(tmp_path)])
    assert [item.path.name for item in inputs] == ["rank0.log"]
    assert [(os.path.basename(item.source), "link to a folder" in item.reason) for item in skipped] == [("parent", True)]


def test_a_file_deleted_mid_run_is_called_so(tmp_path):
    (tmp_path / "rank0.log").write_text(FAULT)
    (tmp_path / "rank1.log").write_text("[rank1]: fine\n")
    inputs, _ = expand_inputs([str(tmp_path)])
    (tmp_path / "rank1.log").unlink()
    scanner = scanner_for(load_knowledge_base())
    scans = [scanner.scan(item) for item in inputs]
    errors = {scan.input.path.name: scan.error for scan in scans}
    assert errors["rank0.log"] == ""
    assert "deleted or moved while firstfault ran" in errors["rank1.log"]
    assert "not a regular file" not in errors["rank1.log"]


def test_an_unusable_cache_directory_is_no_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache directory would go")
    (tmp_path / "rank0.log").write_text(FAULT)
    environment = {key: value for key, value in os.environ.items() if key != "FIRSTFAULT_NO_CACHE"}
    environment["XDG_CACHE_HOME"] = str(blocker)
    result = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(tmp_path / "rank0.log")],
                            capture_output=True, timeout=120, cwd=REPO, env=environment)
    assert result.returncode == 1, result.stderr.decode()
    assert "Traceback" not in result.stderr.decode() and "device-side assert" in result.stdout.decode()
