"""The editor server's state and work: jobs open in the editor, their diagnoses, what is published.

A log file opened in the editor is diagnosed with its job (`folders.job_scope`: its run folder,
bounded), read from disk, never from the editor's copy of the text; the diagnostics land on every
file the evidence lies in. Diagnoses run in worker threads (`progress` reports them and stops them
on cancel). The operating system tells when a file of an open job changes (`changes`); once the
change has settled (quiet for `settle_seconds`, or going on for MAX_WAIT_SECONDS) the diagnosis
is brought up to date incrementally (`job.Job`). Where events cannot be had, the job's files are
looked at every `poll_seconds` instead.
Everything sent to the client is sent from the event loop. The LSP features are wired to this
in `features`.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from ..correlate.ranks import resolve
from ..model import Diagnosis
from .changes import ChangeNotices
from .folders import JobScope, ScopeLimits, is_log_document, job_scope
from .job import Job
from .links import DEFAULT_WEB_URL, EntryLinks
from .markers import Marker, markers_for
from .progress import Cancelled, EditorProgress, report_progress
from .publish import diagnostics_by_uri, unread_diagnostic, uri_of

MAX_WAIT_SECONDS = 3.0  # a file written without pause is still re-diagnosed this often
DIAGNOSIS_THREADS = 2


@dataclass
class Settings:
    """What the client may set in `initializationOptions`."""

    web_url: str = DEFAULT_WEB_URL  # firstfault serve's address, for links to entry pages ("" : never)
    poll_seconds: float = 1.0  # how often the files of open jobs are looked at, where events cannot be had
    settle_seconds: float = 0.5  # how long a changed job must stay quiet before it is read again
    clipboard: bool = False  # the client copies verification commands itself (else they are shown)
    limits: ScopeLimits = field(default_factory=ScopeLimits)  # how much one opened log brings with it
    save_history: bool = False  # keep each new diagnosis in the history (firstfault history, ask)
    history_database: str | None = None  # that database (default: the user data directory's)

    @classmethod
    def from_options(cls, options) -> "Settings":
        options = options if isinstance(options, dict) else {}
        settings = cls()
        if isinstance(options.get("webUrl"), str):
            settings.web_url = options["webUrl"]
        poll = options.get("pollSeconds")
        if isinstance(poll, (int, float)) and 0.05 <= poll <= 60:
            settings.poll_seconds = float(poll)
        settle = options.get("settleSeconds")
        if isinstance(settle, (int, float)) and 0.05 <= settle <= 60:
            settings.settle_seconds = float(settle)
        settings.clipboard = options.get("clipboard") is True
        settings.save_history = options.get("saveHistory") is True
        if isinstance(options.get("historyDatabase"), str) and options["historyDatabase"].strip():
            settings.history_database = options["historyDatabase"]
        bounds = {name: options.get(key) for name, key in (("max_files", "jobMaxFiles"), ("max_bytes", "jobMaxBytes"),
                                                             ("max_depth", "jobMaxDepth"))}
        settings.limits = ScopeLimits(**{name: value for name, value in bounds.items()
                                         if isinstance(value, int) and not isinstance(value, bool) and value > 0})
        return settings


@dataclass
class Publication:
    """What one diagnosis puts in the editor, prepared off the event loop."""

    diagnostics: dict[str, list[types.Diagnostic]] = field(default_factory=dict)
    markers: dict[tuple[str, int], list[Marker]] = field(default_factory=dict)  # (uri, 0-based line)
    links: dict[str, str] = field(default_factory=dict)  # entry id -> href
    unread: dict[str, str] = field(default_factory=dict)  # uri -> why the file was not read


@dataclass
class OpenJob:
    """A job with documents open in the editor (or diagnosed on request)."""

    job: Job
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    documents: set[str] = field(default_factory=set)  # URIs open in the editor
    published: set[str] = field(default_factory=set)  # URIs that carry diagnostics now
    publication: Publication = field(default_factory=Publication)
    change: tuple[float, dict] | None = None  # (first seen, stamps last seen) of a change not yet read
    polled: bool = False  # its files are looked at every poll_seconds (no file-system events)
    events: tuple[float, float] | None = None  # (first, last) loop time of change events not yet read
    told: set[str] = field(default_factory=set)  # messages already shown for this job
    cancel: threading.Event | None = None  # of the diagnosis running now


class CancellingProtocol(LanguageServerProtocol):
    """pygls answers `$/cancelRequest` for a command that has started but cannot stop it: this
    also tells the diagnosis the command runs, which stops at its next block."""

    def _handle_cancel_notification(self, msg_id) -> None:
        super()._handle_cancel_notification(msg_id)
        cancel = self._server.request_cancels.get(msg_id)
        if cancel is not None:
            cancel.set()


class FirstfaultServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("firstfault", __version__, text_document_sync_kind=types.TextDocumentSyncKind.None_,
                         protocol_cls=CancellingProtocol)
        self.request_cancels: dict[object, threading.Event] = {}  # request id -> its diagnosis's cancel
        self.kb = None
        self.links: EntryLinks | None = None
        self.settings = Settings()
        self.jobs: dict[JobScope, OpenJob] = {}
        self.documents: dict[str, JobScope] = {}
        self.pool = ThreadPoolExecutor(DIAGNOSIS_THREADS, thread_name_prefix="firstfault-diagnosis")
        self.tasks: set[asyncio.Task] = set()
        self.watcher: asyncio.Task | None = None
        self.notices: ChangeNotices | None = None

    # -- setup -------------------------------------------------------------------------------

    def configure(self, kb, options) -> None:
        self.kb = kb
        self.settings = Settings.from_options(options)
        self.links = EntryLinks(kb, self.settings.web_url)

    def start_watching(self) -> None:
        if self.watcher is None:
            loop = asyncio.get_running_loop()
            self.notices = ChangeNotices(lambda scope: loop.call_soon_threadsafe(self._changed, scope))
            self.watcher = loop.create_task(self._poll_files())

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
        if self.notices is not None:
            self.notices.close()
        for task in self.tasks:
            task.cancel()
        for entry in self.jobs.values():
            if entry.cancel is not None:
                entry.cancel.set()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def workspace_roots(self) -> list[Path]:
        uris = [folder.uri for folder in self.workspace.folders.values()] if self.workspace else []
        if self.workspace is not None and self.workspace.root_uri:
            uris.append(self.workspace.root_uri)
        return [Path(path) for path in (to_fs_path(uri) for uri in uris) if path]

    # -- documents ---------------------------------------------------------------------------

    async def open_document(self, uri: str) -> None:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None or not is_log_document(Path(path)):
            return
        # found here, not in a worker: a request right after didOpen must find the document's job
        # (a few folder listings, each bounded)
        scope = job_scope(Path(path), self.workspace_roots(), self.settings.limits)
        entry = self.job_for(scope)
        if not entry.documents:
            self._follow(entry)
        entry.documents.add(uri)
        self.documents[uri] = scope
        if entry.job.diagnosed_at or entry.job.problem or entry.lock.locked():
            self._publish(entry)  # already diagnosed (or being): only this file's own state to add
            return
        await self.diagnose_job(entry)

    def close_document(self, uri: str) -> None:
        scope = self.documents.pop(uri, None)
        entry = self.jobs.get(scope) if scope is not None else None
        if entry is None:
            return
        entry.documents.discard(uri)
        if not entry.documents:
            # the last file of the job closed: its marks go, and it is no longer watched
            if entry.cancel is not None:
                entry.cancel.set()
            for published in entry.published:
                self._send(published, [])
            if self.notices is not None:
                self.notices.stop_following(scope)
            del self.jobs[scope]

    def job_for(self, scope: JobScope) -> OpenJob:
        entry = self.jobs.get(scope)
        if entry is None:
            entry = self.jobs[scope] = OpenJob(Job(scope, self.kb))
        return entry

    def job_of_document(self, uri: str) -> OpenJob | None:
        scope = self.documents.get(uri)
        return self.jobs.get(scope) if scope is not None else None

    # -- diagnosing --------------------------------------------------------------------------

    async def diagnose_job(self, entry: OpenJob, *, refresh: bool = False, request=None) -> Diagnosis | None:
        """Diagnose the job (or bring it up to date), with progress, and publish what it found;
        None when it was cancelled or nothing in it could be read (`job.problem` says why)."""
        async with entry.lock:
            observer = EditorProgress()
            entry.cancel = observer.cancel
            title = f"firstfault: diagnosing {entry.job.folder.name or entry.job.folder}"
            publication = await self.run_with_progress(title, observer, self._diagnose_in_thread, entry, observer, refresh,
                                                       request=request)
            if publication is None:
                self._log(f"diagnosis of {entry.job.folder} cancelled")
                return None
            entry.publication = publication
            self._publish(entry)
            if entry.job.diagnosis is not None:
                self._log(_summary(entry.job))
                if self.settings.save_history:
                    await self._save(entry)
                if entry.job.scope.left_out:
                    self._tell(entry, _what_was_read(entry.job), types.MessageType.Info)
            return entry.job.diagnosis

    async def run_with_progress(self, title: str, observer: EditorProgress, function, *args, request=None):
        """Run `function(*args)` in a worker thread with `$/progress`; None when cancelled (by the
        client's progress button, or by cancelling `request`, the id of the request it runs for)."""
        loop = asyncio.get_running_loop()
        if request is not None:
            self.request_cancels[request] = observer.cancel
        work = loop.run_in_executor(self.pool, function, *args)
        reporter = loop.create_task(report_progress(self, title, observer, work))
        try:
            return await asyncio.shield(work)
        except Cancelled:
            return None
        except asyncio.CancelledError:
            observer.cancel.set()
            await asyncio.wait([work])  # the thread stops at its next block: only then is the job free
            raise
        finally:
            await asyncio.wait([reporter])
            self.request_cancels.pop(request, None)

    def _diagnose_in_thread(self, entry: OpenJob, observer: EditorProgress, refresh: bool) -> Publication:
        job = entry.job
        if refresh:
            job.refresh(observer)
        else:
            job.diagnose(observer)
        return self.prepare(job)

    def prepare(self, job: Job) -> Publication:
        """Markers, diagnostics and links of the job's diagnosis (file names and web probes: a
        worker thread's work)."""
        publication = Publication(unread={uri_of(scan.input.display): scan.error for scan in job.scans if scan.error})
        diagnosis = job.diagnosis
        if diagnosis is None:
            return publication
        matches = resolve([scan for scan in job.scans if not scan.error]) if diagnosis.collateral else []
        markers = markers_for(diagnosis, self.kb, matches)
        values = dict(diagnosis.fix_values)
        primary = diagnosis.primary.failure_id if diagnosis.primary else ""

        def href(entry_id: str) -> str:
            if entry_id not in publication.links:
                publication.links[entry_id] = self.links.entry_href(entry_id, values if entry_id == primary else None)
            return publication.links[entry_id]

        if primary:
            href(primary)  # hovers on collateral lines link the first fault's entry
        publication.diagnostics = diagnostics_by_uri(markers, href)
        for marker in markers:
            publication.markers.setdefault((uri_of(marker.source), marker.line - 1), []).append(marker)
        return publication

    async def _save(self, entry: OpenJob) -> None:
        """Keep the diagnosis in the history; say when the same failure was seen before."""
        from ..commands.diagnose import history_sentence, save
        from ..errors import FirstfaultError

        loop = asyncio.get_running_loop()
        try:
            saved = await loop.run_in_executor(self.pool, save, entry.job.diagnosis, self.kb,
                                               self.settings.history_database, "editor")
        except FirstfaultError as exc:
            self._tell(entry, f"firstfault: the history cannot be written: {exc.message}", types.MessageType.Warning)
            return
        if saved.get("seen_before"):
            self._tell(entry, f"firstfault: {history_sentence(saved)}", types.MessageType.Info)
        else:
            self._log(f"saved in the history as #{saved['id']}")

    def _publish(self, entry: OpenJob) -> None:
        publication, job = entry.publication, entry.job
        diagnostics = {uri: list(items) for uri, items in publication.diagnostics.items()}
        unread = {uri: publication.unread[uri] for uri in entry.documents if publication.unread.get(uri)}
        for uri, reason in unread.items():
            diagnostics.setdefault(uri, []).insert(0, unread_diagnostic(reason))
        for uri in entry.published - set(diagnostics):
            self._send(uri, [])
        for uri, items in diagnostics.items():
            self._send(uri, items)
        entry.published = set(diagnostics)
        for uri, reason in unread.items():
            self._tell(entry, f"firstfault did not read {Path(to_fs_path(uri) or uri).name}: {reason}",
                       types.MessageType.Warning)
        if job.problem:
            self._tell(entry, f"firstfault: nothing to diagnose for {job.folder}: {job.problem}", types.MessageType.Warning)

    def _send(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def _tell(self, entry: OpenJob, message: str, kind: types.MessageType) -> None:
        """Show a message once per job (a file that stays unreadable is not announced at every look)."""
        if message in entry.told:
            return
        entry.told.add(message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def _log(self, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))

    # -- files changing on disk ----------------------------------------------------------------

    def _follow(self, entry: OpenJob) -> None:
        """Have the system tell when the job's files change; else look at them every poll_seconds."""
        folder = entry.job.folder
        if self.notices is not None and self.notices.follow(entry.job.scope):
            self._log(f"following {folder} by file-system events")
            return
        entry.polled = True
        why = self.notices.problem if self.notices is not None else "the server has not started watching"
        self._log(f"looking at the files of {folder} every {self.settings.poll_seconds:g} s: {why}")

    def _changed(self, scope: JobScope) -> None:
        """A file of an open job changed (called on the loop for each event of a burst)."""
        entry = self.jobs.get(scope)
        if entry is None or not entry.documents:
            return
        now = asyncio.get_running_loop().time()
        if entry.events is None:
            entry.events = (now, now)
            self._spawn(self._read_when_settled(entry))
        else:
            entry.events = (entry.events[0], now)

    async def _read_when_settled(self, entry: OpenJob) -> None:
        """Once the job has been quiet for settle_seconds (a burst of writes is read once), or has
        changed for MAX_WAIT_SECONDS without pause, bring its diagnosis up to date."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.settle_seconds)
            first, last = entry.events
            now = loop.time()
            if now - last >= self.settings.settle_seconds or now - first >= MAX_WAIT_SECONDS:
                break
        entry.events = None
        if entry.documents and self.jobs.get(entry.job.scope) is entry:
            self._spawn(self.diagnose_job(entry, refresh=True))

    async def _poll_files(self) -> None:
        """Look at the files of the jobs that have no file-system events."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.poll_seconds)
            for entry in list(self.jobs.values()):
                if (not entry.polled or not entry.documents or entry.lock.locked()
                        or not (entry.job.diagnosed_at or entry.job.problem)):
                    continue
                try:
                    stamps = await loop.run_in_executor(self.pool, entry.job.current_stamps)
                except RuntimeError:  # the pool is shut down: the server is stopping
                    return
                if self._settled(entry, stamps, loop.time()):
                    self._spawn(self.diagnose_job(entry, refresh=True))

    def _settled(self, entry: OpenJob, stamps: dict, now: float) -> bool:
        """Whether a change to the job's files is ready to be read: unchanged since the last
        look (a burst of writes is read once), or changing for MAX_WAIT_SECONDS already."""
        if stamps == entry.job.stamps:
            entry.change = None
            return False
        if entry.change is None:
            entry.change = (now, stamps)
            return False
        first_seen, last = entry.change
        if stamps == last or now - first_seen >= MAX_WAIT_SECONDS:
            entry.change = None
            return True
        entry.change = (first_seen, stamps)
        return False

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


def _what_was_read(job: Job) -> str:
    """What the editor is told when an opened log did not bring its whole folder."""
    inputs = job.diagnosis.inputs
    return (f"firstfault read {len(inputs.files)} file(s), {inputs.bytes / 1e6:.1f} MB, of {job.folder}; "
            f"left out {job.scope.left_out}: {job.scope.why}. Diagnose the folder to read it all.")


def _summary(job: Job) -> str:
    diagnosis = job.diagnosis
    inputs = diagnosis.inputs
    what = diagnosis.status
    if diagnosis.primary is not None and diagnosis.initiating is not None:
        first = diagnosis.initiating
        what += f" {diagnosis.primary.failure_id}, first fault at {first.source}:{first.line}"
    how = f" ({job.incremental_updates} incremental update(s))" if job.incremental_updates else ""
    return f"diagnosed {job.folder}: {what}; read {len(inputs.files)} files, {inputs.lines} lines{how}"
