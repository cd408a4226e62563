"""Rank attribution from file names and line prefixes, and rank lists as dumps write them."""
from __future__ import annotations

import os
import re

# "fr_trace_rank_3", "nccl_trace_rank_12.json", "stack_rank3.txt", "rank-3.log"
_NAMED_RANK = re.compile(r"rank[_-]?(\d{1,9})(?!\d)", re.IGNORECASE)
# "dump_3", "trace-3.pkl": a bare trailing number, used only when no "rank" is named
_TRAILING_NUMBER = re.compile(r"[_-](\d{1,9})(?:\.[A-Za-z]+)?$")
# "[rank3]:" as torchrun's --log-line-prefix / tee writes it, and "[default3]:"
LINE_PREFIX = re.compile(r"^\[(?:rank|default)(\d{1,9})\]:\s?")


def rank_from_name(path: str) -> int | None:
    """The rank a per-rank file belongs to, from its name; None when the name says nothing."""
    name = os.path.basename(path)
    found = _NAMED_RANK.findall(name)
    if found:
        return int(found[-1])
    trailing = _TRAILING_NUMBER.search(name)
    return int(trailing.group(1)) if trailing else None


def parse_rank_list(text: object) -> tuple[int, ...]:
    """Ranks from a dump's pg_config ("[0, 1, 2, 3]"), or from a list; () when unreadable."""
    if isinstance(text, (list, tuple)):
        return tuple(int(item) for item in text if isinstance(item, int))
    if not isinstance(text, str):
        return ()
    return tuple(int(number) for number in re.findall(r"\d{1,9}", text))


def format_ranks(ranks: tuple[int, ...] | list[int]) -> str:
    """'rank 2' or 'ranks 0, 1, 3'; runs of 5 or more collapse to 'ranks 0-7'."""
    ordered = sorted(set(ranks))
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    if len(ordered) >= 5 and ordered[-1] - ordered[0] == len(ordered) - 1:
        return f"ranks {ordered[0]}-{ordered[-1]}"
    return "ranks " + ", ".join(str(rank) for rank in ordered)
