"""Outcome rules: a run that outlived its errors is healthy; with no first fault found, the run
is healthy when nothing failed, else `unknown` (something failed that no entry explains)."""
from __future__ import annotations

import re

from ...match.context import ERROR_STATEMENT, FAILURE_SIGNATURES, LAUNCHER_FAILED, TRACEBACK_HEADER
from ...match.progress_lines import short_of_total
from ...model import Match
from ..events import time_key
from ..facts import Facts
from ..failure_table import first_failure_ties, root_cause_row, table_root_cause, tie_note
from ..ids import PEER_CRASH, RAY_ACTOR_DIED
from . import Decision, rule

SURVIVABLE_WEIGHT = 0.7  # errors this generic can be caught and logged by a healthy run
SURVIVED_AFTER_LINES = 20
FAILURE_SIGNS = tuple(name for name in FAILURE_SIGNATURES if name != "failed-word")


@rule("survived-errors")
def survived_errors(facts: Facts, decision: Decision) -> Decision | None:
    """Every root error is generic, the run kept writing long after it, and nothing failed (nor
    was the job stopped by hand)."""
    from .ending import interrupts

    if not facts.roots or facts.symptoms or facts.collateral or interrupts(facts):
        return None
    if any(m.signature.name in (*LAUNCHER_FAILED, "failed-exit", "failed-signal") for m in facts.matches):
        return None
    for incident in facts.roots:
        last = incident.matches[-1].line.origin
        if incident.weight > SURVIVABLE_WEIGHT:
            return None
        if facts.source_lines.get(last.source, 0) - last.line < SURVIVED_AFTER_LINES:
            return None
    if _traceback_after_the_errors(facts):
        return None
    text = "errors were logged but the run went on and nothing failed afterwards: they were caught and survived"
    return decision.with_because("survived-errors", text, [incident.first for incident in facts.roots][:3],
                                 note=text, status="healthy")


def _traceback_after_the_errors(facts: Facts) -> bool:
    """A traceback that begins after a file's last error: what the file wrote after the error was
    another failure (a second rank's traceback, cut where a thread's excerpt ends), not a run that
    went on."""
    last_error: dict = {}
    for incident in facts.roots:
        for match in incident.matches:
            origin = match.line.origin
            last_error[origin.source] = max(last_error.get(origin.source, 0), origin.line)
    return any(m.signature.name == TRACEBACK_HEADER and m.line.origin.line > last_error.get(m.line.origin.source, 10**12)
               for m in facts.matches)


# A line logged at warning or info level that names an error reports it, it does not fail
_NOT_AN_ERROR_LEVEL = re.compile(r"(?i:\bwarn(?:ing)?\b)|\b[A-Z]\w*Warning\b|^\S*\[?W\d{4}|\[W \S|\[W\d|\bNCCL INFO\b|\[INFO\]|\bINFO\b[:\]]?\s")


# ... unless what it reports is a broken connection (NCCL reports socket errors at WARN level)
_STILL_AN_ERROR = re.compile(r"\bfailed\s*: |\bConnection (?:refused|reset|closed)\b")


# ... and a frame of a C++ backtrace (`frame #1: c10::DistError::DistError(...)`) names functions:
# it belongs to the message above it, whose level is its own
_BACKTRACE_FRAME = re.compile(r"^\s*frame #\d+: ")


# A line that says it tries again (`Connection refused, retrying`, `Retrying in 5s`) reports a
# failed attempt: where its file goes on past its last such line, the retries ended, in success or
# in an error line of their own; where the file ends on them, the process was still trying
_RETRYING = re.compile(r"(?i)\bretrying\b|\bwill (?:be )?retr(?:y|ied)\b")


def _retries_ended(facts: Facts) -> set[str]:
    """The sources that printed more lines after their last retry notice."""
    last_retry: dict[str, int] = {}
    for m in facts.matches:
        if _RETRYING.search(m.line.text):
            origin = m.line.origin
            last_retry[origin.source] = max(last_retry.get(origin.source, 0), origin.line)
    return {source for source, line in last_retry.items() if facts.source_lines.get(source, 0) > line}


def _states_an_error(text: str) -> bool:
    if _BACKTRACE_FRAME.match(text):
        return False
    return not _NOT_AN_ERROR_LEVEL.search(text) or bool(_STILL_AN_ERROR.search(text))


def _live_signs(facts: Facts, decision: Decision) -> list:
    """Failure signs (a traceback, a non-zero exit, a line that states an error) the same process
    did not go on from (nor a launcher before it started its workers). A warning that names an
    error is not one."""
    from .progress import before_its_workers, outlived

    live, outlived_at = [], {}
    retries_ended = _retries_ended(facts)
    for m in facts.matches:
        if not decision.current(m) or not (m.signature.name in FAILURE_SIGNS or (
                m.signature.name in _STATEMENTS and _states_an_error(m.line.text))):
            continue
        if m.line.origin.source in retries_ended and _RETRYING.search(m.line.text):
            continue
        if before_its_workers(facts, m):
            continue
        if not outlived(facts, m):
            live.append(m)
        elif m.signature.name in _STATEMENTS:
            key = _statement_key(m)
            outlived_at[key] = min(outlived_at.get(key, m.line.origin.line), m.line.origin.line)
    # a statement the same file made before, word for word but its numbers, and went on past: a
    # recurring error the run lives with (a metrics server's 500s between training steps), not a
    # failure because the log happens to end on it
    return [m for m in live if m.signature.name not in _STATEMENTS
            or outlived_at.get(_statement_key(m), m.line.origin.line) >= m.line.origin.line]


# lines that say an error in words (`ERROR: ...`, `... Error: ...`): a failure sign unless the run
# went on past them (or past the same words before), or they are logged at warning or info level
_STATEMENTS = (ERROR_STATEMENT, "failed-word")

_DIGITS = re.compile(r"\d+")


def _statement_key(match) -> tuple:
    return match.signature.name, match.line.origin.source, _DIGITS.sub("#", match.line.text)


@rule("peer-vanished")
def peer_vanished(facts: Facts, decision: Decision) -> Decision | None:
    """No error of a rank's own, and every rank of the job but one ended waiting for a peer (its
    connection closed or reset, or a timeout): that one rank, which printed no error at all, is the
    peer whose process ended. Nothing in these logs says how (no launcher, shell or scheduler
    reported it: Lightning's and accelerate's own launchers, a pod's entrypoint). With one rank
    waiting, the job's size must be declared (`Starting with 2 processes`): the others could be
    ranks that never printed. Where the others' waits do not tell, a launcher's report that one
    worker's process died names it (Ray Train's actor-death report under `[Rank N Error Snippet]:`)."""
    from ..rank_table import WAITING, size_declared
    from .hang import hang_decision, own_line, with_rank

    if decision.roots or decision.symptoms:
        return None
    rows = facts.rows
    waiting = [rank for rank, row in rows.items() if row.ended in WAITING]
    others = [rank for rank, row in rows.items() if row.ended not in WAITING]
    declared = size_declared(facts)
    reported = _reported_dead(facts)
    by_report = len(others) != 1 or not waiting or (len(waiting) < 2 and not declared)
    if by_report:
        if len(reported) != 1:
            return None
        others = list(reported)  # the launcher's report of the one worker whose process died
    rank = others[0]
    if rank not in rows or rows[rank].first_error is not None or rows[rank].ended not in ("silent", "unknown"):
        return None
    anchor = own_line(facts, rank, PEER_CRASH) or _declaration_of(facts, rank)
    if anchor is None and rank in reported:
        anchor = with_rank(reported[rank], rank)  # the report about that worker
    if anchor is None:
        return None  # no line of its own to point at: the report says what cannot be told
    if by_report:
        reason = (f"rank {rank} printed no error, and its launcher reports that its process died "
                  f"({reported[rank].line.text.strip()[:90]!r}): killed, or crashed in native code; look at dmesg "
                  f"and the node's memory")
        return hang_decision(facts, decision, "peer-vanished", PEER_CRASH, rank, reason, anchor, cited=[reported[rank]])
    first_wait = min((rows[r].ended_match for r in waiting), key=time_key)
    size = f"the {len(rows)} the job declared" if declared else f"the {len(rows)} the logs show"
    reason = (f"rank {rank} printed no error while every other rank of {size} lost it as a peer (first: rank "
              f"{first_wait.line.origin.rank}); its process ended without a trace in these logs (killed, or crashed "
              f"in native code): look at its exit code, dmesg and the node's memory")
    return hang_decision(facts, decision, "peer-vanished", PEER_CRASH, rank, reason, anchor, cited=[first_wait])


SNIPPET_LINES = 30  # Ray's actor-death report follows its snippet's header within this many lines


def _reported_dead(facts: Facts) -> dict:
    """rank -> the launcher's report that the rank's worker process died with no Python error: Ray's
    actor-death report under the controller's `[Rank N Error Snippet]:` header."""
    from ...match.context import RAY_ERROR_SNIPPET

    headers = [m for m in facts.matches if m.signature.name == RAY_ERROR_SNIPPET]
    reported = {}
    for match in facts.matches:
        if match.signature.name != RAY_ACTOR_DIED:
            continue
        origin = match.line.origin
        above = [h for h in headers if h.line.origin.source == origin.source and 0 < origin.line - h.line.origin.line <= SNIPPET_LINES]
        if above:
            header = max(above, key=lambda h: h.line.origin.line)
            reported.setdefault(int(header.captures["failed_rank"]), match)
    return reported


def _declaration_of(facts: Facts, rank: int) -> Match | None:
    """The line where a rank declared itself (`Initializing distributed: GLOBAL_RANK: 0`), as a line
    of that rank: in a console several processes share, the only line some ranks can be told by."""
    from dataclasses import replace

    from ...match.context import RANK_DECLARED
    from ..identity import declared_rank

    for match in facts.matches:
        if match.signature.name == RANK_DECLARED and declared_rank(match.captures) == rank:
            signature = replace(match.signature, entry_id=PEER_CRASH, role="symptom",
                                message="rank {rank} started here, then printed nothing more")
            return replace(match, signature=signature, line=replace(match.line, origin=replace(match.line.origin, rank=rank)))
    return None


def _last_progress(facts: Facts) -> tuple:
    """(stream, line): the latest progress line of any stream (by time where they carry one, else
    the last seen); (None, None) without one."""
    lines = [(stream, line) for stream in facts.activity for line in stream.progress]
    timed = [item for item in lines if item[1].time is not None]
    if timed:
        return max(timed, key=lambda item: item[1].time)
    return lines[-1] if lines else (None, None)


@rule("nothing-failed")
def nothing_failed(facts: Facts, decision: Decision) -> Decision | None:
    """No error, no failure sign the run did not outlive, and the job was not stopped by hand:
    the run is healthy."""
    from .ending import interrupts

    if any(decision.current(m) for m in facts.collateral) or _live_signs(facts, decision):
        return None
    if any(decision.current(m) for m in interrupts(facts)):
        return None
    text, note = "no line of the logs shows a failure", ""
    if decision.restart is not None:
        text = "the job restarted and went on, and nothing failed after the restart"
    elif facts.roots or facts.symptoms:
        text = "every error was followed by training progress and nothing failed afterwards"
    elif not _seen_to_finish_or_progress(facts):
        # (the contract has no status for "cannot tell": the report says what the logs do not show)
        text = note = (text + "; nor do they show the job finishing or making progress: if it stopped at its "
                       "last line, it hung or was killed there, which leaves no line")
    elif (short := _short_of_its_end(facts)) is not None:
        # a log read while its job runs and one whose process was SIGKILLed without a word (the
        # OOM killer in a container, whose line is in dmesg) read the same (a real run in a memory
        # cgroup, tests/fixtures/real/oom-plain-torch213; thirteen healthy thread excerpts the other way)
        text = note = (f"{text}, but the last progress line ({short.strip()[:80]!r}) is short of its end and none says the "
                       "job finished: if it is no longer running, it was killed there without a word (the kernel's OOM "
                       "killer, a scheduler's SIGKILL): `dmesg -T | grep -i oom`, `kubectl describe pod` (OOMKilled), "
                       "`sacct -j JOB -o State,ExitCode`")
    return decision.with_because("nothing-failed", text, note=note, status="healthy")


def _short_of_its_end(facts: Facts) -> str | None:
    """The latest progress line, when it counts short of its total (`step 4/40`) and no line says
    the job finished."""
    if _said_finished(facts):
        return None
    _stream, last = _last_progress(facts)
    return last.text if last is not None and short_of_total(last.text) is not None else None


def _seen_to_finish_or_progress(facts: Facts) -> bool:
    """Whether the logs show the job finishing (a finish line) or training going on (progress lines)."""
    return _said_finished(facts) or any(stream.progress for stream in facts.activity)


def _said_finished(facts: Facts) -> bool:
    from ...match.context import JOB_SUCCEEDED

    return any(m.signature.name == JOB_SUCCEEDED for m in facts.matches)


@rule("peer-lost-elsewhere")
def peer_lost_elsewhere(facts: Facts, decision: Decision) -> Decision | None:
    """No error of a rank's own, and the errors are ranks losing a peer (its connection closed or
    reset): a rank died and the others lost it. How, the logs in view do not show (a thread's
    excerpt that begins after it, a console that lost that rank's output): the verdict is the
    knowledge base's entry for what the others printed, and says so. It names the rank a launcher
    reports failing first, where that rank did not only wait; else no rank. A rank that did not
    only wait and shows a traceback no entry explains is left to `failed-unexplained`."""
    from .hang import hang_decision

    if decision.roots or decision.symptoms:
        return None
    lost = [m for m in facts.collateral if m.entry_id == PEER_CRASH]  # (not the launcher's aftermath)
    if not lost:
        return None
    waited = sorted({m.line.origin.rank for m in lost if m.line.origin.rank is not None})
    if any(m.signature.name == TRACEBACK_HEADER and m.line.origin.rank not in (None, *waited) for m in facts.matches):
        return None  # a rank that did not only wait raised something no entry explains: it is in view
    who = f"rank(s) {', '.join(map(str, waited))}" if waited else "the ranks in view"
    started = first_failed(facts, [m for m in facts.matches if m.signature.name in FAILURE_SIGNS])
    rank = started.line.origin.rank if started is not None else None
    if rank is not None and rank not in waited:  # a launcher's report of a process that did not only wait
        reason = (f"every error in these logs is a rank losing a peer ({who}), and the launcher reports rank {rank}'s "
                  "process failing first: it died and the others lost it; why is not in these logs (its own error, "
                  "or its death by a signal, is in its own log, earlier than these lines, or in the node's dmesg)")
        return hang_decision(facts, decision, "peer-lost-elsewhere", PEER_CRASH, rank, reason, started)
    reason = (f"every error in these logs is a rank losing a peer ({who}): a rank died and the others lost it; "
              "which one, and why, is not in these logs (its own error, or its death by a signal, is in its own "
              "log, earlier than these lines, or in the node's dmesg)")
    return hang_decision(facts, decision, "peer-lost-elsewhere", PEER_CRASH, None, reason, min(lost, key=time_key))


@rule("failed-unexplained")
def failed_unexplained(facts: Facts, decision: Decision) -> Decision:
    """Something failed (a traceback, a non-zero exit) that no knowledge-base entry explains; where
    it started is still told when the logs tell it (the host rules then name its host)."""
    failure_signs = [m for m in facts.matches if m.signature.name in FAILURE_SIGNS]
    signs = failure_signs or _live_signs(facts, decision)
    text = "something failed, but no knowledge-base entry explains it: the lines below are the most likely errors"
    initiating = first_failed(facts, failure_signs)
    tie = tie_note(facts) if initiating is None else ""
    if tie:  # the table's root cause is one of the ranks that failed first, no telling which: its host may still be told
        initiating = root_cause_row(facts)
    shown = [initiating, *(m for m in signs if m is not initiating)][:3] if initiating is not None else signs[:3]
    decision = decision.with_because("failed-unexplained", text, shown, note=text, status="unknown", action="fix-and-rerun",
                                     initiating=initiating, rank_decided=bool(tie))
    return decision.with_because("rank-launcher-tie", tie, note=tie) if tie else decision


def first_failed(facts: Facts, signs: list[Match]) -> Match | None:
    """With no entry to explain it, still where the failure started: the launcher's first report
    of a process that failed (not its own SIGTERM), one that did not only lose a peer where there is
    one; else the record torchrun's failure table gives as its root cause (its first observed
    failure: the table is often all a log keeps of the worker that failed, when the worker's own
    output went elsewhere or was cut from a paste); else the earliest failure sign of a rank that
    did not only lose a peer."""
    victims = {m.line.origin.rank for m in facts.collateral}
    tied = first_failure_ties(facts)  # the launcher's "first" is one of these, the lowest
    reports = [m for m in facts.launcher_failures if m.line.origin.rank is not None and m.line.origin.rank not in tied]
    if reports:
        return min([m for m in reports if m.line.origin.rank not in victims] or reports, key=time_key)
    root = table_root_cause(facts)
    if root is not None:
        return root
    own = [m for m in signs if m.line.origin.rank is not None and m.line.origin.rank not in victims]
    return min(own, key=time_key) if own else None

