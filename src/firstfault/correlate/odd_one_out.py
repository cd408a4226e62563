"""When every rank prints the same kind of error about a disagreement (DETAIL collective
mismatch reports: "Rank 0 is running collective: X, but Rank 1 is running collective: Y"),
the rank that started it is the one whose own description differs from everyone else's."""
from __future__ import annotations

import re
from collections import defaultdict

from ..model import Match

# Each rank describes its own collective first; rank numbers are removed before comparing.
_OWN_DESCRIPTION = re.compile(r"is running collective: (CollectiveFingerPrint\([^\n]*?\))(?:, but |$|\.)")
_RANK_WORDS = re.compile(r"\b[Rr]ank \d+\b")


def _descriptions(matches: list[Match]) -> dict[str, set[int]]:
    """Each distinct self-description, with the ranks that gave it."""
    described: dict[str, set[int]] = defaultdict(set)
    for match in matches:
        rank = match.line.origin.rank
        found = _OWN_DESCRIPTION.search(match.line.text)
        if rank is not None and found:
            described[_RANK_WORDS.sub("", found.group(1))].add(rank)
    return described


def no_odd_one(matches: list[Match]) -> bool:
    """Ranks describe different collectives but none is alone against a majority (one against one,
    two against two): which of them started it the reports do not say."""
    described = _descriptions(matches)
    return len(described) >= 2 and _odd_of(described) is None


def odd_rank(matches: list[Match]) -> int | None:
    """The single rank whose self-description differs from a majority of at least two."""
    return _odd_of(_descriptions(matches))


def _odd_of(described: dict[str, set[int]]) -> int | None:
    if len(described) < 2:
        return None
    groups = sorted(described.values(), key=len)
    if len(groups[0]) == 1 and len(groups[-1]) >= 2 and len(groups[1]) > 1:
        return next(iter(groups[0]))
    return None
