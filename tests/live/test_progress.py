"""Hang detection: who stopped first, when all or only some ranks fall silent."""
from __future__ import annotations

from firstfault.ingest.attribution import PathHints
from firstfault.watch.alerts import AlertBook
from firstfault.watch.progress import ProgressTracker


def _feed(tracker, rank, step, now, text="loss 1.0"):
    tracker.observe(f"step {step} {text}\n".encode(), f"rank{rank}.log", PathHints(rank=rank), now)


def test_the_rank_behind_is_named_when_all_fall_silent():
    tracker = ProgressTracker(after_seconds=3)
    for step in range(5):
        for rank in range(4):
            _feed(tracker, rank, step, now=step)
    for rank in (0, 2, 3):
        _feed(tracker, rank, 5, now=5)  # rank 1 never reaches step 5; the others wait in a collective
    assert tracker.check(now=6.9) is None
    early = tracker.check(now=7)  # rank 1 silent for 3 s while the others printed a step later
    assert early.kind == "partial" and early.ranks == (1,)
    verdict = tracker.check(now=8.5)
    assert verdict.kind == "all" and verdict.ranks == (1,)


def test_ranks_that_stop_while_others_go_on():
    tracker = ProgressTracker(after_seconds=3)
    for step in range(10):
        _feed(tracker, 0, step, now=step)
        if step < 4:
            _feed(tracker, 1, step, now=step)
    verdict = tracker.check(now=9)
    assert verdict.kind == "partial" and verdict.ranks == (1,)
    assert [entry.label for entry in verdict.active] == ["rank 0"]


def test_prefixed_lines_and_rank_less_files():
    tracker = ProgressTracker(after_seconds=1)
    tracker.observe(b"[default0]:step 1\n[default1]:step 1\n[default0]:step 2\n[default1]:step 2\n",
                    "console.log", PathHints(), now=0)
    tracker.observe(b"iteration 1\niteration 2\n", "single.log", PathHints(), now=0)
    assert set(tracker.ranks) == {"rank 0", "rank 1", "single.log"}


def test_ranks_without_a_cadence_do_not_take_part():
    tracker = ProgressTracker(after_seconds=1)
    tracker.observe(b"loading data\n", "rank3.log", PathHints(rank=3), now=0)
    assert tracker.check(now=100) is None


def test_hang_alert_once_then_resolved():
    tracker = ProgressTracker(after_seconds=1)
    book = AlertBook()
    _feed(tracker, 0, 1, now=0)
    _feed(tracker, 0, 2, now=0)
    hang = book.from_hang(tracker.check(now=2))
    assert hang.kind == "hang" and hang.ranks == (0,)
    assert book.from_hang(tracker.check(now=3)) is None
    _feed(tracker, 0, 3, now=4)
    assert book.from_hang(tracker.check(now=4)).kind == "resolved"
