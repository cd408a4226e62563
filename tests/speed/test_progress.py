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
    assert "0/1 files" in text and "2.0 MB of 5.0 MB" in text and "1 MB/s" in text and "(40%)" in text
    observer.file_finished(FakeScan())
    observer.close()
    assert stream.getvalue().endswith("\r")
