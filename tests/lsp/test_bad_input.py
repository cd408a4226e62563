"""Bad input gives a message, never a crash: a binary file opened, a folder with nothing readable,
a 1 GB file (read from disk in bounded memory, with progress; the editor's copy is never used),
a diagnosis cancelled from the progress report."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import REAL_RUNS, diagnostics_of, open_file, start_client, wait_for

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(180)]
GIB = 1 << 30
SERVER_MEMORY_LIMIT = 400 << 20  # a 1 GB file must not be held: the engine streams it


def _sparse_log(path: Path, size: int, line_bytes: int = 0) -> int:
    """A log of `size` bytes that takes (almost) no disk: a real run's first lines (healthy
    training), a hole of NUL bytes, then the run's failure. The hole is one very long line (cut by
    the reader), or lines of `line_bytes` each. Returns the line the failure starts on (the
    disk-full run's own first fault is its line 27) when the hole is one line."""
    lines = (REAL_RUNS / "disk-full-tee-ws2" / "logs" / "console.log").read_bytes().split(b"\n")
    head = (b"\n".join(lines[:12]) + b"\n") * 12  # past the reader's 8 KiB binary sniff
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
        for offset in range(len(head) + line_bytes, size, line_bytes) if line_bytes else ():
            handle.seek(offset)
            handle.write(b"\n")
        handle.seek(size)
        handle.write(b"\n" + b"\n".join(lines[12:]))
    return head.count(b"\n") + 1 + (27 - 12)


def _peak_memory(client) -> int:
    status = Path(f"/proc/{client._server.pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) * 1024


async def test_a_binary_file_opened_is_named_not_read(lsp, run_folder):
    folder = run_folder("exc-two-ranks-plain-ws4")
    core = folder / "core.log"
    core.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64)
    open_file(lsp, core, text="")
    [unread] = await wait_for(lambda: diagnostics_of(lsp, core), "a mark on the binary file")
    assert unread.severity == types.DiagnosticSeverity.Warning and unread.range.start.line == 0
    assert unread.message == "firstfault did not read this file: binary file (not text); if it is a log archive, extract it first"
    await wait_for(lambda: any("did not read core.log" in item.message for item in lsp.messages), "a message")
    assert any(item.severity == types.DiagnosticSeverity.Error for item in diagnostics_of(lsp, folder / "rank1.log"))


async def test_nothing_readable_gives_a_message(lsp, tmp_path):
    folder = tmp_path / "runs" / "broken"
    folder.mkdir(parents=True)
    (folder / "rank0.log").write_bytes(b"\x00" * 4096)
    (folder / "rank1.log").write_bytes(b"")
    open_file(lsp, folder / "rank0.log", text="")
    [message] = await wait_for(lambda: [item for item in lsp.messages if "nothing to diagnose" in item.message], "a message")
    assert message.type == types.MessageType.Warning
    assert "no readable input" in message.message and "binary file" in message.message and "empty file" in message.message
    (folder / "rank1.log").write_bytes((REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs" / "rank1.log").read_bytes())
    await wait_for(lambda: diagnostics_of(lsp, folder / "rank1.log"), "a diagnosis once the file is written")


async def test_a_1_gb_file_is_read_from_disk_with_progress(lsp, tmp_path):
    big = tmp_path / "runs" / "big" / "console.log"
    big.parent.mkdir(parents=True)
    first_fault_line = _sparse_log(big, GIB)
    assert big.stat().st_size > GIB
    open_file(lsp, big, text="")  # what an editor sends for a file too large to hand over
    items = await wait_for(lambda: diagnostics_of(lsp, big), "the diagnosis of the 1 GB file", timeout=150)
    [error] = [item for item in items if item.severity == types.DiagnosticSeverity.Error]
    assert error.code == "disk-full" and error.range.start.line == first_fault_line - 1
    reports = [report for reports in lsp.progress_reports.values() for report in reports]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title.startswith("firstfault: diagnosing")
    assert any(isinstance(report, types.WorkDoneProgressReport) and "MB" in (report.message or "") for report in reports)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "done"
    assert _peak_memory(lsp) < SERVER_MEMORY_LIMIT


async def test_cancelling_from_the_progress_report_stops_the_diagnosis(lsp, tmp_path):
    big = tmp_path / "runs" / "huge" / "console.log"
    big.parent.mkdir(parents=True)
    _sparse_log(big, 16 * GIB, line_bytes=4 << 20)
    open_file(lsp, big, text="")
    token = await wait_for(lambda: next(iter(lsp.progress_reports), None), "progress")
    await wait_for(lambda: lsp.progress_reports[token], "the progress to begin")
    lsp.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    end = await wait_for(lambda: [r for r in lsp.progress_reports[token] if isinstance(r, types.WorkDoneProgressEnd)],
                         "the progress to end", timeout=30)
    assert end[0].message == "cancelled"
    await wait_for(lambda: any("cancelled" in item.message for item in lsp.log_messages), "the cancellation logged")
    assert diagnostics_of(lsp, big) == []
    contract = await lsp.workspace_execute_command_async(types.ExecuteCommandParams(
        command="firstfault.diagnoseText", arguments=["[rank1]: OSError: [Errno 28] No space left on device"]))
    assert contract["primary"]["entry_id"] == "disk-full"  # the server goes on


async def test_cancelling_the_request_stops_the_folder_diagnosis(lsp, tmp_path):
    big = tmp_path / "runs" / "huge" / "console.log"
    big.parent.mkdir(parents=True)
    _sparse_log(big, 16 * GIB, line_bytes=4 << 20)
    request = asyncio.ensure_future(lsp.protocol.send_request_async(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="firstfault.diagnoseFolder", arguments=[str(big.parent)]), msg_id="folder-request"))
    token = await wait_for(lambda: next(iter(lsp.progress_reports), None), "progress")
    await wait_for(lambda: lsp.progress_reports[token], "the progress to begin")
    lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="folder-request"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(request, 30)
    end = await wait_for(lambda: [r for r in lsp.progress_reports[token] if isinstance(r, types.WorkDoneProgressEnd)],
                         "the diagnosis to stop", timeout=30)
    assert end[0].message == "cancelled"


async def test_a_large_folder_is_scanned_by_worker_processes_from_the_server(tmp_path, cache_home):
    """Folders of 32 MB and more are scanned across processes (forked from the server, whose
    protocol reader thread is blocked on stdin meanwhile): the answer must still come."""
    folder = tmp_path / "runs" / "large"
    folder.mkdir(parents=True)
    head = b"2026-12-02 18:18:40,001 INFO train: waiting for the data loader\n" * 200  # past the binary sniff
    for path in sorted((REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs").glob("rank*.log")):
        with open(folder / path.name, "wb") as handle:
            handle.write(head)
            handle.truncate(12 << 20)
            handle.seek(12 << 20)
            handle.write(b"\n" + path.read_bytes())
    client = await start_client(tmp_path, cache_home, environment={"FIRSTFAULT_WORKERS": "2"})
    try:
        open_file(client, folder / "rank0.log", text="")
        [error] = await wait_for(lambda: [item for item in diagnostics_of(client, folder / "rank1.log")
                                          if item.severity == types.DiagnosticSeverity.Error], "the first fault", timeout=120)
        assert error.range.start.line == head.count(b"\n") + 1 + 15
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_a_log_opened_from_a_folder_of_everything_reads_its_job_and_says_what_it_left(lsp, tmp_path):
    """~/Downloads with a run's two node logs among 300 other files: the two are read, the rest
    are named as left out, and the server is not reading them."""
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    rank_logs = sorted((REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs").glob("rank*.log"))
    for index, source in enumerate(rank_logs[:2]):
        (downloads / f"slurm-77123-node0{index}.out").write_bytes(source.read_bytes())
    for index in range(300):
        (downloads / f"receipt-{index}.txt").write_text("paid\n")
    open_file(lsp, downloads / "slurm-77123-node01.out")
    await wait_for(lambda: any("diagnosed" in item.message for item in lsp.log_messages), "the diagnosis")
    summary = next(item.message for item in lsp.log_messages if "diagnosed" in item.message)
    assert "read 2 files" in summary, summary
    told = await wait_for(lambda: [item.message for item in lsp.messages if "left out" in item.message], "what was left")
    assert "left out 300" in told[0] and "Diagnose the folder" in told[0], told
