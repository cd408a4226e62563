"""The Markdown files the editor server writes (reports and entries) are the user's only: they
name the hosts, paths and fixes of the user's jobs, like the history database (0600)."""
from __future__ import annotations

import os
import stat

from firstfault.kb import load_knowledge_base
from firstfault.lsp.links import EntryLinks


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_reports_and_entries_are_written_for_the_user_only(tmp_path):
    previous = os.umask(0o022)  # a common default: files 0644, folders 0755
    try:
        links = EntryLinks(load_knowledge_base(), web_url=None, folder=tmp_path / "firstfault")
        report = links.report_file("/home/<user>/jobs/run7/rank3.log", "# Report\n\nhost gpu-b07\n")
        entry = links.entry_file(load_knowledge_base().entries[0].id)
    finally:
        os.umask(previous)
    assert report.read_text() == "# Report\n\nhost gpu-b07\n"
    for path in (report, entry):
        assert mode(path) == 0o600, oct(mode(path))
        assert mode(path.parent) == 0o700 and mode(tmp_path / "firstfault") == 0o700
    assert not [name for name in os.listdir(report.parent) if name.startswith(".")]  # no partial file left
