"""Which input files belong to one run: the files of one run overlap in time, directly or through
a file that spans them (the launcher's log spans a failed attempt's files and the restarted
attempt's); a group of files that began after every other had ended (a rerun, the last attempt kept
in a subfolder) is another run.

    spans = file_spans(facts.inputs)          # {file: (first time, last time)} of each timed file
    same_run(spans, "console.log", "rerun/console.log")  # False when no overlap joins them

Only a finish line is held to it (correlate/rules/ending.py): it is not used to split a job's files
otherwise.
"""
from __future__ import annotations

from ..model import InputSummary

RUN_GAP_SECONDS = 1.0  # clocks: a file that began more than this after another ended is another run's


def file_spans(inputs: InputSummary) -> dict[str, tuple[float, float]]:
    return {source: (first, last) for source, first, last in inputs.spans}


def same_run(spans: dict, one: str, other: str) -> bool:
    """Whether two files may be of one run: yes for one file, or when either has no times (nothing
    says otherwise); no when no chain of overlapping files joins their times."""
    if one == other or one not in spans or other not in spans:
        return True
    return _cluster(spans, one) == _cluster(spans, other)


def _cluster(spans: dict, source: str) -> int:
    """The index of the group of overlapping time spans `source`'s falls in (spans merged in start order)."""
    cluster, reach = -1, None
    for name, (first, last) in sorted(spans.items(), key=lambda item: item[1]):
        if reach is None or first > reach + RUN_GAP_SECONDS:
            cluster += 1
            reach = last
        else:
            reach = max(reach, last)
        if name == source:
            return cluster
    return -1
