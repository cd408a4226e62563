"""What a follow-up question asks: plain rules over its words, tested one by one, never guessed.

    intent_of("why not rank 0?")            -> Intent("why-not-rank", rank=0)
    intent_of("what did rank 3 do last")    -> Intent("rank-last", rank=3)
    intent_of("has this happened before")   -> Intent("seen-before")

A question no rule reads is `unknown`; its answer lists the questions that can be answered.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

WHY_NOT_RANK, WHY_RANK, RANK_LAST = "why-not-rank", "why-rank", "rank-last"
WHY_NOT_HOST, HOST_LAST = "why-not-host", "host-last"
WHY_NOT_CLASS, WHY, ALTERNATIVES = "why-not-class", "why", "alternatives"
SEEN_BEFORE, RESTART, UNKNOWN = "seen-before", "restart", "unknown"
CHANGED = "changed"

SUPPORTED = (
    ("why not rank N", "why the first fault is not on rank N: which rule decided, what rank N's lines are"),
    ("why rank N", "why the first fault is on rank N"),
    ("what did rank N do last", "rank N's last progress, the collective it was in, how and when it ended"),
    ("why not host H / what did host H do", "the same for a host"),
    ("why not the nccl timeout (or any collateral class)", "why a loud error is only a consequence"),
    ("what else could it be", "the look-alike entries and the check that tells them apart"),
    ("has this happened before", "the same failure in the history: how often, since when, on which hosts"),
    ("what changed since the last healthy run", "world size, hosts, ranks, stack and files against the job's last healthy diagnosis in the history"),
    ("is it safe to restart / what do I run", "restart or fix first, and the command to verify the fix"),
)

_RANK = re.compile(r"\b(?:rank|worker|process|proc|gpu)\s*#?\s*(\d{1,6})\b", re.I)
_HOST = re.compile(r"\b(?:host|node|machine)\s+([A-Za-z][\w.-]*\d[\w.-]*|[A-Za-z][\w.-]{1,62})", re.I)
_NOT = re.compile(r"\bnot\b|n't\b|\binstead of\b|\brather than\b|\bblam(?:e[ds]?|ing)\b", re.I)
_LAST = re.compile(r"\b(?:last|did|doing|do|end(?:ed)?|stop(?:ped)?|lines?|show|state|happen(?:ed)? (?:to|on))\b", re.I)
_CHANGED = re.compile(r"\b(?:chang\w*|differ\w*|last (?:good|healthy|successful|working) run|compared?|versus|vs\.?)\b", re.I)
_BEFORE = re.compile(r"\b(?:before|again|previous(?:ly)?|recur\w*|how often|seen|history|first time|times)\b", re.I)
_RESTART = re.compile(r"\b(?:restart\w*|re-?run|resume|retry|safe|what (?:do|should) i run|requeue)\b", re.I)
_ALTERNATIVES = re.compile(r"\b(?:else|alternatives?|other (?:cause|explanation|entr)\w*|look-?alikes?|could it be|instead|tell (?:them|it) apart)\b", re.I)
_WHY = re.compile(r"\b(?:why|how (?:do|did) you (?:know|decide)|what (?:made|makes) you|reason)\b", re.I)


@dataclass(frozen=True)
class Intent:
    kind: str
    rank: int | None = None
    host: str | None = None
    words: str = ""  # what a why-not-class question names (`nccl timeout`)


def intent_of(question: str, known_hosts: tuple[str, ...] = ()) -> Intent:
    """The intent of a question; `known_hosts` lets a bare host name stand for `host H`."""
    text = " ".join(question.split())
    rank = _rank_in(text)
    host = _host_in(text, known_hosts)
    negated = bool(_NOT.search(text))
    if rank is not None:
        if _WHY.search(text):
            return Intent(WHY_NOT_RANK if negated else WHY_RANK, rank=rank)
        if _LAST.search(text) or text.lower().startswith(("rank", "what")):
            return Intent(RANK_LAST, rank=rank)
        return Intent(WHY_NOT_RANK if negated else RANK_LAST, rank=rank)
    if host is not None:
        if _WHY.search(text) and negated:
            return Intent(WHY_NOT_HOST, host=host)
        return Intent(HOST_LAST, host=host)
    if _CHANGED.search(text):
        return Intent(CHANGED)
    if _BEFORE.search(text):
        return Intent(SEEN_BEFORE)
    if _RESTART.search(text):
        return Intent(RESTART)
    if _ALTERNATIVES.search(text):
        return Intent(ALTERNATIVES)
    if _WHY.search(text) and negated:
        words = text.lower().split("not", 1)[1] if "not" in text.lower() else text.lower()
        return Intent(WHY_NOT_CLASS, words=re.sub(r"[^a-z0-9 -]", " ", words).strip())
    if _WHY.search(text):
        return Intent(WHY)
    return Intent(UNKNOWN)


def _rank_in(text: str) -> int | None:
    found = _RANK.search(text)
    return int(found.group(1)) if found else None


def _host_in(text: str, known_hosts: tuple[str, ...]) -> str | None:
    lowered = text.lower()
    for host in sorted(known_hosts, key=len, reverse=True):
        if host and re.search(rf"(?<![\w.-]){re.escape(host.lower())}(?![\w-])", lowered):
            return host
    found = _HOST.search(text)
    if found and found.group(1).lower() not in ("did", "do", "doing", "the", "a", "it"):
        return found.group(1).rstrip(".?!,")
    return None
