"""Hover, code actions and the commands, through a real LSP client."""
from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_paths
from firstfault.render.contract import to_contract

from .conftest import diagnostics_of, open_file, wait_for

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]
TERMINAL = """\
2026-12-02 18:22:33,276 INFO train: saving checkpoint to /home/alice/ckpt/epoch3.pt
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/alice/train.py", line 88, in save
[rank1]: OSError: [Errno 28] No space left on device: '/home/alice/ckpt/epoch3.pt' token hf_abcdefghijklmnopqrstuvwxyz0123456789
"""


async def _opened(lsp, run_folder) -> Path:
    folder = run_folder("exc-two-ranks-plain-ws4")
    open_file(lsp, folder / "rank1.log")
    await wait_for(lambda: len(lsp.diagnostics) == 4, "the diagnostics of the run")
    open_file(lsp, folder / "rank2.log")
    return folder


def _hover(lsp, path: Path, line: int):
    return lsp.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=types.Position(line=line, character=3)))


def _actions(lsp, path: Path, line: int):
    return lsp.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
        context=types.CodeActionContext(diagnostics=diagnostics_of(lsp, path))))


def _command(lsp, name: str, *arguments):
    return lsp.workspace_execute_command_async(types.ExecuteCommandParams(command=name, arguments=list(arguments)))


async def test_hover_on_the_first_fault_gives_summary_fix_and_verification(lsp, run_folder):
    folder = await _opened(lsp, run_folder)
    hover = await _hover(lsp, folder / "rank1.log", 15)
    text = hover.contents.value
    entry = load_knowledge_base().get("user-code-exception")
    assert text.startswith(f"**{entry.title}**")
    assert "First fault: rank 1" in text
    assert " ".join(entry.get("summary").split())[:80] in text
    assert f"**Fix** ({entry.get('fix')[0]['stack']}): {entry.get('fix')[0]['title']}" in text
    command = next(item["command"] for item in entry.get("verify") if item.get("command"))
    assert "**Verify**:" in text and f"```sh\n{command}\n```" in text
    assert "[Full entry](file://" in text
    assert hover.range.start.line == 15


async def test_hover_on_a_collateral_line_points_to_the_first_fault(lsp, run_folder):
    folder = await _opened(lsp, run_folder)
    [collateral] = diagnostics_of(lsp, folder / "rank2.log")
    hover = await _hover(lsp, folder / "rank2.log", collateral.range.start.line)
    text = hover.contents.value
    assert "Collateral (rank 2), not the cause" in text
    assert "`rank1.log:16`" in text
    assert "What to fix is the first fault, **Unhandled Python exception" in text
    assert await _hover(lsp, folder / "rank2.log", 0) is None  # an unmarked line


async def test_code_actions_explain_copy_and_diagnose_again(lsp, run_folder):
    folder = await _opened(lsp, run_folder)
    actions = await _actions(lsp, folder / "rank1.log", 15)
    titles = [action.title for action in actions]
    assert titles == ["Explain this failure: Unhandled Python exception in the training code",
                      "Copy the verification command", "Diagnose this folder again"]
    explain, copy, again = (action.command for action in actions)
    result = await _command(lsp, explain.command, *explain.arguments)
    assert result["entry"] == "user-code-exception"
    assert result["markdown"].startswith("## Unhandled Python exception in the training code")
    shown = await wait_for(lambda: lsp.shown_documents, "window/showDocument")
    assert shown[-1].uri == result["uri"] and shown[-1].uri.endswith("user-code-exception.md")
    copied = await _command(lsp, copy.command, *copy.arguments)
    verify = load_knowledge_base().get("user-code-exception").get("verify")
    assert copied["command"] == next(item["command"] for item in verify if item.get("command"))
    await wait_for(lambda: any(copied["command"] in message.message for message in lsp.messages), "the command shown")
    contract = await _command(lsp, again.command, *again.arguments)
    assert contract == to_contract(diagnose_paths([str(folder)]))
    # a collateral line offers its own entry too
    [collateral] = diagnostics_of(lsp, folder / "rank2.log")
    titles = [action.title for action in await _actions(lsp, folder / "rank2.log", collateral.range.start.line)]
    assert titles[0].startswith("Explain this line: Collective timeout") and titles[0].endswith("(collateral)")
    assert "Explain this failure: Unhandled Python exception in the training code" in titles


async def test_diagnose_folder_returns_the_contract_and_shows_the_report(lsp, run_folder):
    folder = run_folder("disk-full-tee-ws2")
    contract = await _command(lsp, "firstfault.diagnoseFolder", folder.as_uri(), {"showReport": True})
    assert contract == to_contract(diagnose_paths([str(folder)]))
    assert contract["primary"]["entry_id"] == "disk-full"
    shown = await wait_for(lambda: lsp.shown_documents, "the report shown")
    report = Path(shown[-1].uri.removeprefix("file://"))
    assert report.suffix == ".md" and report.read_text().startswith("## firstfault diagnosis")
    items = await wait_for(lambda: diagnostics_of(lsp, folder / "console.log"), "diagnostics published")
    assert any(item.severity == types.DiagnosticSeverity.Error for item in items)


async def test_diagnose_text_masks_secrets_and_returns_the_contract(lsp):
    contract = await _command(lsp, "firstfault.diagnoseText", TERMINAL, {"name": "terminal.log", "showReport": True})
    assert contract["schema"] == "firstfault.diagnosis/1"
    assert contract["primary"]["entry_id"] == "disk-full"
    assert contract["primary"]["initiating"] == {**contract["primary"]["initiating"], "source": "terminal.log", "line": 4, "rank": 1}
    text = contract["primary"]["evidence"][0]["text"]
    assert "alice" not in text and "hf_abcdef" not in text and "<hf-token>" in text
    shown = await wait_for(lambda: lsp.shown_documents, "the report shown")
    assert "alice" not in Path(shown[-1].uri.removeprefix("file://")).read_text()


async def test_bad_requests_answer_one_line_errors(lsp, tmp_path):
    for command, arguments, expected in (
        ("firstfault.diagnoseFolder", [str(tmp_path / "missing")], "no such file or folder"),
        ("firstfault.diagnoseFolder", [], "no folder given"),
        ("firstfault.diagnoseText", ["   "], "no text given"),
        ("firstfault.explain", ["no-such-entry"], "no-such-entry"),
    ):
        with pytest.raises(JsonRpcException) as caught:
            await _command(lsp, command, *arguments)
        assert expected in caught.value.message and "\n" not in caught.value.message
    empty = tmp_path / "empty-run"
    empty.mkdir()
    with pytest.raises(JsonRpcException) as caught:
        await _command(lsp, "firstfault.diagnoseFolder", str(empty))
    assert "no readable input" in caught.value.message
    # the server is still there
    contract = await _command(lsp, "firstfault.diagnoseText", TERMINAL)
    assert contract["status"] == "failure"


async def test_why_not_this_rank_on_a_collateral_line(lsp, run_folder):
    """A collateral mark offers "Why not rank N?": the answer names the rule and cites the first
    fault's line, returned to the client and shown as a message."""
    folder = await _opened(lsp, run_folder)
    [collateral] = diagnostics_of(lsp, folder / "rank2.log")
    actions = await _actions(lsp, folder / "rank2.log", collateral.range.start.line)
    [why] = [action for action in actions if action.title.startswith("Why not rank 2?")]
    result = await _command(lsp, why.command.command, *why.command.arguments)
    assert result["intent"] == "why-not-rank" and result["answer"][0].startswith("Rank 2's errors are collateral")
    assert any(item["source"].endswith("rank1.log") and item["line"] == 16 for item in result["evidence"])
    await wait_for(lambda: any("Rank 2's errors are collateral" in message.message for message in lsp.messages),
                   "the answer shown")
    with pytest.raises(JsonRpcException):
        await _command(lsp, "firstfault.ask", "")


async def test_with_save_history_the_editor_records_and_says_seen_before(tmp_path, cache_home, run_folder):
    """saveHistory: each diagnosis goes into the history (origin editor); the same failure
    diagnosed again (here, once from the command line first) is said to be seen before."""
    import subprocess
    import sys

    from firstfault.history import History

    from .conftest import start_client

    folder = run_folder("exc-two-ranks-plain-ws4")
    db = tmp_path / "history.sqlite3"
    subprocess.run([sys.executable, "-m", "firstfault", "diagnose", str(folder), "--save", "--db", str(db)],
                   capture_output=True, timeout=120)
    client = await start_client(tmp_path, cache_home, {"saveHistory": True, "historyDatabase": str(db)})
    try:
        open_file(client, folder / "rank1.log")
        await wait_for(lambda: any("2nd time since" in message.message for message in client.messages),
                       "the seen-before message")
    finally:
        await client.shutdown_session()
        await client.stop()
    [record] = History(db).list()
    assert record.seen == 2
