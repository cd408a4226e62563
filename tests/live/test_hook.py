"""`firstfault.install()` writes torchelastic-shaped records that the engine reads back exactly."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from firstfault.ingest.sources import InputFile
from firstfault.kb import load_knowledge_base
from firstfault.watch.engine import LiveEngine
from firstfault.ingest.error_records import error_record_input, parse_error_record, record_as_log
from firstfault.watch.follower import Follower

SCRIPT = """
import firstfault
firstfault.install({error_dir!r})
def load(labels):
    return labels[4]
load(["cat", "dog"])
"""


def _crash(tmp_path, error_dir=None, env=None):
    return subprocess.run([sys.executable, "-c", SCRIPT.format(error_dir=error_dir)], capture_output=True, text=True,
                          timeout=60, env={**env_base(), **(env or {})})


def env_base():
    import os

    return {key: value for key, value in os.environ.items() if key not in ("TORCHELASTIC_ERROR_FILE", "RANK")}


def test_record_to_torchelastic_error_file_and_traceback_still_printed(tmp_path):
    error_file = tmp_path / "attempt_0" / "3" / "error.json"
    error_file.parent.mkdir(parents=True)
    result = _crash(tmp_path, env={"TORCHELASTIC_ERROR_FILE": str(error_file), "RANK": "3", "LOCAL_RANK": "3"})
    assert result.returncode == 1
    assert "IndexError: list index out of range" in result.stderr  # the previous hook still ran
    data = json.loads(error_file.read_text())
    message = data["message"]
    assert message["message"] == "IndexError: list index out of range"
    assert message["extraInfo"]["py_callstack"].startswith("Traceback (most recent call last):")
    assert message["extraInfo"]["timestamp"].isdigit()  # as torchelastic writes it
    assert message["extraInfo"]["rank"] == 3
    record = parse_error_record(error_file.read_bytes())
    assert record.rank == 3 and record.time is not None


def test_record_to_error_dir_named_by_rank(tmp_path):
    _crash(tmp_path, error_dir=str(tmp_path / "errors"), env={"RANK": "5"})
    assert parse_error_record((tmp_path / "errors" / "rank5.json").read_bytes()).message.startswith("IndexError")
    assert not [path for path in (tmp_path / "errors").iterdir() if path.name.startswith(".")]


def test_records_diagnose_exactly(tmp_path):
    _crash(tmp_path, error_dir=str(tmp_path / "errors"), env={"RANK": "5"})
    kb = load_knowledge_base()
    engine = LiveEngine(kb)
    engine.ingest(Follower([str(tmp_path / "errors")]).poll(), now=0.0)
    diagnosis = engine.current_diagnosis()
    assert diagnosis.primary.failure_id == "user-code-exception"
    assert diagnosis.initiating.rank == 5
    assert diagnosis.initiating.time is not None
    path = tmp_path / "errors" / "rank5.json"
    item = error_record_input(InputFile(display=str(path), relative="errors/rank5.json", path=path))
    assert item is not None and b"[rank5]:" in item.content
    assert error_record_input(InputFile(display="x.log", relative="x.log", content=b"{}")) is None


def test_torchelastic_own_record_shape_without_firstfault_fields():
    raw = json.dumps({"message": {"message": "ValueError: bad", "extraInfo": {
        "py_callstack": "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad\n",
        "timestamp": "1764694000"}}})
    record = parse_error_record(raw)
    assert record.time == 1764694000.0 and record.rank is None
    text = record_as_log(record)
    assert text.count("\n") == 3 and "2025-12-02T16:46:40" in text
    assert parse_error_record(b"{\"config\": 1}") is None
    assert parse_error_record(b"not json") is None


@pytest.mark.parametrize("rank", ["\u00b9", "\u0663x", "-", ""])
def test_a_record_whose_rank_is_no_number_is_read_without_a_rank(rank):
    # found by tests/engine/test_fuzz.py: '\u00b9'.isdigit() is true and int() refuses it
    record = parse_error_record(json.dumps({"message": {"message": "ValueError: bad", "extraInfo": {"rank": rank}}}))
    assert record is not None and record.rank is None


def test_engine_keeps_only_the_latest_version_of_a_record(tmp_path):
    engine = LiveEngine(load_knowledge_base())
    follower = Follower([str(tmp_path)])
    record = tmp_path / "rank2.json"
    for message in ("KeyError: 'a'", "KeyError: 'b'"):
        record.write_text(json.dumps({"message": {"message": message, "extraInfo": {
            "py_callstack": f"Traceback (most recent call last):\n  File \"t.py\", line 1\n{message}\n",
            "time": 1796230800.0, "rank": 2}}}))
        time.sleep(0.01)
        engine.ingest(follower.poll(), now=0.0)
    assert len(engine.scans) == 1
    assert "'b'" in engine.current_diagnosis().initiating.text
