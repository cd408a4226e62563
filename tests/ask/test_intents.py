"""Typed questions to intents: plain rules, each rule a row here."""
from __future__ import annotations

import pytest

from firstfault.ask import intents
from firstfault.ask.intents import intent_of

ROWS = [
    ("why not rank 0?", intents.WHY_NOT_RANK, 0, None),
    ("Why isn't it rank 12", intents.WHY_NOT_RANK, 12, None),
    ("why did you blame rank 5 instead of rank 0", intents.WHY_NOT_RANK, 5, None),
    ("why rank 37", intents.WHY_RANK, 37, None),
    ("what did rank 3 do last?", intents.RANK_LAST, 3, None),
    ("rank 7 last lines", intents.RANK_LAST, 7, None),
    ("show me worker 4", intents.RANK_LAST, 4, None),
    ("what did host gpu-b07 do", intents.HOST_LAST, None, "gpu-b07"),
    ("why not node018", intents.WHY_NOT_HOST, None, "node018"),
    ("why not the NCCL timeout?", intents.WHY_NOT_CLASS, None, None),
    ("what else could it be", intents.ALTERNATIVES, None, None),
    ("any other explanation?", intents.ALTERNATIVES, None, None),
    ("has this happened before", intents.SEEN_BEFORE, None, None),
    ("how often have we seen this", intents.SEEN_BEFORE, None, None),
    ("is it safe to just restart?", intents.RESTART, None, None),
    ("what do I run", intents.RESTART, None, None),
    ("why", intents.WHY, None, None),
    ("how did you decide", intents.WHY, None, None),
    ("what's the weather", intents.UNKNOWN, None, None),
]


@pytest.mark.parametrize("question,kind,rank,host", ROWS, ids=[row[0] for row in ROWS])
def test_each_question_form_reads_as_its_intent(question, kind, rank, host):
    intent = intent_of(question, known_hosts=("gpu-b07", "node018"))
    assert (intent.kind, intent.rank, intent.host) == (kind, rank, host)


def test_what_changed_reads_as_its_intent():
    for question in ("what changed since the last healthy run?", "how is this different from the last good run",
                     "compare with last week"):
        assert intent_of(question).kind == intents.CHANGED, question
