"""A job still running: a file appended to while open is re-diagnosed (incrementally), and a
file deleted while open takes its marks with it; the server never stops answering."""
from __future__ import annotations

import shutil

import pytest
from lsprotocol import types

from .conftest import REAL_RUNS, diagnostics_of, open_file, wait_for
from .test_diagnostics import cli_contract

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]


def _errors(client):
    return [(uri, item) for uri, items in client.diagnostics.items() for item in items
            if item.severity == types.DiagnosticSeverity.Error]


async def test_a_file_appended_to_while_open_is_rediagnosed(lsp, run_folder):
    folder = run_folder("exc-two-ranks-plain-ws4")
    rest = {}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        cut = data.index(b"shard has") + 5  # before any rank failed; mid-line
        path.write_bytes(data[:cut])
        rest[path] = data[cut:]
    open_file(lsp, folder / "rank0.log")
    await wait_for(lambda: any("diagnosed" in item.message for item in lsp.log_messages), "the first diagnosis")
    assert _errors(lsp) == []
    for path, data in rest.items():  # the job goes on, and fails
        with open(path, "ab") as handle:
            handle.write(data)
    [(uri, error)] = await wait_for(lambda: _errors(lsp), "the first fault, once written")
    first = cli_contract(folder)["primary"]["initiating"]
    assert uri == (folder / "rank1.log").as_uri() and error.range.start.line == first["line"] - 1
    await wait_for(lambda: len(lsp.diagnostics) == 4, "marks on every rank's file")
    # the server logs its summary after it publishes the marks: on a loaded machine it comes later
    await wait_for(lambda: any("incremental" in item.message for item in lsp.log_messages),
                   "the log line saying the update read only the new lines")


async def test_a_file_deleted_while_open(lsp, run_folder):
    folder = run_folder("exc-two-ranks-plain-ws4")
    open_file(lsp, folder / "rank1.log")
    await wait_for(lambda: len(lsp.diagnostics) == 4, "the diagnostics of the run")
    (folder / "rank1.log").unlink()
    await wait_for(lambda: diagnostics_of(lsp, folder / "rank1.log") == [], "the marks of the deleted file to go")
    [(uri, _error)] = await wait_for(lambda: _errors(lsp), "the new first fault")
    assert uri == (folder / "rank3.log").as_uri()  # rank 3's own KeyError is now the first fault
    shutil.rmtree(folder)
    await wait_for(lambda: any("nothing to diagnose" in item.message for item in lsp.messages), "a message")
    assert all(not items for items in lsp.diagnostics.values()), lsp.diagnostics
    hover = await lsp.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=(folder / "rank1.log").as_uri()),
        position=types.Position(line=15, character=0)))
    assert hover is None  # still answering


async def test_changes_are_read_on_file_system_events_not_by_polling(tmp_path, cache_home, run_folder):
    """Looking at the files once a minute only (pollSeconds 60): a change is still read within
    seconds, because the system tells the server."""
    from .conftest import start_client

    client = await start_client(tmp_path, cache_home, {"pollSeconds": 60, "settleSeconds": 0.2})
    try:
        folder = run_folder("exc-two-ranks-plain-ws4")
        (folder / "rank1.log").write_bytes((folder / "rank1.log").read_bytes().split(b"Traceback")[0])
        open_file(client, folder / "rank3.log")
        await wait_for(lambda: any("diagnosed" in item.message for item in client.log_messages), "the first diagnosis")
        assert any("by file-system events" in item.message for item in client.log_messages)
        [(uri, _error)] = await wait_for(lambda: _errors(client), "rank 3's error as the first fault")
        assert uri == (folder / "rank3.log").as_uri()
        shutil.copy(REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs" / "rank1.log", folder / "rank1.log")
        await wait_for(lambda: [uri for uri, _ in _errors(client)] == [(folder / "rank1.log").as_uri()],
                       "rank 1's error, once written", timeout=20)
    finally:
        await client.shutdown_session()
        await client.stop()
