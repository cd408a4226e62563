"""Every stage is linear in its input: the same work on 1x and 10x the input, in one run, must
take less than 25x the CPU time (a quadratic stage takes ~100x). CPU time of this process, best
of a few runs, so other work on the machine does not count; bounds are generous on purpose.
Stages: reading (plain, gzip, single-line gzip, UTF-16), masking (every detector's own text
repeated, hex-word lines), host pseudonyms, scanning, correlating, rendering, side files
(error records, flight-recorder dumps, stack dumps, dump discovery), upload expansion."""
from __future__ import annotations

import gc
import gzip
import io
import json
import pickle
import tarfile
import time
import zlib

import pytest

from firstfault.dumps import analyze_contents, parse_dump, parse_stack_text
from firstfault.ingest.error_records import parse_error_record, record_as_log
from firstfault.ingest.reader import ReadStats, read_blocks
from firstfault.ingest.sources import InputFile
from firstfault.kb import load_knowledge_base
from firstfault.mask import HostMasker, load_masker
from firstfault.mask.catalogue import split_example
from firstfault.pipeline import diagnose_scans, scanner_for
from firstfault.render.contract import render as render_json
from firstfault.render.markdown import render as render_markdown
from firstfault.render.terminal import TerminalReport
from firstfault.web.archives import Budget, expand
from firstfault.web.limits import Limits

FACTOR = 10
BOUND = 25  # x the time of the 1x input
KB = load_knowledge_base()
MASKER = load_masker()


def _cpu(function, argument) -> float:
    started = time.process_time()
    function(argument)
    return time.process_time() - started


def assert_linear(function, make, unit: int, floor: float = 0.003, repeat: int = 3) -> None:
    """`function(make(n))` for n = unit and FACTOR * unit: the larger may cost < BOUND x the smaller.
    The garbage collector is off while timing: a full collection walks every object of the test
    session, a cost that has nothing to do with the input."""
    small, large = make(unit), make(unit * FACTOR)
    function(small)  # warm up: compiled patterns, caches
    gc.collect()
    gc.disable()
    try:
        one = min(_cpu(function, small) for _ in range(repeat))
        ten = min(_cpu(function, large) for _ in range(max(1, repeat - 1)))
    finally:
        gc.enable()
    assert ten < BOUND * max(one, floor), f"1x {one * 1000:.1f} ms, {FACTOR}x {ten * 1000:.1f} ms: {ten / max(one, 1e-9):.0f}x"


def _read(content: bytes) -> int:
    stats = ReadStats()
    return sum(len(block.data) for block in read_blocks(InputFile(display="x", relative="x", content=content), stats, decode=False))


def _log(lines: int) -> bytes:
    rows = []
    for index in range(lines):
        rank = index % 8
        rows.append(f"[rank{rank}]:2026-03-01 10:{index // 6000 % 60:02d}:{index // 100 % 60:02d},{index % 1000:03d} INFO train: "
                    f"step {index} loss {1 / (index + 1):.5f} lr 3.0e-04")
        if index % 97 == 0:
            rows.append(f"gpu-node-0{rank}:22{rank}1:22{rank}1 [{rank}] NCCL INFO Channel 00/24 : 0 1 2 3 4 5 6 7")
        if index % 501 == 0:
            rows.append(f"[rank{rank}]: [W reducer.cpp:1300] Warning: find_unused_parameters=True was specified HF_TOKEN=hf_{index:034d}")
    rows.append("[rank3]: RuntimeError: CUDA error: device-side assert triggered")
    return ("\n".join(rows) + "\n").encode()


@pytest.mark.parametrize("form", ["plain", "gzip", "utf16"])
def test_reading(form):
    def make(lines):
        data = _log(lines)
        return gzip.compress(data, 1) if form == "gzip" else data.decode().encode("utf-16") if form == "utf16" else data
    assert_linear(_read, make, 20_000)


def test_reading_a_single_line_gzip():
    def make(mebibytes):
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)
        return b"".join([*(packer.compress(b"a" * (1 << 20)) for _ in range(mebibytes)), packer.flush()])
    assert_linear(_read, make, 8, repeat=2)


def _detector_lines():
    """Per detector: its literals, examples and near-misses glued together, the text most
    likely to make its own pattern work hard."""
    for detector in MASKER.detectors:
        parts = list(detector.literals) + [split_example(example)[0] for example in detector.spec.examples]
        yield detector.spec.id, " ".join(parts + list(detector.spec.near_misses))


@pytest.mark.parametrize("name,text", list(_detector_lines()), ids=[name for name, _ in _detector_lines()])
def test_masking_each_detectors_own_text(name, text):
    assert_linear(MASKER.mask, lambda size: (text * (size // len(text) + 1))[:size], 2_000)


@pytest.mark.parametrize("text", ["wandb: api key " + " ".join(f"{n:040x}" for n in range(3)), "a" * 50, "=" * 50, "a=" * 25,
                                  "'--password', " * 4, "\\\"token\\\": \\\"" * 3, "-----BEGIN PRIVATE KEY-----", "x@" * 20,
                                  "home/" * 10, "://a:b@" * 6, "eyJ" * 15, "Cookie: a=b; " * 4])
def test_masking_pathological_lines(text):
    assert_linear(MASKER.mask, lambda size: (text * (size // len(text) + 1))[:size], 2_000)


def test_masking_a_file_of_hex_word_lines():
    line = "wandb: syncing " + " ".join(f"{n * 7919:040x}" for n in range(1500))  # ~60 k characters

    def mask_all(lines):
        for item in lines:
            MASKER.mask(item)
    assert_linear(mask_all, lambda count: [line] * count, 2, repeat=2)


# Lines built to cost the masker most: a secret-named key (or flag, or query parameter) every
# few characters. Per byte they may cost a few times what a log line costs, never more: a 64 KB
# line of `password=` once re-read a 2 KB value per key (~0.3 s a line).
ADVERSARIAL = ["password=", "token: ", "api_key=abc&", "--password ", '{"password": ', "password='", "secret_key=x ",
               "?token=a&token=", "https://u:p@h/", "Authorization: Bearer "]
WORST_PER_BYTE = 10  # x a normal log's masking cost per byte, same size, same run


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_masking_cost_per_byte_is_bounded_on_adversarial_lines(unit):
    size = 64_000
    normal = _log(800).decode()[:size]
    hostile = (unit * (size // len(unit) + 1))[:size]
    MASKER.mask(hostile[:200])
    gc.collect()
    gc.disable()
    try:
        base = min(_cpu(MASKER.mask, normal) for _ in range(3))
        cost = min(_cpu(MASKER.mask, hostile) for _ in range(3))
    finally:
        gc.enable()
    assert cost < WORST_PER_BYTE * max(base, 0.003), f"{unit!r}: {cost * 1000:.1f} ms, a log line {base * 1000:.1f} ms"


def test_host_pseudonyms():
    masker = HostMasker()
    hosts = {f"gpu-node-{index:03d}" for index in range(64)}

    def make(size):
        return " ".join(f"gpu-node-{index % 300:03d}.cluster.example.com:29500 10.0.{index % 250}.{index % 200} fd00::{index:x}"
                        for index in range(size))
    assert_linear(lambda text: masker.mask_text(text, hosts), make, 300)


def _scan(content: bytes):
    return scanner_for(KB).scan(InputFile(display="rank.log", relative="rank.log", content=content))


def test_scanning():
    assert_linear(_scan, _log, 20_000, repeat=2)


def _timeouts(files: int) -> list:
    """Scans of `files` ranks, each timing out in the same collective after rank 3 failed."""
    scans = []
    for rank in range(files):
        line = (f"[rank{rank}]:[E0301 10:10:{rank % 60:02d}.{rank:06d} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
                f"collective operation timeout: WorkNCCL(SeqNum=9141, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                f"Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
        if rank == 3:
            line = "[rank3]: RuntimeError: CUDA error: device-side assert triggered"
        scans.append(scanner_for(KB).scan(InputFile(display=f"rank{rank}.log", relative=f"rank{rank}.log",
                                                    content=(line + "\n").encode() * 3)))
    return scans


def test_correlating():
    assert_linear(diagnose_scans, _timeouts, 40, repeat=2)


def test_rendering():
    def render_all(diagnosis):
        TerminalReport(KB).render(diagnosis)
        render_markdown(diagnosis, KB)
        render_json(diagnosis)
    assert_linear(render_all, lambda files: diagnose_scans(_timeouts(files)), 40)


def test_error_records():
    def make(frames):
        stack = "Traceback (most recent call last):\n" + "".join(f'  File "m{i}.py", line {i}, in f{i}\n    x = {i}\n' for i in range(frames))
        return json.dumps({"message": {"message": "IndexError: boom", "extraInfo": {"py_callstack": stack + "IndexError: boom",
                                                                                    "timestamp": "1764694000", "rank": 3}}})
    assert_linear(lambda text: record_as_log(parse_error_record(text)), make, 2_000)


def _dump(entries: int) -> bytes:
    items = [{"record_id": index, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": index + 1,
              "p2p_seq_id": 0, "op_id": index + 1, "profiling_name": "nccl:all_reduce", "is_p2p": False, "state": "completed",
              "input_sizes": [[1024, 4]], "output_sizes": [[1024, 4]], "input_dtypes": ["Float"], "output_dtypes": ["Float"],
              "time_created_ns": 10**18 + index, "frames": [{"name": "all_reduce", "filename": "train.py", "line": 10}]}
             for index in range(entries)]
    return pickle.dumps({"version": "2.10", "pg_config": {"0": {"name": "0", "ranks": "[0, 1]"}},
                         "pg_status": {"0": {"last_completed_collective": entries}}, "entries": items}, protocol=2)


def test_flight_recorder_dumps():
    assert_linear(lambda data: analyze_contents([("fr_trace_rank_0", data), ("fr_trace_rank_1", data)]), _dump, 400, repeat=2)
    assert_linear(lambda data: parse_dump(data, "fr_trace_rank_0", 0), _dump, 400, repeat=2)


def test_stack_dumps():
    def make(threads):
        return "".join(f'Thread {i} (idle): "worker-{i}"\n    wait (threading.py:320)\n    run (train.py:{i})\n' for i in range(threads))
    assert_linear(lambda text: parse_stack_text(text, "stacks_rank_0.txt", 0), make, 2_000)
    assert_linear(lambda text: parse_stack_text(text, "stacks_rank_0.txt", 0), lambda n: "    " + "a (b" * n + "\n", 2_000)


def test_dump_discovery_of_log_heads():
    def make(files):
        return [(f"rank{index}.log", _log(50)) for index in range(files)]
    assert_linear(analyze_contents, make, 20)


def test_upload_expansion():
    def make(members):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for index in range(members):
                data = _log(20)
                info = tarfile.TarInfo(f"logs/rank{index}.log")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return buffer.getvalue()
    assert_linear(lambda data: expand("logs.tar.gz", data, Budget(Limits())), make, 20)
    assert_linear(lambda data: expand("rank0.log.gz", data, Budget(Limits())), lambda n: gzip.compress(gzip.compress(_log(n))), 5_000)


def test_untimed_hits_read_each_earlier_line_for_its_time_once():
    """A block where every line is the same untimed error: each hit's time is the nearest earlier
    timed line's, looked for within 60 lines; the walks share what they read, so each line is
    parsed for a time about once, not up to 60 times (the same error on 500,000 lines took
    minutes)."""
    scanner = scanner_for(KB)
    parsed = 0
    parse = scanner.clock.parse

    def counting(text):
        nonlocal parsed
        parsed += 1
        return parse(text)

    scanner.clock.parse = counting
    lines = 5_000
    text = "2026-03-01 10:00:00,000 INFO start\n" + "[rank1]: RuntimeError: CUDA error: device-side assert triggered\n" * lines
    scan = scanner.scan(InputFile(display="rank1.log", relative="rank1.log", path=None, content=text.encode()))
    first_of_each_line = {}
    for hit in scan.hits:
        first_of_each_line.setdefault(hit.line, hit)
    assert len(first_of_each_line) == lines
    assert first_of_each_line[2].time is not None and first_of_each_line[2].time_inherited  # 1 line after the time
    assert first_of_each_line[61].time == first_of_each_line[2].time  # 60 lines after: still within the window
    assert first_of_each_line[62].time is None  # 61 lines after: beyond it, as before
    assert parsed < 4 * lines, f"{parsed} time parses for {lines} lines"
