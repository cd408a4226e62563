"""The LSP features of `firstfault lsp`, wired to the server's state (`server.FirstfaultServer`).

Notifications: didOpen diagnoses the document's job, didClose forgets it with its last document.
Requests: hover on a marked line, code actions ("Explain this failure", "Copy the verification
command", "Why not rank N?" on a collateral line, "Diagnose this folder again") and the commands of COMMANDS, which clients call with
`workspace/executeCommand`:

    firstfault.diagnoseFolder  PATH-OR-URI [{"showReport": true}]   -> the diagnosis contract
    firstfault.diagnoseText    TEXT [{"name": "...", "maskHosts": false, "showReport": true}] -> the contract
    firstfault.explain         ENTRY-ID [JOB-FOLDER]  -> {"entry", "title", "markdown", "uri"}
    firstfault.copyVerification ENTRY-ID [JOB-FOLDER] -> {"entry", "check", "command"}
    firstfault.ask             QUESTION JOB-FOLDER   -> {"question", "intent", "answer", "evidence"}

A report or an entry is also shown with `window/showDocument` (a Markdown file) when the client
can show documents. Bad arguments and unreadable input answer an error of one line and a hint.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from ..errors import FirstfaultError
from ..kb import load_knowledge_base
from ..pipeline import diagnose_texts
from ..render.contract import to_contract
from ..render.diagnosis_text import entry_or_none
from ..render.markdown import render as render_markdown
from .explain import hover_markdown, verification_command
from .folders import JobScope, ScopeLimits, job_scope
from .markers import COLLATERAL, FIRST_FAULT, SAME_FAILURE, title_of
from .progress import EditorProgress
from .publish import line_range
from .server import FirstfaultServer

DIAGNOSE_FOLDER = "firstfault.diagnoseFolder"
DIAGNOSE_TEXT = "firstfault.diagnoseText"
EXPLAIN = "firstfault.explain"
COPY_VERIFICATION = "firstfault.copyVerification"
ASK = "firstfault.ask"
COMMANDS = (DIAGNOSE_FOLDER, DIAGNOSE_TEXT, EXPLAIN, COPY_VERIFICATION, ASK)
TEXT_NAME = "selection.log"
MAX_TEXT_CHARACTERS = 256 * 1024 * 1024


class RequestError(JsonRpcInvalidParams):
    """A request firstfault cannot answer: one line, and a hint."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message=f"{message}" + (f" (hint: {hint})" if hint else ""))


def build_server() -> FirstfaultServer:
    server = FirstfaultServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: FirstfaultServer, params: types.InitializeParams) -> None:
        kb = load_knowledge_base()
        ls.configure(kb, params.initialization_options)

    @server.feature(types.INITIALIZED)
    def initialized(ls: FirstfaultServer, params: types.InitializedParams) -> None:
        if ls.kb.problems:
            ls.window_log_message(types.LogMessageParams(
                type=types.MessageType.Warning,
                message=f"{len(ls.kb.problems)} knowledge-base problem(s); affected entries are left out "
                        "(run `firstfault kb check`)"))
        ls.start_watching()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: FirstfaultServer, params) -> None:
        ls.stop()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: FirstfaultServer, params: types.DidOpenTextDocumentParams) -> None:
        await ls.open_document(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FirstfaultServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close_document(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: FirstfaultServer, params: types.HoverParams) -> types.Hover | None:
        entry = ls.job_of_document(params.text_document.uri)
        position = params.position
        markers = entry.publication.markers.get((params.text_document.uri, position.line)) if entry else None
        if not markers or entry.job.diagnosis is None:
            return None
        links = entry.publication.links
        text = hover_markdown(markers, entry.job.diagnosis, ls.kb, lambda entry_id: links.get(entry_id) or ls.links.entry_href(entry_id))
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                           range=line_range(markers[0].line, markers[0].text))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source]))
    def code_action(ls: FirstfaultServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return _code_actions(ls, params)

    @server.command(DIAGNOSE_FOLDER)
    async def diagnose_folder(ls: FirstfaultServer, *arguments) -> dict:
        target, options = _target_and_options(arguments)
        entry = ls.job_for(await asyncio.get_running_loop().run_in_executor(ls.pool, _scope_for, target, ls.workspace_roots(),
                                                                                     ls.settings.limits))
        diagnosis = await ls.diagnose_job(entry, request=ls.protocol.msg_id)
        if diagnosis is None:
            raise RequestError(entry.job.problem or "the diagnosis was cancelled",
                               "" if entry.job.problem else "run the command again")
        if options.get("showReport"):
            await _show_report(ls, str(entry.job.folder), render_markdown(diagnosis, ls.kb))
        return to_contract(diagnosis)

    @server.command(DIAGNOSE_TEXT)
    async def diagnose_text(ls: FirstfaultServer, *arguments) -> dict:
        if not arguments or not isinstance(arguments[0], str) or not arguments[0].strip():
            raise RequestError("no text given", "select log lines (or a terminal's output) and run the command again")
        text, options = arguments[0], _options(arguments[1:])
        if len(text) > MAX_TEXT_CHARACTERS:
            raise RequestError("the text is larger than 256 MB", "save it to a file and diagnose the folder instead")
        name = str(options.get("name") or TEXT_NAME)
        observer = EditorProgress()
        try:
            diagnosis = await ls.run_with_progress(
                "firstfault: diagnosing the text", observer, _diagnose_text, [(name, text)],
                bool(options.get("maskHosts")), ls.kb, observer, request=ls.protocol.msg_id)
        except FirstfaultError as exc:
            raise RequestError(exc.message, exc.hint) from None
        if diagnosis is None:
            raise RequestError("the diagnosis was cancelled", "run the command again")
        if options.get("showReport"):
            await _show_report(ls, name, render_markdown(diagnosis, ls.kb))
        return to_contract(diagnosis)

    @server.command(EXPLAIN)
    async def explain(ls: FirstfaultServer, *arguments) -> dict:
        entry, values = _entry_and_values(ls, arguments)
        path = ls.links.entry_file(entry.id, values)
        if _shows_documents(ls):
            await ls.window_show_document_async(types.ShowDocumentParams(uri=path.as_uri(), take_focus=True))
        return {"entry": entry.id, "title": entry.title, "markdown": path.read_text(encoding="utf-8"), "uri": path.as_uri()}

    @server.command(ASK)
    def ask(ls: FirstfaultServer, *arguments) -> dict:
        from ..ask import answer, intent_of

        if not arguments or not isinstance(arguments[0], str) or not arguments[0].strip():
            raise RequestError("no question given", "e.g. \"why not rank 0\"")
        question = arguments[0][:300]
        folder = arguments[1] if len(arguments) > 1 and isinstance(arguments[1], str) else None
        diagnosis = next((open_job.job.diagnosis for open_job in ls.jobs.values()
                          if open_job.job.diagnosis is not None and (folder is None or str(open_job.job.folder) == folder)), None)
        if diagnosis is None:
            raise RequestError("no diagnosis of that folder is open", "open a log of the run first")
        contract = to_contract(diagnosis)
        reply = answer(intent_of(question, tuple(contract["inputs"]["hosts"])), contract, ls.kb, history_on=False)
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=" ".join(reply.lines)[:2000]))
        return reply.to_dict(question)

    @server.command(COPY_VERIFICATION)
    def copy_verification(ls: FirstfaultServer, *arguments) -> dict:
        entry, values = _entry_and_values(ls, arguments)
        check, command = verification_command(entry, values)
        if not command:
            raise RequestError(f"{entry.id} has no verification command", f"`firstfault explain {entry.id}` shows how to verify")
        if not ls.settings.clipboard:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info,
                                                           message=f"Verification command ({check}): {command}"))
        return {"entry": entry.id, "check": check, "command": command}

    return server


def _code_actions(ls: FirstfaultServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    entry = ls.job_of_document(uri)
    if entry is None:
        return None
    folder = str(entry.job.folder)
    diagnosis = entry.job.diagnosis
    actions: list[types.CodeAction] = []
    offered: set[tuple[str, str]] = set()

    def offer(title: str, command: str, entry_id: str, kind=types.CodeActionKind.QuickFix) -> None:
        if (command, entry_id) in offered:
            return
        offered.add((command, entry_id))
        actions.append(types.CodeAction(title=title, kind=kind, diagnostics=list(params.context.diagnostics) or None,
                                        command=types.Command(title=title, command=command, arguments=[entry_id, folder])))

    for line in range(params.range.start.line, params.range.end.line + 1):
        for marker in entry.publication.markers.get((uri, line), ()):
            explained = diagnosis.primary.failure_id if diagnosis and diagnosis.primary and marker.kind in (
                FIRST_FAULT, SAME_FAILURE, COLLATERAL) else marker.entry_id
            if marker.kind == COLLATERAL and marker.entry_id:
                offer(f"Explain this line: {title_of(ls.kb, marker.entry_id)} (collateral)", EXPLAIN, marker.entry_id)
                if marker.rank is not None:
                    offer(f"Why not rank {marker.rank}? (the first fault is elsewhere)", ASK, f"why not rank {marker.rank}")
            if not explained:
                continue
            offer(f"Explain this failure: {title_of(ls.kb, explained)}", EXPLAIN, explained)
            explained_entry = entry_or_none(ls.kb, explained)
            if explained_entry is not None and verification_command(explained_entry, {})[1]:
                offer("Copy the verification command", COPY_VERIFICATION, explained)
    again = "Diagnose this folder again"
    actions.append(types.CodeAction(title=again, kind=types.CodeActionKind.Source,
                                    command=types.Command(title=again, command=DIAGNOSE_FOLDER, arguments=[folder])))
    return actions


def _options(rest) -> dict:
    return rest[0] if rest and isinstance(rest[0], dict) else {}


def _target_and_options(arguments) -> tuple[Path, dict]:
    if not arguments or not isinstance(arguments[0], str) or not arguments[0].strip():
        raise RequestError("no folder given", "pass a folder or a file of the run (a path or a file:// URI)")
    given = arguments[0]
    path = Path(to_fs_path(given) or given) if given.startswith("file:") else Path(given).expanduser()
    if not path.exists():
        raise RequestError(f"{given}: no such file or folder", "check the path")
    return path.absolute(), _options(arguments[1:])


def _scope_for(path: Path, roots, limits: ScopeLimits) -> JobScope:
    """A folder asked for is diagnosed whole; a file brings its job (as when it is opened)."""
    return JobScope(path, (str(path),)) if path.is_dir() else job_scope(path, roots, limits)


def _diagnose_text(named_texts, mask_hosts: bool, kb, observer):
    return diagnose_texts(named_texts, mask_hosts=mask_hosts, kb=kb, observer=observer)


def _entry_and_values(ls: FirstfaultServer, arguments):
    if not arguments or not isinstance(arguments[0], str):
        raise RequestError("no entry id given", "`firstfault list` shows every id")
    try:
        entry = ls.kb.get(arguments[0])
    except FirstfaultError as exc:
        raise RequestError(exc.message, exc.hint or "`firstfault list` shows every id") from None
    values = {}
    folder = arguments[1] if len(arguments) > 1 and isinstance(arguments[1], str) else None
    for open_job in ls.jobs.values():
        diagnosis = open_job.job.diagnosis
        if folder and str(open_job.job.folder) == folder and diagnosis and diagnosis.primary \
                and diagnosis.primary.failure_id == entry.id:
            values = dict(diagnosis.fix_values)
    return entry, values


async def _show_report(ls: FirstfaultServer, name: str, markdown: str) -> None:
    path = await asyncio.get_running_loop().run_in_executor(ls.pool, ls.links.report_file, name, markdown)
    if _shows_documents(ls):
        await ls.window_show_document_async(types.ShowDocumentParams(uri=path.as_uri(), take_focus=True))


def _shows_documents(ls: FirstfaultServer) -> bool:
    window = getattr(ls.client_capabilities, "window", None)
    return bool(window is not None and window.show_document is not None and window.show_document.support)

