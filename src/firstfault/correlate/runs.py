"""Which input files belong to one run: the files of one run overlap in time, directly or through
a file that spans them (the launcher's log spans a failed attempt's files and the restarted
attempt's); a group of files that began after every other had ended (a rerun, the last attempt kept
in a subfolder) is another run.

    runs = runs_of(facts.inputs)              # {file: its run's number} of each timed file
    same_run(runs, "console.log", "rerun/console.log")   # False when no overlap joins them
    finish_covers(runs, "previous-run/slurm-7.out", "train.log")   # False: untimed, outside its folder

Only a finish line is held to it (correlate/rules/ending.py): it is not used to split a job's files
otherwise.
"""
from __future__ import annotations

from pathlib import PurePath

from ..ingest.combined import PIECE_OF
from ..model import InputSummary

RUN_GAP_SECONDS = 1.0  # clocks: a file that began more than this after another ended is another run's


def runs_of(inputs: InputSummary) -> dict[str, int]:
    """Each timed file's run, numbered in time order: spans merged in start order, a span that
    begins after every earlier one had ended starting a new run."""
    runs, run, reach = {}, -1, None
    for source, first, last in sorted(inputs.spans, key=lambda item: (item[1], item[2])):
        if reach is None or first > reach + RUN_GAP_SECONDS:
            run, reach = run + 1, last
        else:
            reach = max(reach, last)
        runs[source] = run
    return runs


def same_run(runs: dict[str, int], one: str, other: str) -> bool:
    """Whether two files may be of one run: yes for one file, or when either has no times (nothing
    says otherwise); no when no chain of overlapping files joins their times."""
    if one == other or one not in runs or other not in runs:
        return True
    return runs[one] == runs[other]


def finish_covers(runs: dict[str, int], finished: str, failed: str) -> bool:
    """Whether a finish written for the file `finished` (its run's file) speaks for an error in
    `failed`: their times join them in one run; or, when either has no times, `failed` lies in
    `finished`'s folder or below it (a run kept in a folder of its own, `previous-run/`, says
    nothing of the files beside that folder)."""
    if finished in runs and failed in runs:
        return same_run(runs, finished, failed)
    return _place(finished).parent in (_place(failed).parent, *_place(failed).parent.parents)


def _place(source: str) -> PurePath:
    """Where a source lies: its path, or for a piece of a text that held several files (`rank1.log in
    /logs/issue.md`, ingest.combined) that file's name inside the text, as if the text were a folder."""
    name, within, text = source.partition(PIECE_OF)
    return PurePath(text) / name if within else PurePath(source)
