"""Where an editor sends the reader of an entry or a report: the local web app's page when it is
running, else a Markdown file rendered here.

The web app (`firstfault serve`) is asked once in a while, briefly, whether it is up and is
firstfault (its JSON API names the entry); its answer is remembered for a little while, so marking
a thousand lines asks once. Markdown files go to the user's cache folder
(`$XDG_CACHE_HOME/firstfault`, else `~/.cache/firstfault`), one per entry and one per report.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ..kb.cache import cache_dir
from ..render.entry import render_entry

DEFAULT_WEB_URL = "http://127.0.0.1:8000"
PROBE_SECONDS = 0.3  # a web app on this machine answers well within this
REMEMBER_SECONDS = 30.0


class EntryLinks:
    """Links to entries and reports, and the Markdown files behind them."""

    def __init__(self, kb, web_url: str | None = DEFAULT_WEB_URL, folder: Path | None = None,
                 clock=time.monotonic) -> None:
        self.kb = kb
        self.web_url = (web_url or "").rstrip("/")
        self.folder = folder or cache_dir()
        self.clock = clock
        self._web_up: tuple[float, bool] | None = None
        self._lock = threading.Lock()

    def entry_href(self, entry_id: str, values: dict | None = None) -> str:
        """The entry's page in the running web app, else its Markdown file (written now)."""
        if self.web_running():
            return f"{self.web_url}/entries/{urllib.parse.quote(entry_id)}"
        return self.entry_file(entry_id, values).as_uri()

    def entry_markdown(self, entry_id: str, values: dict | None = None) -> str:
        """The whole entry as Markdown, the values the log showed filled in."""
        entry = self.kb.get(entry_id)
        titles = {item.id: item.title for item in self.kb.entries}
        return render_entry(entry, "markdown", values=values or None, related_titles=titles)

    def entry_file(self, entry_id: str, values: dict | None = None) -> Path:
        entry = self.kb.get(entry_id)
        return self._write(Path("entries") / f"{entry.id}.md", self.entry_markdown(entry.id, values))

    def report_file(self, name: str, markdown: str) -> Path:
        """A diagnosis report as a Markdown file, named after what was diagnosed."""
        digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()[:12]
        stem = "".join(char if char.isalnum() or char in "-_" else "-" for char in Path(name).name)[:60] or "report"
        return self._write(Path("reports") / f"{stem}-{digest}.md", markdown)

    def web_running(self) -> bool:
        """Whether firstfault's web app answers at `web_url` (remembered for a while)."""
        if not self.web_url:
            return False
        with self._lock:
            now = self.clock()
            if self._web_up is not None and now - self._web_up[0] < REMEMBER_SECONDS:
                return self._web_up[1]
            up = self._probe()
            self._web_up = (now, up)
            return up

    def _probe(self) -> bool:
        some_entry = self.kb.entries[0].id if self.kb.entries else ""
        url = f"{self.web_url}/api/entries/{urllib.parse.quote(some_entry)}"
        try:
            with urllib.request.urlopen(url, timeout=PROBE_SECONDS) as response:  # noqa: S310 (the user's own URL)
                document = json.loads(response.read(1 << 20))
        except (OSError, ValueError, urllib.error.URLError):
            return False
        return isinstance(document, dict) and document.get("id") == some_entry

    def _write(self, relative: Path, text: str) -> Path:
        """Reports name hosts, paths and fixes of the user's jobs: readable by the user only
        (folders 0700, files 0600, as the history database), whatever the umask."""
        path = self.folder / relative
        folder = self.folder
        for part in (None, *path.parent.relative_to(self.folder).parts):
            folder = folder if part is None else folder / part
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
        partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(partial, path)  # an editor showing the file never sees it half written
        return path
