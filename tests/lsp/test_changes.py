"""The system tells the editor server when a job's files change (real inotify through watchdog):
writes, new files and deletions notify, reads and other folders' files do not."""
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("watchdog", reason="file-system events need the lsp extra: pip install -e '.[lsp]'")

from firstfault.lsp.changes import ChangeNotices  # noqa: E402
from firstfault.lsp.folders import JobScope  # noqa: E402


class Told:
    def __init__(self) -> None:
        self.scopes: list[JobScope] = []
        self.event = threading.Event()

    def __call__(self, scope: JobScope) -> None:
        self.scopes.append(scope)
        self.event.set()

    def wait(self, seconds: float = 10.0) -> bool:
        """Told within `seconds`; the rest of the burst (created, modified, closed) is let pass."""
        told = self.event.wait(seconds)
        while not self.quiet_for(0.3):
            pass
        return told

    def quiet_for(self, seconds: float) -> bool:
        time.sleep(seconds)
        quiet = not self.event.is_set()
        self.event.clear()
        return quiet


@pytest.fixture
def notices():
    told = Told()
    watcher = ChangeNotices(told)
    yield watcher, told
    watcher.close()


def test_a_run_folder_notifies_for_writes_in_it_and_below(tmp_path, notices):
    watcher, told = notices
    run = tmp_path / "run"
    (run / "node1").mkdir(parents=True)
    (run / "rank0.log").write_text("step 1\n")
    scope = JobScope(run, (str(run),))
    assert watcher.follow(scope), watcher.problem
    with open(run / "rank0.log", "ab") as handle:
        handle.write(b"step 2\n")
    assert told.wait() and told.scopes[-1] == scope
    (run / "node1" / "rank8.log").write_text("new\n")
    assert told.wait()
    (run / "rank0.log").read_bytes()  # the diagnosis reading the file
    assert told.quiet_for(0.5)
    (run / "rank0.log").unlink()
    assert told.wait()


def test_a_listed_job_notifies_only_for_its_own_files(tmp_path, notices):
    watcher, told = notices
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    mine = downloads / "slurm-881-gpu-b07.out"
    mine.write_text("x\n")
    scope = JobScope(downloads, (str(mine),))
    assert watcher.follow(scope)
    (downloads / "holiday.jpg").write_bytes(b"\xff\xd8")
    assert told.quiet_for(0.5)
    with open(mine, "a") as handle:
        handle.write("y\n")
    assert told.wait()
    watcher.stop_following(scope)
    with open(mine, "a") as handle:
        handle.write("z\n")
    assert told.quiet_for(0.5)


def test_a_folder_that_cannot_be_watched_falls_back(tmp_path, notices):
    watcher, _told = notices
    gone = tmp_path / "gone"
    assert not watcher.follow(JobScope(gone, (str(gone),)))
    assert "gone" in watcher.problem
