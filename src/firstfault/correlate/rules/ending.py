"""How the job ended: finished, restarted and went on, or stopped by hand.

"Healthy" needs positive evidence: the job said it finished after every error it printed, or it
restarted and kept making progress past the point where it failed. A job ended by Ctrl-C is never
healthy: it was stopped, and when it had gone quiet first it hung.
"""
from __future__ import annotations

import re
from pathlib import PurePath

from ...match.context import FAILURE_SIGNATURES, HANG_STACK_MARKER, JOB_INTERRUPTED, JOB_RESTARTED, JOB_SUCCEEDED
from ...match.progress_lines import is_progress
from ...model import Match
from ..events import time_key
from ..facts import Facts
from ..runs import finish_covers, runs_of
from . import Decision, rule

# sacct's table is the scheduler's account of the finished job: it comes after everything the job printed
_ACCOUNTING = ("COMPLETED",)
_FAILED_AFTER = tuple(name for name in FAILURE_SIGNATURES if name != "failed-word")


def interrupts(facts: Facts) -> list[Match]:
    """The lines that show the job stopped by hand (Ctrl-C, KeyboardInterrupt, an interrupted launcher)."""
    return [m for m in facts.matches if m.signature.name == JOB_INTERRUPTED
            or (m.signature.name == HANG_STACK_MARKER and "KeyboardInterrupt" in m.line.text)]


def _is_accounting(match: Match) -> bool:
    return any(word in match.line.text for word in _ACCOUNTING) and "0:0" in match.line.text


def _before(earlier: Match, later: Match) -> bool | None:
    """Whether `earlier` came before `later`: by line in one file, by their own times across
    files; None when nothing orders them."""
    first, second = earlier.line.origin, later.line.origin
    if first.source == second.source:
        return first.line < second.line
    if first.time is not None and second.time is not None and not second.time_inherited:
        return first.time <= second.time
    return None


def _ended_its_process_untimed(facts: Facts, failure: Match, finish: Match) -> bool:
    """A failure in another file than the finish, whose time was carried from an earlier line (so
    it came then or later), after which its process made no progress: nothing says it came before
    the finish. (Seen in a real torch 2.8 run: one rank's all-reduce after training lost its peers
    as they exited, its traceback timed by the line before it, which came 12 ms before rank 0's
    `training finished`.)"""
    origin = failure.line.origin
    if not origin.time_inherited or origin.source == finish.line.origin.source:
        return False
    streams = [stream for stream in facts.activity if stream.source == origin.source
               and (origin.rank is None or stream.rank in (None, origin.rank))]
    return not any(line.line > origin.line and is_progress(line.text)
                   for stream in streams for line in (*stream.progress, *stream.lines))


_JOB_ID = re.compile(r"\s*(\d+)")


def _run_file(facts: Facts, finish: Match) -> str:
    """The file whose run a finish line speaks for: its own; for sacct's account of a job, that
    job's output file (`slurm-<id>.out`) when it is among the inputs."""
    job = _JOB_ID.match(finish.line.text) if _is_accounting(finish) else None
    if job is not None:
        named = re.compile(rf"(?<!\d){job.group(1)}(?!\d)")
        for source, _first, _last in facts.inputs.spans:
            if named.search(PurePath(source).name):
                return source
    return finish.line.origin.source


def _failures(facts: Facts) -> list[Match]:
    return [*facts.winners, *(m for m in facts.matches if m.signature.name in _FAILED_AFTER), *interrupts(facts)]


# A line printed at warning level: glog's `W1206 12:01:05.9 ...` (torch's C++ and its launcher,
# after a `[rankN]:` or `[` prefix), or a logging record's WARNING level.
_WARNING_LEVEL = re.compile(r"^(?:\[[\w-]+\]:)*(?:\[?W\d{4} \d\d:\d\d:\d\d|[\d\-:,. T\[\]]{0,36}\bWARNING\b)")


def _peer_gone_warning(match: Match) -> bool:
    """A warning that a peer or the store went away (a consequence by role, printed at warning
    level: the process said it and went on). After a finish it is teardown: the peers that
    finished first exited. (Seen in a real two-node torchrun run: the agent of the node whose
    store host had exited warned `recvVector failed ... got 0 bytes` while shutting the rendezvous
    down, 0.8 s after `training finished`; every process exited 0.)"""
    return match.role == "collateral" and bool(_WARNING_LEVEL.search(match.line.text))


_SHELL_STATUS = re.compile(r"[$#]\s*echo \$\?\s*$")


def _shell_success(facts: Facts) -> list[Match]:
    """`$ echo $?` answered `0` at the end of a console: the command the user ran exited 0."""
    from .progress import activity_match

    found = []
    for stream in facts.activity:
        lines = stream.lines
        for asked, answer in zip(lines, lines[1:]):
            if _SHELL_STATUS.search(asked.text) and answer.text.strip() == "0" and answer.line == asked.line + 1:
                found.append(activity_match(stream, "", answer))
    return found


def _last_progress_failed(facts: Facts, before: Match) -> bool:
    """Whether the last progress line before the end was itself a failure line (`loss nan` to the
    last step): the failure lasted to the end, the job did not recover from it."""
    failures = {(m.line.origin.source, m.line.origin.line) for m in facts.winners}
    progress = [(stream.source, line) for stream in facts.activity for line in (*stream.progress, *stream.lines)
                if is_progress(line.text)]
    end = before.line.origin
    earlier = [(source, line) for source, line in progress
               if (line.line < end.line if source == end.source else
                   line.time is not None and end.time is not None and line.time <= end.time)]
    if not earlier:
        return False
    source, last = max(earlier, key=lambda item: (item[1].time or 0.0, item[1].line))
    return (source, last.line) in failures


@rule("job-finished")
def job_finished(facts: Facts, decision: Decision) -> Decision | None:
    """The job says it finished (`WorkerState.SUCCEEDED`, `completed successfully`, `training
    complete`, sacct's COMPLETED 0:0, `$ echo $?` answered 0) after every error it printed, and
    its last progress was not itself failing: it recovered from them."""
    finished = [m for m in facts.matches if m.signature.name == JOB_SUCCEEDED] + _shell_success(facts)
    if not finished:
        return None
    last = max(finished, key=lambda m: (_is_accounting(m), time_key(m)))
    failures = [failure for failure in _failures(facts) if not (_peer_gone_warning(failure) and _before(last, failure))]
    runs = runs_of(facts.inputs)
    run = _run_file(facts, last)
    for failure in failures:
        # (a finish in another run, kept beside the failed one, says nothing about it)
        order = (True if _is_accounting(last) else _before(failure, last) and not _ended_its_process_untimed(facts, failure, last)) \
            and finish_covers(runs, run, failure.line.origin.source)
        if not order:
            return None  # something failed after it, or nothing says it came first, or in another run
    if _last_progress_failed(facts, last):
        return None
    text = f"the job finished ({last.line.text.strip()[:100]!r})"
    if failures:
        text += f" after the {len(failures)} error line(s) it printed: it recovered from them"
    return decision.with_because("job-finished", text, [last, *failures[:2]], note=text, status="healthy")


@rule("finished-after-it")
def finished_after_it(facts: Facts, decision: Decision) -> Decision | None:
    """Errors a run finished after (its finish line later in the same file, and nothing failing in
    that file after it) are what that run recovered from, even where another run kept beside it
    failed: a previous run's caught errors are not this failure's cause."""
    finished = [m for m in facts.matches if m.signature.name == JOB_SUCCEEDED and not _is_accounting(m)
                and not _last_progress_failed(facts, m)]  # (`loss nan` to the last step: it did not recover)
    if not finished:
        return None

    def finish_after(match: Match) -> Match | None:
        origin = match.line.origin
        return next((f for f in finished if f.line.origin.source == origin.source and origin.line < f.line.origin.line), None)

    # a file where something still failed after its finish line (a launcher's report of a worker
    # that failed) did not finish: its errors stay
    still_failing = {m.line.origin.source for m in _failures(facts) if finish_after(m) is None}
    finishes = {id(m): f for m in (*decision.symptoms, *(i.matches[-1] for i in decision.roots))
                if (f := finish_after(m)) is not None and f.line.origin.source not in still_failing}
    if not finishes:
        return None
    roots = tuple(incident for incident in decision.roots if id(incident.matches[-1]) not in finishes)
    symptoms = tuple(match for match in decision.symptoms if id(match) not in finishes)
    finish = next(iter(finishes.values()))
    dropped = len(finishes)
    text = f"{dropped} error(s) came before the finish of their own run ({finish.line.text.strip()[:90]!r}): it recovered from them"
    return decision.with_because("finished-after-it", text, [finish], roots=roots, symptoms=symptoms)


def _went_on_after(facts: Facts, restart: Match) -> list:
    """Progress lines the job printed after a restart (in the same file)."""
    origin = restart.line.origin
    after = [line for stream in facts.activity if stream.source == origin.source
             for line in (*stream.progress, *stream.lines) if line.line > origin.line and is_progress(line.text)]
    return sorted({line.line: line for line in after}.values(), key=lambda line: line.line)


@rule("restarted-and-went-on")
def restarted_and_went_on(facts: Facts, decision: Decision) -> Decision | None:
    """Errors before a restart (torchrun's elastic restart, a Slurm requeue) that the job then
    trained past are what it recovered from, not why it stopped."""
    restarts = [m for m in facts.matches if m.signature.name == JOB_RESTARTED]
    for restart in sorted(restarts, key=lambda m: -m.line.origin.line):
        progress = _went_on_after(facts, restart)
        if len(progress) < 2:
            continue
        roots = tuple(i for i in decision.roots if not _before(i.matches[-1], restart))
        symptoms = tuple(m for m in decision.symptoms if not _before(m, restart))
        dropped = len(decision.roots) - len(roots) + len(decision.symptoms) - len(symptoms)
        if not dropped:
            return None
        text = (f"the job restarted ({restart.line.text.strip()[:90]!r}) and went on training "
                f"({progress[-1].text.strip()[:80]!r}): the {dropped} error(s) before the restart are what it recovered from")
        return decision.with_because("restarted-and-went-on", text, [restart, (restart.line.origin.source, progress[-1].line)],
                                     note=text, roots=roots, symptoms=symptoms, restart=restart)
    return None
