"""A malformed side file (error.json, a flight-recorder dump, a stack dump) never crashes a run:
it is skipped (or read without the bad field) with a reason, and the logs beside it are
diagnosed, by the CLI and by the web app alike, in bounded time."""
from __future__ import annotations

import json
import pickle
import time

import pytest
from fastapi.testclient import TestClient

from firstfault.web.app import create_app

from .conftest import run_cli

FAULT_LOG = "[rank1]: RuntimeError: CUDA error: device-side assert triggered\n"
TRACEBACK = "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\nIndexError: index 7 is out of bounds for dimension 0 with size 4\n"


def _error_record(**extra) -> str:
    fields = {"py_callstack": TRACEBACK, "timestamp": "1764694000", **extra}
    return json.dumps({"message": {"message": "IndexError: index 7 is out of bounds", "extraInfo": fields}})


def _deep_json(depth: int) -> str:
    return '{"version": "2.10", "pg_config": {}, "entries": [{"input_sizes": ' + "[" * depth + "1" + "]" * depth + "}]}"


def _shared_lists_pickle() -> bytes:
    value: list = []
    for _ in range(26):  # 26 lists, 2**26 paths through them
        value = [value, value]
    return pickle.dumps({"version": "2.10", "pg_config": {}, "entries": [{"record_id": 0, "input_sizes": value}]}, protocol=2)


def _deep_pickle(depth: int) -> bytes:
    """{"version": "2.10", "entries": [[[...]]]} nested `depth` deep, written opcode by opcode
    (pickle.dumps itself would recurse): `depth` empty lists, each appended to the one below."""
    def text(value: str) -> bytes:
        return b"X" + len(value).to_bytes(4, "little") + value.encode()
    return b"\x80\x02}(" + text("version") + text("2.10") + text("entries") + b"]" * depth + b"a" * (depth - 1) + b"u."


BAD_RECORDS = {
    "timestamp-nan": _error_record(timestamp="nan"),
    "timestamp-inf": _error_record(timestamp="inf"),
    "timestamp-1e300": _error_record(timestamp=1e300),
    "timestamp-1e999": _error_record().replace('"1764694000"', "1e999"),
    "rank-infinity": _error_record().replace('"timestamp"', '"rank": Infinity, "timestamp"'),
    "rank-nan": _error_record().replace('"timestamp"', '"rank": NaN, "timestamp"'),
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_an_error_record_with_an_impossible_value_is_read_without_it(tmp_path, case):
    (tmp_path / "rank1.log").write_text(FAULT_LOG)
    record = tmp_path / "attempt_0" / "0" / "error.json"
    record.parent.mkdir(parents=True)
    record.write_text(BAD_RECORDS[case])
    result = run_cli("diagnose", str(tmp_path), "--format", "json")
    assert "Traceback (most recent call last):\n  File \"/" not in result.stderr.decode(), result.stderr.decode()
    assert result.returncode == 1, result.stderr.decode()
    report = json.loads(result.stdout)
    assert report["status"] == "failure"
    notes = [item["reason"] for item in report["inputs"]["skipped"] if item["source"].endswith("error.json")]
    assert notes and all("partly read" in note for note in notes), report["inputs"]["skipped"]
    assert any(evidence["source"].endswith("error.json") for finding in [report["primary"], *report["collateral"], *report.get("candidates", [])]
               for evidence in finding.get("evidence", [])) or "error.json" in json.dumps(report["inputs"]["files"])


HOSTILE_DUMPS = {
    "fr-infinity.json": ('{"version": "2.10", "pg_config": {}, "pg_status": {"0": {"last_completed_collective": Infinity}}, "entries": []}', "Infinity"),
    "fr-1e999.json": ('{"version": "2.10", "pg_config": {}, "entries": [{"record_id": 1e999, "collective_seq_id": 1}]}', "too large"),
    "fr-nested-900.json": (_deep_json(900), "deep"),
    "fr-nested-100000.json": (_deep_json(100_000), "deep"),
    "fr_trace_rank_0.pkl": (_shared_lists_pickle(), "items"),
    "fr_trace_rank_1.pkl": (_deep_pickle(200_000), "deep"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_DUMPS))
def test_a_hostile_flight_recorder_dump_is_skipped_and_the_logs_diagnosed(tmp_path, name):
    content, why = HOSTILE_DUMPS[name]
    (tmp_path / "rank1.log").write_text(FAULT_LOG)
    (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    started = time.monotonic()
    result = run_cli("diagnose", str(tmp_path), "--format", "json")
    elapsed = time.monotonic() - started
    assert "Traceback" not in result.stderr.decode(), result.stderr.decode()
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"
    reasons = {item["source"].rsplit("/", 1)[-1]: item["reason"] for item in report["inputs"]["skipped"]}
    assert name in reasons and why in reasons[name], reasons
    assert elapsed < 30, f"{name} took {elapsed:.1f} s"


def test_a_pathological_stack_dump_line_is_read_in_linear_time(tmp_path):
    (tmp_path / "rank1.log").write_text(FAULT_LOG)
    # a py-spy frame line of 200,000 characters without a closing parenthesis
    (tmp_path / "stacks_rank_0.txt").write_text("Thread 12 (idle): \"MainThread\"\n    " + "a (b" * 50_000 + "\n    f (x.py:1)\n")
    started = time.monotonic()
    result = run_cli("diagnose", str(tmp_path), "--format", "json")
    assert time.monotonic() - started < 30
    assert result.returncode == 1 and "Traceback" not in result.stderr.decode()


@pytest.mark.parametrize("name", sorted(HOSTILE_DUMPS))
def test_the_web_app_answers_200_not_500(name, tmp_path):
    content, _ = HOSTILE_DUMPS[name]
    data = content if isinstance(content, bytes) else content.encode()
    with TestClient(create_app(history=False)) as client:
        response = client.post("/api/diagnose", files=[("files", ("rank1.log", FAULT_LOG.encode())), ("files", (name, data))])
    assert response.status_code == 200, response.text[:500]
    assert response.json()["primary"]["failure_id"] == "cuda-device-side-assert"


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_the_web_app_reads_a_bad_error_record(case):
    with TestClient(create_app(history=False)) as client:
        response = client.post("/api/diagnose", json={"files": [{"name": "rank1.log", "text": FAULT_LOG},
                                                                 {"name": "attempt_0/0/error.json", "text": BAD_RECORDS[case]}]})
    assert response.status_code == 200, response.text[:500]
    assert response.json()["status"] == "failure"
