"""Being told when a job's files change, by the operating system (inotify on Linux, FSEvents on
macOS, through `watchdog`), instead of looking at every file each second.

`ChangeNotices.follow(scope)` watches the job's folder (recursively when the job is its whole run
folder, else only the folder the listed files lie in) and calls `notify(scope)` from the watcher's
thread when a file of the job is created, written, closed after writing, moved or deleted. Reads
never notify (the diagnosis opens every file). When the watcher cannot be had (watchdog missing,
the system's watch limit reached), `follow` returns False and the caller looks at the files
itself, as before.
"""
from __future__ import annotations

import os
import threading
from typing import Callable

from .folders import JobScope

CHANGES = frozenset({"created", "modified", "deleted", "moved", "closed"})  # "closed": after writing


class ChangeNotices:
    """File-system events for the jobs open in the editor."""

    def __init__(self, notify: Callable[[JobScope], None]) -> None:
        self.notify = notify
        self.problem = ""  # why events cannot be had, for the log
        self._lock = threading.Lock()
        self._watches: dict[JobScope, list] = {}
        self._observer = None
        try:
            from watchdog.observers import Observer
        except ImportError:
            self.problem = "the watchdog package is not installed (pip install -e '.[lsp]')"
            return
        self._observer = Observer()
        self._observer.daemon = True
        self._observer.start()

    def follow(self, scope: JobScope) -> bool:
        """Watch the files of `scope`; False when they must be polled instead (`problem` says why)."""
        if self._observer is None:
            return False
        with self._lock:
            if scope in self._watches:
                return True
        handler = _JobHandler(scope, self.notify)
        watches = []
        try:
            for folder, recursive in _folders_of(scope):
                watches.append(self._observer.schedule(handler, folder, recursive=recursive))
        except OSError as exc:  # inotify's watch limit, a folder gone
            for watch in watches:
                self._observer.unschedule(watch)
            self.problem = f"the system refused to watch {scope.folder}: {exc.strerror or exc}"
            return False
        with self._lock:
            self._watches[scope] = watches
        return True

    def stop_following(self, scope: JobScope) -> None:
        with self._lock:
            watches = self._watches.pop(scope, [])
        for watch in watches:
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError):
                continue  # the folder is gone: so is its watch

    def close(self) -> None:
        if self._observer is not None:
            self._observer.stop()


def _folders_of(scope: JobScope) -> list[tuple[str, bool]]:
    """(folder, recursive) to watch: the run folder with everything in it, or the folders the
    job's listed files lie in (a file can be created in them again after being deleted)."""
    if scope.paths == (str(scope.folder),):
        return [(str(scope.folder), True)]
    return [(folder, False) for folder in sorted({os.path.dirname(path) for path in scope.paths})]


class _JobHandler:
    """Calls `notify(scope)` for events that change a file of the job (watchdog's handler API)."""

    def __init__(self, scope: JobScope, notify: Callable[[JobScope], None]) -> None:
        self.scope = scope
        self.notify = notify
        self.whole_folder = scope.paths == (str(scope.folder),)
        self.files = frozenset(scope.paths)

    def dispatch(self, event) -> None:
        if event.event_type not in CHANGES:
            return
        paths = [os.fsdecode(event.src_path)] + ([os.fsdecode(event.dest_path)] if getattr(event, "dest_path", "") else [])
        if self.whole_folder or any(path in self.files for path in paths):
            self.notify(self.scope)
