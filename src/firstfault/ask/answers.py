"""Answers to follow-up questions, from the diagnosis itself (its JSON contract, masked as stored)
and the knowledge base: no network, no model. Every answer cites the lines it stands on, as the
report does; what the diagnosis cannot tell is said, with why.

    answer(intent_of("why not rank 0"), contract, kb) -> Answer(lines=[...], evidence=[...])
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import intents as asked


@dataclass(frozen=True)
class Answer:
    intent: str
    lines: tuple[str, ...]
    evidence: tuple[dict, ...] = field(default=())  # {source, line, text?}: the lines the answer cites

    def to_dict(self, question: str) -> dict:
        return {"question": question, "intent": self.intent, "answer": list(self.lines), "evidence": list(self.evidence)}


def answer(intent: asked.Intent, contract: dict, kb=None, recurrence=None, history_on: bool = True,
           baseline: dict | None = None) -> Answer:
    """`recurrence`: the history's earlier sightings of this failure; `baseline`: the diagnosis of
    the job's last healthy run in the history (for `what changed`)."""
    handler = _HANDLERS.get(intent.kind, _unknown)
    return handler(intent, contract, kb, recurrence, history_on, baseline)


def _changed(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    if not history_on:
        return Answer(asked.CHANGED, ("The history is off: diagnose with --save to compare with the job's last healthy run.",))
    if baseline is None:
        return Answer(asked.CHANGED, ("No healthy run of this job (the folder its logs share) is in the history to compare with.",))
    lines = []
    for label, now, then in _facts(contract, baseline):
        if now != then:
            lines.append(f"{label}: {then} in the healthy run, {now} now.")
    if not lines:
        lines.append("Nothing the diagnoses record differs: same world size, hosts, ranks, stack and files.")
    lines.append("(Library versions and environment variables are not kept in a diagnosis: compare them in the logs.)")
    return Answer(asked.CHANGED, tuple(lines))


def _facts(contract: dict, baseline: dict) -> list[tuple[str, str, str]]:
    def of(document: dict) -> dict:
        inputs = document.get("inputs") or {}
        return {"world size": str(document.get("world_size") if document.get("world_size") is not None else "not declared"),
                "hosts": ", ".join(sorted(map(str, inputs.get("hosts") or []))) or "none named",
                "ranks": _ranks(inputs.get("ranks")),
                "stack": ", ".join(sorted(item.get("name", "") for item in document.get("stack") or [])) or "none detected",
                "files": str(len(inputs.get("files") or [])), "lines": str(inputs.get("lines"))}
    now, then = of(contract), of(baseline)
    return [(label, now[label], then[label]) for label in now]


# -- the pieces of a diagnosis an answer quotes -------------------------------------------------------

def _primary(contract: dict) -> dict:
    return contract.get("primary") or {}


def _where(contract: dict) -> dict:
    return _primary(contract).get("initiating") or contract.get("initiating") or {}


def _at(place: dict | None) -> str:
    if not place or not place.get("source"):
        return "a line the logs do not pin down"
    return f"{place['source']}:{place['line']}"


def _cite(place: dict | None, text: str | None = None) -> tuple[dict, ...]:
    if not place or not place.get("source"):
        return ()
    item = {"source": place["source"], "line": place.get("line")}
    if text:
        item["text"] = text
    return (item,)


def _first_fault_line(contract: dict) -> dict:
    where = _where(contract)
    evidence = _primary(contract).get("evidence") or contract.get("error_lines") or []
    for item in evidence:
        if item.get("source") == where.get("source") and item.get("line") == where.get("line"):
            return item
    if not _primary(contract) and where.get("source"):
        return where  # unexplained, but where it started is known (a launcher's report of it)
    return evidence[0] if evidence else {}


def _rank_row(contract: dict, rank: int) -> dict | None:
    return next((row for row in contract.get("ranks") or [] if row.get("rank") == rank), None)


def _failure_words(contract: dict) -> str:
    primary = _primary(contract)
    if primary:
        return f"{primary.get('entry_id') or primary.get('failure_id')} ({primary.get('summary') or 'the first fault'})"
    return "an error no knowledge-base entry explains" if contract.get("status") == "unknown" else "no failure"


def _deciding_rule(contract: dict) -> dict | None:
    """The step that decided where the failure started: one that decided no single rank did, else
    the first."""
    from ..render.diagnosis_text import NO_SINGLE_RANK

    because = contract.get("because") or []
    return next((item for item in because if item.get("rule") in NO_SINGLE_RANK), because[0] if because else None)


def _no_single_rank(contract: dict) -> str:
    from ..render.diagnosis_text import no_single_rank

    return no_single_rank(item.get("rule") for item in contract.get("because") or [])


def _because_lines(contract: dict) -> tuple[list[str], tuple[dict, ...]]:
    lines, cited = [], ()
    for item in contract.get("because") or []:
        lines.append(f"[{item['rule']}] {item['text']}")
        for place in item.get("evidence") or []:
            cited += _cite(place)
    return lines, cited


# -- the intents ---------------------------------------------------------------------------------------

def _why(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    if contract.get("status") == "healthy":
        lines, cited = _because_lines(contract)
        return Answer(intent.kind, ("The run is healthy:", *lines), cited)
    where, first = _where(contract), _first_fault_line(contract)
    head = f"The first fault is {_failure_words(contract)}, on {_who(where, contract)}, at {_at(first or where)}."
    told = [f"Rank {where['rank']}, told by {where['rank_from']}."] if where.get("rank_from") else []
    told += [f"Host {where['host']}, told by {where['host_from']}."] if where.get("host_from") else []
    lines, cited = _because_lines(contract)
    return Answer(intent.kind, (head, *told, "How it was decided, rule by rule:", *lines),
                  _unique(_cite(first or where, first.get("text")) + cited))


def _who(place: dict, contract: dict | None = None) -> str:
    parts = []
    alike = _no_single_rank(contract) if contract is not None and place.get("rank") is None else ""
    if place.get("rank") is not None:
        parts.append(f"rank {place['rank']}")
    elif alike:
        parts.append(alike + " (no single rank started it)")
    if place.get("host"):
        parts.append(f"host {place['host']}")
    return " on ".join(parts) if parts else "a process the logs do not name (no rank or host on its line)"


def _why_not_rank(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    rank, where = intent.rank, _where(contract)
    if where.get("rank") == rank:
        told = _why(intent, contract, kb, recurrence, history_on)
        return Answer(intent.kind, (f"It is rank {rank}: the first fault is there.", *told.lines), told.evidence)
    if contract.get("status") == "healthy":
        return Answer(intent.kind, (f"Nothing failed, on rank {rank} or any other.",))
    row = _rank_row(contract, rank)
    lines, cited = [], ()
    consequence = next((item for item in contract.get("collateral") or [] if rank in (item.get("ranks") or [])), None)
    primary = _primary(contract)
    own_first = row is not None and row.get("first_error") in (primary.get("entry_id"), primary.get("failure_id"))
    if own_first and _no_single_rank(contract):
        lines.append(f"Rank {rank} raised the first fault too, as its own first error ({_at(row.get('first_error_line'))}): "
                     "no single rank started it.")
        cited += _cite(row.get("first_error_line"))
    elif consequence is not None:
        first = consequence.get("first") or {}
        lines.append(f"Rank {rank}'s errors are collateral: {consequence.get('entry_id') or consequence.get('failure_id')}"
                     f" ({consequence.get('summary') or 'a consequence'}), on ranks {_ranks(consequence.get('ranks'))}, "
                     f"first at {_at(first)}.")
        cited += _cite(first, first.get("text"))
    elif row is None:
        seen = [item.get("rank") for item in contract.get("ranks") or []]
        lines.append(f"The logs show nothing of rank {rank}" + (f" (ranks seen: {_ranks(seen)})." if seen else "."))
    else:
        lines.append(f"Rank {rank} shows no error of its own.")
    if row is not None:
        state, state_cited = _rank_state(row)
        lines.append(state)
        cited += state_cited
    first = _first_fault_line(contract)
    rule = _deciding_rule(contract)
    lines.append(f"The first fault is {_failure_words(contract)} on {_who(where, contract)}, at {_at(first or where)}"
                 + (f"; rule `{rule['rule']}`: {rule['text']}." if rule else "."))
    cited += _cite(first or where, first.get("text"))
    if rule:
        for place in rule.get("evidence") or []:
            cited += _cite(place)
    return Answer(intent.kind, tuple(lines), _unique(cited))


def _rank_state(row: dict) -> tuple[str, tuple[dict, ...]]:
    parts = [f"Rank {row['rank']}" + (f" (host {row['host']})" if row.get("host") else "")]
    if row.get("last_step") is not None:
        parts.append(f"last reached step {row['last_step']}" + (f" at {row['last_progress_at']}" if row.get("last_progress_at") else ""))
    if row.get("collective"):
        parts.append(f"was in {row['collective']}")
    if row.get("ended"):
        parts.append(f"ended: {row['ended']}" + (f" at {row['ended_at']}" if row.get("ended_at") else "")
                     + (f" ({_at(row.get('ended_line'))})" if row.get("ended_line") else ""))
    if row.get("first_error"):
        parts.append(f"its first error: {row['first_error']} ({_at(row.get('first_error_line'))})")
    cited = _cite(row.get("ended_line")) + _cite(row.get("first_error_line"))
    text = parts[0] + " " + "; ".join(parts[1:]) + "." if len(parts) > 1 else parts[0] + ": the logs say nothing more of it."
    if row.get("last_progress"):
        text += f" Its last progress line: {row['last_progress'].strip()[:200]}"
    return text, cited


def _rank_last(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    row = _rank_row(contract, intent.rank)
    if row is None:
        seen = [item.get("rank") for item in contract.get("ranks") or []]
        return Answer(intent.kind, (f"The logs show nothing of rank {intent.rank}"
                                    + (f"; the ranks they show are {_ranks(seen)}." if seen else
                                       ": they name no rank (one process, or lines without rank prefixes)."),))
    text, cited = _rank_state(row)
    return Answer(intent.kind, (text,), cited)


def _host_rows(contract: dict, host: str) -> list[dict]:
    return [row for row in contract.get("ranks") or [] if (row.get("host") or "").lower() == host.lower()]


def _host_last(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    rows = _host_rows(contract, intent.host)
    if not rows:
        hosts = (contract.get("inputs") or {}).get("hosts") or []
        return Answer(intent.kind, (f"No rank the logs show ran on {intent.host}"
                                    + (f" (hosts seen: {', '.join(hosts)})." if hosts else "; they name no host."),))
    lines, cited = [f"{len(rows)} rank(s) ran on {intent.host}:"], ()
    for row in rows:
        text, row_cited = _rank_state(row)
        lines.append(text)
        cited += row_cited
    return Answer(intent.kind, tuple(lines), _unique(cited))


def _why_not_host(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    where = _where(contract)
    if (where.get("host") or "").lower() == intent.host.lower():
        told = _why(intent, contract, kb, recurrence, history_on)
        return Answer(intent.kind, (f"It is {intent.host}: the first fault is there.", *told.lines), told.evidence)
    told = _host_last(intent, contract, kb, recurrence, history_on)
    first = _first_fault_line(contract)
    return Answer(intent.kind, (*told.lines, f"The first fault is {_failure_words(contract)} on {_who(where, contract)}, "
                                             f"at {_at(first or where)}."), told.evidence + _cite(first or where, first.get("text")))


def _why_not_class(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    words = {word for word in intent.words.replace("-", " ").split() if len(word) > 2 and word not in ("the", "this", "that")}
    best, score = None, 0
    for item in [*(contract.get("collateral") or []), *(contract.get("went_past") or [])]:
        names = f"{item.get('failure_id')} {item.get('entry_id')} {item.get('summary') or ''}".lower().replace("-", " ")
        overlap = sum(word in names for word in words)
        if overlap > score:
            best, score = item, overlap
    where, first_line = _where(contract), _first_fault_line(contract)
    if best is not None:
        first = best.get("first") or {}
        set_aside = _set_aside_by(contract, first, went_past=best in (contract.get("went_past") or []))
        if set_aside is not None:  # a rule said the run went past it: not a consequence of the first fault
            name = best.get("entry_id") or best.get("failure_id")
            lines = [f"{name} is not where the failure started: rule `{set_aside['rule']}`: {set_aside['text']}.",
                     f"The first fault is {_failure_words(contract)} on {_who(where, contract)} at {_at(first_line or where)}."]
            return Answer(intent.kind, tuple(lines), _cite(first, first.get("text")) + _cite(first_line or where, first_line.get("text")))
        consequences = next((item for item in contract.get("because") or [] if item["rule"] == "consequences"), None)
        lines = [f"{best.get('entry_id') or best.get('failure_id')} is collateral: {best.get('summary') or 'a consequence'}"
                 f" (ranks {_ranks(best.get('ranks'))}, first at {_at(first)}).",
                 f"It came after the first fault, {_failure_words(contract)} on {_who(where, contract)} at {_at(first_line or where)}"
                 + (f"; rule `consequences`: {consequences['text']}." if consequences else ".")]
        return Answer(intent.kind, tuple(lines), _cite(first, first.get("text")) + _cite(first_line or where, first_line.get("text")))
    candidates = [item for item in contract.get("candidates") or []
                  if any(word in f"{item.get('failure_id')} {item.get('entry_id')}".replace("-", " ") for word in words)]
    if candidates:
        other = candidates[0]
        return Answer(intent.kind, (f"{other.get('entry_id')} was weighed (confidence {other.get('confidence')}) and ranked "
                                    f"below {_failure_words(contract)}.",))
    return Answer(intent.kind, (f"The diagnosis holds nothing called {intent.words!r}: no collateral or candidate of that kind. "
                                f"The first fault is {_failure_words(contract)}.",))


# the filter rules that set an error aside because the run went past it (not a consequence of the first
# fault) and cite the error they set aside (finished-after-it and restarted-and-went-on cite the finish
# or the restart, not the errors)
SET_ASIDE_RULES = ("launcher-went-on", "outlived-by-progress")


def _set_aside_by(contract: dict, first: dict, went_past: bool = False) -> dict | None:
    """The step that set the error on this line aside as one the run went past, when one cites it
    (`went_past`: the contract lists it so; then the first such step, whichever line it cites)."""
    place = (first.get("source"), first.get("line"))
    steps = [item for item in contract.get("because") or [] if item.get("rule") in SET_ASIDE_RULES]
    cites = next((item for item in steps if any((cited.get("source"), cited.get("line")) == place
                                                 for cited in item.get("evidence") or [])), None)
    return cites or (steps[0] if went_past and steps else None)


def _alternatives(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    primary = _primary(contract)
    if not primary or kb is None or primary.get("entry_id") not in kb:
        return Answer(intent.kind, ("There is no named failure to compare with look-alikes.",))
    entry = kb.get(primary["entry_id"])
    lines = [f"The diagnosis is {entry.id} ({entry.title}). Look-alikes, and what tells each apart:"]
    others = [item for item in contract.get("candidates") or [] if item.get("entry_id") != entry.id]
    for item in others[:3]:
        lines.append(f"- {item['entry_id']} (weighed, confidence {item['confidence']})")
    for related in (entry.data.get("related") or [])[:4]:
        if related not in kb:
            continue
        other = kb.get(related)
        checks = other.data.get("confirm") or []
        check = checks[0] if checks else {}
        lines.append(f"- {other.id}: {other.title}" + (f"; check: {check.get('check')}" if check.get("check") else "")
                     + (f" (`{check['command']}`)" if check.get("command") else ""))
    return Answer(intent.kind, tuple(lines))


def _seen_before(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    if not history_on:
        return Answer(intent.kind, ("The history is off: diagnose with --save to keep diagnoses and see recurrences.",))
    if contract.get("status") == "healthy":
        return Answer(intent.kind, ("Nothing failed, so there is no failure to look for in the history.",))
    if recurrence is None:
        return Answer(intent.kind, ("Not before: no earlier diagnosis in the history has this fingerprint "
                                    "(the same class and first-fault line, numbers, hosts and times aside).",))
    return Answer(intent.kind, (f"Yes: {recurrence.sentence()}.",))


def _restart(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    if contract.get("status") == "healthy":
        return Answer(intent.kind, ("Nothing failed: there is nothing to restart for.",))
    action = contract.get("action") or "fix-and-rerun"
    decided = next((item for item in contract.get("because") or [] if item["rule"].startswith("action")), None)
    verdict = {"restart": "Yes, restart", "fix-and-rerun": "No: a restart would fail the same way; fix it first",
               "drain-host": "Not on the same host: drain it, then restart elsewhere"}.get(action, f"Action: {action}")
    lines = [f"{verdict}." + (f" ({decided['text']})" if decided else "")]
    primary = _primary(contract)
    if kb is not None and primary.get("entry_id") in kb:
        entry = kb.get(primary["entry_id"])
        fixes = entry.data.get("fix") or []
        if fixes and action != "restart":
            lines.append(f"Fix: {fixes[0]['title']}.")
        for check in (entry.data.get("verify") or [])[:1]:
            lines.append(f"Verify: {check.get('check')}" + (f" Run: {check['command']}" if check.get("command") else ""))
    detail = contract.get("action_detail") or {}
    for key, values in detail.items():
        lines.append(f"{key}: {', '.join(str(value) for value in values)}")
    return Answer(intent.kind, tuple(lines))


def _unknown(intent, contract, kb, recurrence, history_on, baseline=None) -> Answer:
    lines = ["This question is not one firstfault can answer from the diagnosis. It answers:"]
    lines += [f"- {question}: {what}" for question, what in asked.SUPPORTED]
    return Answer(asked.UNKNOWN, tuple(lines))


def _ranks(ranks) -> str:
    numbers = sorted(rank for rank in ranks or [] if isinstance(rank, int))
    if not numbers:
        return "none"
    runs, start = [], numbers[0]
    for previous, current in zip(numbers, numbers[1:] + [None]):
        if current != previous + 1:
            runs.append(str(start) if start == previous else f"{start}-{previous}")
            start = current
    return ",".join(runs)


def _unique(cited: tuple[dict, ...]) -> tuple[dict, ...]:
    seen, kept = set(), []
    for item in cited:
        key = (item.get("source"), item.get("line"))
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return tuple(kept)


_HANDLERS = {
    asked.WHY: _why, asked.WHY_RANK: _why_not_rank, asked.WHY_NOT_RANK: _why_not_rank, asked.RANK_LAST: _rank_last,
    asked.HOST_LAST: _host_last, asked.WHY_NOT_HOST: _why_not_host, asked.WHY_NOT_CLASS: _why_not_class,
    asked.ALTERNATIVES: _alternatives, asked.SEEN_BEFORE: _seen_before, asked.RESTART: _restart, asked.CHANGED: _changed,
}
