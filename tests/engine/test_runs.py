"""Which input files are one run (correlate/runs.py): overlapping times, directly or through a file
that spans them; a group that began after every other had ended is another run."""
from __future__ import annotations

from firstfault.correlate.runs import finish_covers, runs_of, same_run
from firstfault.model import InputSummary
from firstfault.pipeline import diagnose_paths

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


def test_a_finish_speaks_for_an_untimed_file_only_in_its_folder_or_below():
    """The times decide when both files have them; when one has none, a finish written for a run
    kept in a folder of its own says nothing of the files beside that folder, and a launcher's
    finish at the top speaks for the ranks' files below it."""
    runs = _runs(SPANS)
    assert not finish_covers(runs, "previous-run/console.log", "attempt_0/1/stderr.log")  # by their times
    assert not finish_covers(runs, "previous-run/slurm-7712034.out", "train.log")  # untimed, beside the folder
    assert finish_covers(runs, "launcher.log", "attempt_0/2/stderr.log")  # untimed, below the launcher's folder
    assert finish_covers(runs, "node0.log", "node1.log")  # one folder


SACCT = """$ sacct -j 7712034 --format=JobID,State,Restarts,NodeList,Elapsed,ExitCode
JobID             State Restarts        NodeList    Elapsed ExitCode
------------ ---------- -------- --------------- ---------- --------
7712034       COMPLETED        0         gpu-c07   02:57:41      0:0
7712034.0     COMPLETED        0         gpu-c07   02:57:30      0:0
"""


def test_a_previous_runs_finish_in_its_own_folder_does_not_heal_an_untimed_failure_beside_it(tmp_path):
    """Yesterday's run kept in `previous-run/` (its Slurm output and sacct's COMPLETED) beside
    today's failed log, which prints no time: the failure stands."""
    (tmp_path / "previous-run").mkdir()
    (tmp_path / "previous-run" / "sacct.txt").write_text(SACCT)
    (tmp_path / "previous-run" / "slurm-7712034.out").write_text("epoch 9 loss 0.81\ntraining complete\n")
    (tmp_path / "train.log").write_text(
        "Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n"
        "RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.status == "failure" and diagnosis.primary.failure_id == "gpu-ecc-error"
