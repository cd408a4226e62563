"""A log platform's export (Cloud Logging as `gcloud logging read --format=json` prints it, newest
first; CloudWatch's `filter-log-events`; Loki's `logcli --output=jsonl`) is read as the logs of the
pods or streams it holds, in the order they were written; JSON that is not such an export is read
as it is."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from firstfault.ingest.exported import export_pieces
from firstfault.pipeline import diagnose_paths, diagnose_texts

REAL = Path(__file__).parents[1] / "fixtures" / "real"
START = datetime(2026, 12, 5, 8, 0, 0, tzinfo=timezone.utc).timestamp()
# two pods of a job: rank 1's device-side assert, then rank 0 times out waiting for it
LINES = [("trainjob-worker-0", "[rank0]: step 1 loss 2.0"), ("trainjob-worker-1", "[rank1]: step 1 loss 2.0"),
         ("trainjob-worker-1", "[rank1]: RuntimeError: CUDA error: device-side assert triggered"),
         ("trainjob-worker-0", "[rank0]: [E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation "
                               "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600034 "
                               "milliseconds before timing out.")]


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def cloud_logging(lines, newest_first=True) -> bytes:
    """`gcloud logging read ... --format=json`: LogEntry objects, keys sorted, 2-space indent."""
    entries = [{"insertId": f"id{index}", "logName": "projects/p/logs/stderr", "severity": "ERROR",
                "resource": {"type": "k8s_container", "labels": {"pod_name": pod, "container_name": "pytorch",
                                                                  "namespace_name": "default"}},
                "textPayload": text, "timestamp": rfc3339(START + index * 0.25)}
               for index, (pod, text) in enumerate(lines)]
    return json.dumps(entries[::-1] if newest_first else entries, indent=2, sort_keys=True).encode()


@pytest.mark.parametrize("newest_first", [True, False])
def test_each_pod_of_a_cloud_logging_export_is_read_in_the_order_it_was_written(newest_first):
    diagnosis = diagnose_texts([("downloaded-logs.json", cloud_logging(LINES, newest_first))])
    assert diagnosis.primary.failure_id == "cuda-device-side-assert"
    assert diagnosis.initiating.rank == 1
    assert diagnosis.initiating.host == "trainjob-worker-1"  # a pod's name is its host name
    assert diagnosis.initiating.source == "trainjob-worker-1 in downloaded-logs.json"
    assert diagnosis.initiating.line == 2  # the pod's second line
    assert int(diagnosis.initiating.time) == int(START + 0.5)  # the platform's time of the line
    assert [finding.failure_id for finding in diagnosis.collateral] != []


def test_cloudwatch_events_and_loki_json_lines_are_read_by_their_streams():
    events = {"events": [{"logStreamName": stream, "timestamp": int((START + index) * 1000), "message": text + "\n",
                          "ingestionTime": int((START + index + 1) * 1000), "eventId": str(index)}
                         for index, (stream, text) in enumerate(LINES)], "searchedLogStreams": []}
    pieces = export_pieces(json.dumps(events).encode())
    assert [name for name, _, _ in pieces] == [b"trainjob-worker-0", b"trainjob-worker-1"]
    assert pieces[1][2].split(b"\n")[1] == b"2026-12-05T08:00:02.000000Z [rank1]: RuntimeError: CUDA error: device-side assert triggered"
    loki = b"\n".join(json.dumps({"labels": {"pod": pod, "container": "pytorch"}, "line": text,
                                  "timestamp": rfc3339(START + index)}).encode() for index, (pod, text) in enumerate(LINES))
    assert [(name, content.count(b"\n") + 1) for name, _, content in export_pieces(loki)] == [
        (b"trainjob-worker-0", 2), (b"trainjob-worker-1", 2)]
    diagnosis = diagnose_texts([("query.jsonl", loki)])
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank) == ("cuda-device-side-assert", 1)


def test_a_record_without_a_line_is_shown_whole_and_one_without_a_time_keeps_every_line_as_written():
    records = [{"jsonPayload": {"message": "[rank0]: step 1"}, "timestamp": "2026-12-05T08:00:00Z"},
               {"jsonPayload": {"event": "checkpoint", "step": 2}, "timestamp": "2026-12-05T08:00:01Z"},
               {"textPayload": "line one\nline two\n"}]
    ((name, first, content),) = export_pieces(json.dumps(records).encode())
    assert name is None and first == 1
    assert content.split(b"\n") == [b"[rank0]: step 1", b'{"jsonPayload":{"event":"checkpoint","step":2},'
                                    b'"timestamp":"2026-12-05T08:00:01Z"}', b"line one", b"line two"]


@pytest.mark.parametrize("text", [
    # torchelastic's error file: one record, its message an object
    b'{"message": {"message": "RuntimeError: x", "extraInfo": {"py_callstack": "...", "timestamp": "1"}}}',
    b'[{"message": "a"}, 3]',  # not every item a record
    b'[{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.9, "message": "saved"}, {"step": 3}]',  # a metrics file
    b'{"message": "done", "entries": "none"}',
    b'[{"message": "a"', b"[]", b"{}",
])
def test_json_that_is_no_export_of_log_records_is_left_as_it_is(text):
    assert export_pieces(text) == []


def test_a_real_runs_console_exported_newest_first_is_diagnosed_as_the_console_itself(tmp_path):
    """A real run's console (torchrun --tee, seven ranks, rank 5's IndexError) as one pod's entries,
    listed newest first, a millisecond apart: the same failure, rank and line as the console read as it is."""
    console = REAL / "exc-index-error-tee-ws7-r5" / "logs" / "console.log"
    plain = diagnose_paths([str(console)])
    lines = [line for line in console.read_text(encoding="utf-8").split("\n")]
    moments = [START + index * 1e-3 for index in range(len(lines))]
    entries = [{"resource": {"labels": {"pod_name": "trainjob-master-0"}}, "textPayload": line,
                "timestamp": rfc3339(moment)} for line, moment in zip(lines, moments)]
    export = tmp_path / "downloaded-logs.json"
    export.write_text(json.dumps(entries[::-1], indent=2, sort_keys=True), encoding="utf-8")
    exported = diagnose_paths([str(export)])
    assert exported.primary.failure_id == plain.primary.failure_id
    assert exported.initiating.rank == plain.initiating.rank is not None
    assert exported.initiating.line == plain.initiating.line


def test_an_export_too_big_to_parse_here_is_read_as_text_and_the_report_says_so(monkeypatch):
    from firstfault.ingest import combined

    monkeypatch.setattr(combined, "MAX_EXPORT_BYTES", 1024)
    diagnosis = diagnose_texts([("downloaded-logs.json", cloud_logging(LINES * 4))])
    assert [skipped.reason for skipped in diagnosis.inputs.skipped] == [
        "partly read: a log export over 32 MiB is read as the text it is, its pods' lines together "
        "(export each pod or stream to a file of its own)"]
    assert diagnosis.primary.failure_id == "cuda-device-side-assert"  # its lines are still read, as text


def test_a_structured_loggers_exception_beside_its_message_is_read_after_it():
    """python-json-logger keeps a record's traceback in `exc_info`, beside its message (`asctime`
    its time): the traceback is read after the message, as a plain log prints it."""
    records = [{"asctime": "2026-12-05 08:00:00,123", "levelname": "INFO", "name": "train",
                "message": "[rank1]: step 1 loss 2.0"},
               {"asctime": "2026-12-05 08:00:01,456", "levelname": "ERROR", "name": "train", "message": "training failed",
                "exc_info": 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    step()\n'
                            "RuntimeError: CUDA error: device-side assert triggered"}]
    text = "\n".join(json.dumps(record) for record in records).encode()
    ((_, _, content),) = export_pieces(text)
    assert content.split(b"\n")[1:3] == [b"2026-12-05T08:00:01.456000Z training failed",
                                         b"2026-12-05T08:00:01.456000Z Traceback (most recent call last):"]
    diagnosis = diagnose_texts([("train.jsonl", text)])
    assert diagnosis.primary.failure_id == "cuda-device-side-assert"
    assert diagnosis.initiating.line == 6 and int(diagnosis.initiating.time) % 60 == 1


def test_a_go_loggers_error_field_is_read_after_its_message():
    """zap's JSON lines keep the error beside the message (`msg`, `error`)."""
    records = [{"level": "info", "msg": "rendezvous joined"},
               {"level": "error", "msg": "worker failed", "error": "NCCL error: unhandled system error"}]
    ((_, _, content),) = export_pieces("\n".join(json.dumps(record) for record in records).encode())
    assert content.split(b"\n") == [b"rendezvous joined", b"worker failed", b"NCCL error: unhandled system error"]


def test_the_journals_json_records_read_as_journalctl_prints_them():
    """`journalctl -u train -o json`: each record becomes the line `journalctl -o short-iso` prints
    (time, host, ident[pid]), so the host and process are read as in the journal's own text; a
    message that is not UTF-8 comes as a list of bytes."""
    def record(second, pid, message):
        return {"__REALTIME_TIMESTAMP": str(int((START + second) * 1e6)), "_HOSTNAME": "gpu-node-3", "_PID": str(pid),
                "SYSLOG_IDENTIFIER": "python3", "PRIORITY": "6", "_SYSTEMD_UNIT": "train.service", "MESSAGE": message}

    records = [record(0, 4100, "[rank0]: step 1 loss 2.0"), record(1, 4101, "[rank1]: step 1 loss 2.0"),
               record(2, 4101, "[rank1]: RuntimeError: CUDA error: device-side assert triggered"),
               record(3, 4100, list("[rank0]: caf\xe9 ".encode("latin-1")))]
    text = "\n".join(json.dumps(item) for item in records).encode()
    ((name, _, content),) = export_pieces(text)
    assert name is None
    assert content.split(b"\n")[2] == (b"2026-12-05T08:00:02.000000+0000 gpu-node-3 python3[4101]: "
                                       b"[rank1]: RuntimeError: CUDA error: device-side assert triggered")
    assert content.split(b"\n")[3].endswith("[rank0]: caf\ufffd ".encode())
    diagnosis = diagnose_texts([("train.json", text)])
    assert (diagnosis.primary.failure_id, diagnosis.initiating.rank, diagnosis.initiating.host) == (
        "cuda-device-side-assert", 1, "gpu-node-3")
