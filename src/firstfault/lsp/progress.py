"""Progress and cancellation of a diagnosis run for the editor.

The diagnosis runs in a worker thread with an `EditorProgress` as its pipeline observer: the
observer counts files and bytes (the terminal's ProgressObserver does the counting and the
wording) and raises `Cancelled` at the next block once the client cancels. `report_progress`
runs beside it on the server's event loop: after a moment (small jobs show nothing) it opens a
`$/progress` report, updates it a few times a second, closes it at the end, and turns the
client's "cancel" button into the cancellation the observer sees.
"""
from __future__ import annotations

import asyncio
import threading
import uuid

from lsprotocol import types

from ..progress import ProgressObserver

SHOW_AFTER_SECONDS = 0.3  # "more than a moment"
UPDATE_SECONDS = 0.25


class Cancelled(Exception):
    """The client cancelled the diagnosis."""


class EditorProgress(ProgressObserver):
    """A pipeline observer that counts what is done and stops the run when cancelled."""

    def __init__(self, cancel: threading.Event | None = None) -> None:
        super().__init__(stream=None, enabled=True)
        self.cancel = cancel or threading.Event()

    def _show(self) -> None:  # called at every file and every block read: the place to stop
        if self.cancel.is_set():
            raise Cancelled()

    def close(self) -> None:
        pass

    def percentage(self) -> int:
        if self.total <= 0:
            return 0
        if self.total == 1:
            size = next((size for size in self.sizes.values() if size), None)
            done = self.bytes_done + self.bytes_current
            return min(99, int(100 * done / size)) if size else 0
        return min(99, int(100 * self.files_done / self.total))

    def message(self) -> str:
        return self.line().strip() if self.total else "preparing (listing files, loading the signatures)"


async def report_progress(server, title: str, observer: EditorProgress, work: asyncio.Future,
                          token: types.ProgressToken | None = None) -> None:
    """$/progress for `work` while it runs longer than a moment. `token`: one the client gave
    with its request; else one is created when the client can show server-made progress."""
    try:
        await asyncio.wait_for(asyncio.shield(work), SHOW_AFTER_SECONDS)
        return
    except asyncio.TimeoutError:
        pass
    except Exception:  # the work failed: whoever awaits it reports that
        return
    progress = server.work_done_progress
    if token is None:
        if not _client_shows_progress(server):
            return
        token = f"firstfault-{uuid.uuid4()}"
        try:
            await progress.create_async(token)
        except Exception:  # the client refused: the work goes on without progress
            return
    if work.done():
        return
    progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True, message=observer.message(),
                                                      percentage=observer.percentage()))
    cancelled_by_client = progress.tokens.get(token)
    outcome = "done"
    try:
        while not work.done():
            if cancelled_by_client is not None and cancelled_by_client.cancelled():
                observer.cancel.set()
            progress.report(token, types.WorkDoneProgressReport(message=observer.message(), percentage=observer.percentage()))
            await asyncio.wait([work], timeout=UPDATE_SECONDS)
        if observer.cancel.is_set():
            outcome = "cancelled"
    finally:
        progress.end(token, types.WorkDoneProgressEnd(message=outcome))
        progress.tokens.pop(token, None)


def _client_shows_progress(server) -> bool:
    window = getattr(server.client_capabilities, "window", None)
    return bool(window is not None and window.work_done_progress)
