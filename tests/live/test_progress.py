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


def test_a_rank_that_printed_one_step_of_the_same_kind_takes_part():
    """Rank 2 prints one `step N` line and stops: with the others printing `step N` it is judged."""
    tracker = ProgressTracker(after_seconds=3)
    _feed(tracker, 2, 1, now=0)
    for step in range(1, 8):
        for rank in (0, 1, 3):
            _feed(tracker, rank, step, now=step)
    verdict = tracker.check(now=7)
    assert verdict.kind == "partial" and verdict.ranks == (2,)


def test_a_stray_line_of_another_kind_does_not_take_part():
    tracker = ProgressTracker(after_seconds=3)
    tracker.observe(b"Epoch 0 starting\n", "rank1.log", PathHints(rank=1), 0)
    for step in range(8):
        _feed(tracker, 0, step, now=step)
    assert tracker.check(now=7) is None


def test_backlog_says_how_far_ranks_got_but_never_raises_a_hang_alone():
    tracker = ProgressTracker(after_seconds=3)
    for rank, last in ((0, 6), (1, 6), (2, 2)):
        for step in range(1, last + 1):
            _feed_backlog(tracker, rank, step, now=0)
    assert tracker.check(now=100) is None  # an old run: nothing progressed since watching began
    for step in range(7, 12):
        for rank in (0, 1):
            _feed(tracker, rank, step, now=step - 6)
    verdict = tracker.check(now=5)
    assert verdict.kind == "partial" and verdict.ranks == (2,)  # silent since watching began


def _feed_backlog(tracker, rank, step, now):
    tracker.observe(f"step {step} loss 1.0\n".encode(), f"rank{rank}.log", PathHints(rank=rank), now, backlog=True)


def test_a_progress_regex_without_a_group_orders_by_its_number():
    tracker = ProgressTracker(after_seconds=1, pattern=r"it=\d+")
    for step in range(3):
        tracker.observe(f"it={step}\n".encode(), "rank0.log", PathHints(rank=0), step)
    tracker.observe(b"it=0\nit=1\n", "rank1.log", PathHints(rank=1), 0)
    assert tracker.check(now=2.5).ranks == (1,)
