"""Property tests (Hypothesis) over what reads untrusted input: the reader, the scanner, the
masker, the side-file loaders and the upload expander. Each property is bounded (examples and a
deadline per example) so the set runs in well under a minute; no example database is written."""
from __future__ import annotations

import gzip
import json
import math
import pickle
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firstfault.dumps import analyze_contents, parse_dump, parse_stack_text
from firstfault.dumps.stacks import looks_like_stacks
from firstfault.errors import InputError
from firstfault.ingest.error_records import parse_error_record, record_as_log
from firstfault.ingest.reader import ReadStats, Unreadable, read_blocks
from firstfault.ingest.sources import InputFile
from firstfault.kb import load_knowledge_base
from firstfault.mask import mask_secrets
from firstfault.pipeline import scanner_for
from firstfault.web.archives import Budget, expand
from firstfault.web.limits import InputRejected, Limits

FUZZ = settings(max_examples=120, deadline=timedelta(seconds=3), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SCANNER = scanner_for(load_knowledge_base())

# pieces real logs are made of, and the odd ones that break parsers
FRAGMENTS = st.sampled_from([
    "[rank", "[default", "]:", "[rank3]:[default3]:", " NCCL INFO ", "gpu-node-07:2231:2231 [3] NCCL ", "2026-03-01 10:00:00,123 ",
    "E1202 16:50:01.123000 ", "Traceback (most recent call last):", 'File "train.py", line 3, in <module>', "RuntimeError: ",
    "CUDA error: device-side assert triggered", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=",
    "exitcode: -9", "local_rank: ", "(pid: ", ")", "\r", "\t", "\x1b[2J", "\x00", "é", "中", "\ud800"[:0], "=", ":", "'", '"',
    "password=", "--token ", "://", "@", "eyJ", "-----BEGIN PRIVATE KEY-----", "9" * 5000, "1e999", "NaN", "home/", "\\",
])
LOG_TEXT = st.lists(st.one_of(FRAGMENTS, st.text(max_size=40), st.integers(-10**30, 10**30).map(str)), max_size=60).map("".join)


def _read(content: bytes) -> list[bytes]:
    stats = ReadStats()
    try:
        return [block.data for block in read_blocks(InputFile(display="x", relative="x", content=content), stats, decode=False)]
    except Unreadable:
        return []


@FUZZ
@given(st.binary(max_size=3000), st.sampled_from(["plain", "gzip", "gzip-cut", "gzip-flipped", "utf16"]))
def test_the_reader_never_raises(data, form):
    if form == "gzip":
        data = gzip.compress(data)
    elif form == "gzip-cut":
        data = gzip.compress(data)[:max(2, len(data) // 2)]
    elif form == "gzip-flipped":
        packed = bytearray(gzip.compress(data))
        packed[len(packed) // 2] ^= 0x55
        data = bytes(packed)
    elif form == "utf16":
        data = b"\xff\xfe" + data
    _read(data)


@FUZZ
@given(st.lists(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=80), min_size=1, max_size=50))
def test_plain_text_reads_back_line_for_line(lines):
    text = "\n".join(lines) + "\n"
    blocks = _read(text.encode())
    if not text.strip("\n"):
        return
    assert b"\n".join(blocks).decode() + "\n" == text


@FUZZ
@given(LOG_TEXT)
def test_the_scanner_never_raises(text):
    content = text.encode("utf-8", "surrogatepass")
    scan = SCANNER.scan(InputFile(display="rank1.log", relative="rank1.log", content=content))
    for hit in scan.hits:
        assert isinstance(hit.text, str)


@FUZZ
@given(st.one_of(LOG_TEXT, st.text(max_size=3000)))
def test_masking_never_raises_and_is_stable(text):
    masked = mask_secrets(text)
    assert isinstance(masked, str)
    assert mask_secrets(masked) == masked


SEPARATORS = st.text(alphabet=" :;,()[]|", min_size=1, max_size=6)  # what stands between words on a log line
SECRET = st.from_regex(r"[A-Za-z0-9]{12,28}", fullmatch=True)
FORMS = st.sampled_from([
    "password={}", "DB_PASSWORD={}", "--password {}", "--token={}", "'--api-key', '{}'", '"--secret", "{}"', '"token": "{}"',
    "api_key: {}", "postgres://trainer:{}@db:5432/runs", "redis://:{}@cache:6379", "https://x.example/a?token={}&page=2",
    "Authorization: Bearer {}", "Authorization: Basic {}", "MY_SERVICE_SECRET={}", "Cookie: session={}; theme=dark",
    "wandb.login(key='{}')", "machine h login u password {}", "secret_key='{}'", "client_secret={}", "x-api-key: {}",
])


@FUZZ
@given(SEPARATORS, FORMS, SECRET, SEPARATORS)
def test_a_planted_secret_never_survives(before, form, secret, after):
    line = "[rank1]: RuntimeError: boom" + before + form.format(secret) + after
    assert secret not in mask_secrets(line)


JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(10**40), 10**40), st.floats(allow_nan=True, allow_infinity=True),
                        st.text(max_size=20), st.sampled_from(["nan", "inf", "-inf", "1e300", "Infinity", ""]))
JSON_VALUES = st.recursive(JSON_LEAVES, lambda children: st.one_of(st.lists(children, max_size=5),
                                                                   st.dictionaries(st.text(max_size=12), children, max_size=5)),
                           max_leaves=40)
RECORD_KEYS = st.sampled_from(["message", "extraInfo", "py_callstack", "timestamp", "time", "rank", "local_rank", "pid", "host"])
RECORDS = st.fixed_dictionaries({"message": st.one_of(st.text(max_size=30), st.fixed_dictionaries(
    {"message": st.text(max_size=30), "extraInfo": st.dictionaries(RECORD_KEYS, JSON_LEAVES, max_size=8)}))})


@FUZZ
@given(st.one_of(RECORDS, JSON_VALUES))
def test_error_records_never_raise(value):
    for text in (json.dumps(value, allow_nan=True), json.dumps(value, allow_nan=True)[:-1]):
        record = parse_error_record(text)
        if record is not None:
            assert isinstance(record_as_log(record), str)


DUMP_ENTRY = st.dictionaries(st.sampled_from(["record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id",
                                              "profiling_name", "is_p2p", "state", "input_sizes", "output_sizes", "input_dtypes",
                                              "time_created_ns", "frames"]), JSON_VALUES, max_size=10)
DUMPS = st.fixed_dictionaries({"version": JSON_LEAVES, "entries": st.lists(DUMP_ENTRY, max_size=4)},
                              optional={"pg_config": JSON_VALUES, "pg_status": JSON_VALUES})


@FUZZ
@given(st.one_of(DUMPS, JSON_VALUES), st.sampled_from(["json", "pickle"]))
def test_flight_recorder_loading_raises_only_input_errors(value, form):
    data = json.dumps(value, allow_nan=True).encode() if form == "json" else pickle.dumps(value, protocol=2)
    try:
        parse_dump(data, "fr_trace_rank_0", 0)
    except InputError:
        pass
    report = analyze_contents([("fr_trace_rank_0", data), ("fr_trace_rank_1", data)])
    assert report is not None


@FUZZ
@given(st.binary(max_size=600))
def test_arbitrary_pickle_bytes_raise_only_input_errors(data):
    try:
        parse_dump(b"\x80\x02" + data, "fr_trace_rank_0", 0)
    except InputError:
        pass


@FUZZ
@given(LOG_TEXT)
def test_stack_dump_parsing_never_raises(text):
    assert looks_like_stacks(text.encode("utf-8", "surrogatepass")[:65536]) in (True, False)
    parse_stack_text(text, "stacks_rank_0.txt", 0)


@FUZZ
@given(st.binary(max_size=2000), st.sampled_from(["raw", "gzip", "gzip-gzip", "zip-magic", "tar-magic"]),
       st.text(max_size=40))
def test_upload_expansion_raises_only_refusals(data, form, name):
    if form == "gzip":
        data = gzip.compress(data)
    elif form == "gzip-gzip":
        data = gzip.compress(gzip.compress(data))
    elif form == "zip-magic":
        data = b"PK\x03\x04" + data
    elif form == "tar-magic":
        data = data.ljust(262, b"\0")[:257] + b"ustar" + data
    budget = Budget(Limits(max_total_bytes=1 << 20))
    try:
        expand(name or "upload.log", data, budget)
    except InputRejected as error:
        assert 400 <= error.status < 500
    assert budget.total_bytes <= 1 << 20
    assert all(not math.isnan(len(content)) for _, content in budget.files)


# how pasted and collected logs look: margins, quotes, collector times, tail headers, grep names,
# Compose's container names, grep -n's and cat -n's line numbers, posts' code blocks
PASTE_PIECES = st.sampled_from([
    "    ", "\t", "> ", "> > ", ">", "==> logs/rank1.log <==", "==> ", " <==", "logs/rank3.log:", "logs/rank3.log:12:",
    "rank0.log-7-", "--", "2026-12-05T08:00:00.123456789Z stderr F ", "2026-12-05T08:00:00Z ", "stdout P ",
    '{"log":"[rank1]: x\\n","stream":"stderr","time":"2026-12-05T08:00:00Z"}', '{"log":', "0: ", "  3: ", "[rank2]:",
    "x" * 80, "y" * 120, "\x1b[31m", "\x1b[0m", "\x1b(B", "\r\n", "\n", "",
    "trainer-1  | ", "trainer-12 | ", "proj_worker_2 |", " | ", "|", "1:", "2:", "3-", "12:", "     1\t", "     2\t",
    # a post's code blocks, their name lines, a reply's quote and signature
    "```", "```python", "````", "~~~", "`rank1.log`:", "**rank0.log**", "<summary>rank1.log</summary>", "### rank2.log",
    "rank3.log:", "<details>", "On Tue, Alex wrote:", "-- ",
])
PASTED_TEXT = st.lists(st.lists(st.one_of(PASTE_PIECES, FRAGMENTS, st.text(max_size=20)), max_size=8).map("".join),
                       min_size=1, max_size=40).map("\n".join)


@FUZZ
@given(PASTED_TEXT, st.integers(1, 20))
def test_pasted_forms_never_raise_and_keep_line_numbers_in_the_text(text, inputs):
    from firstfault.ingest.pasted import as_written

    data = text.encode("utf-8", "surrogatepass")
    lines = data.count(b"\n") + 1
    items = [InputFile(display=f"t{index}.log", relative=f"t{index}.log", content=data) for index in range(inputs)]
    pieces = as_written(items)
    assert pieces
    for piece in pieces:
        # a piece's lines are lines of the text: they start at a line of it and end by its last
        read = sum(block.line_count for block in _blocks_or_none(piece))
        assert 1 <= piece.first_line <= lines and piece.first_line + read - 1 <= lines


def _blocks_or_none(item):
    try:
        return list(read_blocks(item, ReadStats()))
    except Unreadable:
        return []


_EXPORT_KEYS = st.sampled_from(["textPayload", "message", "line", "log", "msg", "@message", "jsonPayload", "timestamp",
                                "@timestamp", "time", "resource", "labels", "logStreamName", "pod_name", "pod",
                                "kubernetes", "events", "entries", "x"])
_EXPORT_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=30), st.sampled_from(["2026-12-05T08:00:00Z", "2026-12-05 08:00:00.123456789+05:30",
                                                     "[rank1]: RuntimeError: x\n", "trainjob-worker-1"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_EXPORT_KEYS, inner, max_size=4)),
    max_leaves=12)


@FUZZ
@given(st.one_of(st.lists(st.dictionaries(_EXPORT_KEYS, _EXPORT_VALUES, max_size=5), max_size=8), _EXPORT_VALUES),
       st.booleans())
def test_a_platform_export_never_raises_and_keeps_every_records_line(value, as_lines):
    """Whatever JSON comes in, the export reader splits it or leaves it; what it splits keeps the
    line of every record whose line is text."""
    from firstfault.ingest.exported import export_pieces

    if as_lines and isinstance(value, list):
        data = b"\n".join(json.dumps(record).encode() for record in value)
    else:
        data = json.dumps(value).encode()
    pieces = export_pieces(data)
    kept = b"\n".join(content for _, _, content in pieces).decode("utf-8", "surrogatepass")
    records = value if isinstance(value, list) else []
    for record in records if pieces else []:
        text = record.get("textPayload") if isinstance(record, dict) else None
        if isinstance(text, str) and text.strip():
            assert text.rstrip("\r\n").split("\n")[-1] in kept
