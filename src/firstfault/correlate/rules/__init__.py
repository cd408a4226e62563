"""The verdict as named rules over one set of Facts.

Each rule is a short function `(facts, decision) -> Decision | None` with a stable id: it returns
the decision it changed (with a `because` line saying what it decided and from which lines) or
None when it does not apply. `decide` runs the table in order:

- filter rules narrow what may be the first fault (teardown, external stops, explained events);
- a healthy rule may end the run early (errors the run outlived);
- primary rules choose the first fault: the first that applies decides;
- hang rules decide when only timeouts (or nothing) were printed;
- rank and host rules name where it started, when the first fault's line does not say.

Adding a rule is one function, one row in its stage's table, one unit test.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from ...model import Because, Match
from ..events import Incident
from ..facts import Facts


@dataclass(frozen=True)
class Decision:
    """What the rules have decided so far."""

    roots: tuple[Incident, ...] = ()  # root incidents still eligible as the first fault
    symptoms: tuple[Match, ...] = ()  # symptoms still eligible
    status: str = ""  # "" until decided; then failure | healthy | unknown
    primary: str = ""  # entry id of the first fault
    initiating: Match | None = None  # its first line
    rank: int | None = None  # initiating rank, when a rule had to name it
    rank_decided: bool = False  # a rule said which rank started it (or that no single one did)
    host_decided: bool = False  # a rule said no host can be told (its line is another rank's, on one of several hosts)
    host: str | None = None  # initiating host, when a rule had to name it
    because: tuple[Because, ...] = ()
    notes: tuple[str, ...] = ()
    hang: str = ""  # why the job is known to have hung although nothing timed out (the reason)
    failure_class: str = ""  # the job's core class when a rule decided it differs from the entry's
    action: str | None = None  # restart | exclude-host-and-restart | fix-and-rerun
    action_detail: tuple = ()  # (key, value) pairs: hosts, commands
    restart: Match | None = None  # the restart the job went on from: what failed before it was recovered from
    stopped_by_hand: bool = False  # the job ended by Ctrl-C: it cannot be called healthy
    went_past: tuple[Match, ...] = ()  # errors a rule set aside because the run went on past them

    def current(self, match: Match) -> bool:
        """Whether a line belongs to the run after the restart the job recovered with (all do
        when there was none)."""
        if self.restart is None:
            return True
        first, restart = match.line.origin, self.restart.line.origin
        if first.source == restart.source:
            return first.line > restart.line
        if first.time is not None and restart.time is not None:
            return first.time > restart.time
        return True

    def with_because(self, rule: str, text: str, evidence=(), note: str = "", **changes) -> "Decision":
        cited = tuple(_cite(item) for item in evidence if item is not None)
        return replace(self, because=self.because + (Because(rule, text, cited),),
                       notes=self.notes + ((note,) if note else ()), **changes)


def _cite(item) -> tuple[str, int]:
    if isinstance(item, tuple):
        return item
    origin = item.line.origin
    return (origin.source, origin.line)


Apply = Callable[[Facts, Decision], "Decision | None"]


@dataclass(frozen=True)
class Rule:
    id: str
    apply: Apply
    summary: str = ""


@dataclass(frozen=True)
class Stage:
    name: str
    rules: tuple[Rule, ...]
    first_only: bool = False  # the first rule that applies ends the stage
    when: Callable[[Facts, Decision], bool] = field(default=lambda facts, decision: True)


def run_stage(stage: Stage, facts: Facts, decision: Decision) -> Decision:
    if not stage.when(facts, decision):
        return decision
    for rule in stage.rules:
        changed = rule.apply(facts, decision)
        if changed is None:
            continue
        decision = changed
        if stage.first_only:
            break
    return decision


def rule(rule_id: str, summary: str = "") -> Callable[[Apply], Rule]:
    """Decorator: a function becomes a Rule with a stable id."""
    def wrap(function: Apply) -> Rule:
        paragraph = (function.__doc__ or "").strip().split("\n\n")[0]
        return Rule(rule_id, function, summary or " ".join(line.strip() for line in paragraph.splitlines()))
    return wrap
