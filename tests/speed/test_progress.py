"""The progress line: silent when stderr is not a terminal, drawn after a second, erased at the end."""
from __future__ import annotations

import io

from firstfault.progress import ProgressObserver


class FakeScan:
    class stats:
        bytes = 5_000_000


class Item:
    display = "rank0.log"
    path = None
    content = b"x" * 5_000_000


def test_silent_when_not_a_terminal():
    stream = io.StringIO()
    observer = ProgressObserver(stream)
    observer.file_started(Item(), 0, 1)
    observer.file_finished(FakeScan())
    observer.close()
    assert stream.getvalue() == ""


def test_drawn_after_delay_and_erased():
    now = [0.0]
    stream = io.StringIO()
    observer = ProgressObserver(stream, enabled=True, clock=lambda: now[0])
    observer.file_started(Item(), 0, 1)
    observer.bytes_scanned(1_000_000)
    assert stream.getvalue() == ""  # under a second: nothing
    now[0] = 2.0
    observer.bytes_scanned(1_000_000)
    text = stream.getvalue()
    assert "0/1 files" in text and "2.0 MB of 5.0 MB" in text and "1.0 MB/s" in text and "(40%)" in text
    observer.file_finished(FakeScan())
    observer.close()
    assert stream.getvalue().endswith("\r")


class Recorder:
    """An observer that keeps every call, as the CLI's ProgressObserver would receive them."""

    def __init__(self) -> None:
        self.calls = []

    def file_started(self, item, index, total):
        self.calls.append(("started", index))

    def file_finished(self, scan):
        self.calls.append(("finished", scan.input.display))

    def bytes_scanned(self, count):
        self.calls.append(("bytes", count))

    def bytes_in_flight(self, count):
        self.calls.append(("in_flight", count))


def test_a_large_file_among_many_shows_progress_while_workers_read_it(tmp_path, generator, signatures):
    """Scanned by worker processes, a large file used to show nothing until it was done: the
    observer now hears the bytes the workers have read so far, before the file finishes."""
    from firstfault.ingest.sources import expand_inputs
    from firstfault.match.parallel import scan_files
    from firstfault.match.scanner import Scanner

    generator.main(["single", str(tmp_path / "big"), "--size", "48M"])
    for rank in range(3):
        (tmp_path / f"rank{rank}.log").write_text(f"step 1 rank {rank}\n")
    inputs, _ = expand_inputs([str(tmp_path / "rank0.log"), str(tmp_path / "big"), str(tmp_path / "rank1.log"),
                               str(tmp_path / "rank2.log")])
    recorder = Recorder()
    scans = scan_files(Scanner(signatures), inputs, recorder, workers=2)
    assert len(scans) == len(inputs)
    big = next(index for index, item in enumerate(inputs) if item.display.endswith(".out"))
    finished_big = recorder.calls.index(("finished", inputs[big].display))
    in_flight = [count for kind, count in recorder.calls[:finished_big] if kind == "in_flight"]
    assert any(count > 4_000_000 for count in in_flight), recorder.calls[:finished_big]


def test_a_long_block_still_shows_progress_after_a_second():
    """No bytes reported for a while (one 4 MB block with the pure-Python matcher, or the
    correlation after the scan): the line is still drawn once a second has passed."""
    import time

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    observer = ProgressObserver(stream)
    observer.file_started(Item(), 0, 1)
    time.sleep(1.8)
    drawn = stream.getvalue()
    observer.close()
    assert "0/1 files" in drawn and " s" in drawn
    assert stream.getvalue().endswith("\r")
