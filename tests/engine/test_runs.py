"""Which input files are one run (correlate/runs.py): overlapping times, directly or through a file
that spans them; a group that began after every other had ended is another run."""
from __future__ import annotations

from firstfault.correlate.runs import runs_of, same_run
from firstfault.model import InputSummary

SPANS = {"attempt_0/1/stderr.log": (1.0, 3.0), "attempt_1/0/stdout.log": (12.0, 31.0), "launcher.log": (0.0, 32.0),
         "previous-run/console.log": (500.0, 560.0)}


def _runs(spans: dict) -> dict:
    return runs_of(InputSummary(spans=tuple((name, first, last) for name, (first, last) in spans.items())))


def test_files_joined_by_a_file_that_spans_them_are_one_run():
    assert same_run(_runs(SPANS), "attempt_0/1/stderr.log", "attempt_1/0/stdout.log")


def test_files_whose_times_do_not_meet_are_two_runs():
    assert not same_run(_runs(SPANS), "attempt_0/1/stderr.log", "previous-run/console.log")
    without_launcher = {name: span for name, span in SPANS.items() if name != "launcher.log"}
    assert not same_run(_runs(without_launcher), "attempt_0/1/stderr.log", "attempt_1/0/stdout.log")


def test_a_file_without_times_may_be_of_either_run():
    assert same_run(_runs(SPANS), "attempt_0/1/stderr.log", "notes.txt")
    assert same_run(_runs(SPANS), "launcher.log", "launcher.log")
