"""Look-alike entries side by side (`firstfault compare CATEGORY`).

For each entry: what it really indicates, the message you see, and the diagnostics that tell it
from its look-alikes; then which tools (environment variables, commands) help with which entry,
from the entries' `diagnostics` and their fixes' `env` keys.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import UsageError
from ..model import Entry
from .loader import KnowledgeBase
from .schema import CATEGORIES

# The switches an on-call engineer reaches for first with NCCL; shown even when no entry names them.
NCCL_TOOLS = (
    "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_P2P_DISABLE",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_DISTRIBUTED_DEBUG",
    "CUDA_LAUNCH_BLOCKING",
)
ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
ENV_ASSIGNMENT = re.compile(r"(?<![\w$])(" + ENV_NAME.pattern + r")=")
CODE_SPAN = re.compile(r"`[^`]+`")
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.")


@dataclass(frozen=True)
class Topic:
    """A named comparison: which entries, and which tools always get a row."""

    name: str
    selects: Callable[[Entry], bool]
    tools: tuple[str, ...] = ()


def _mentions(entry: Entry, *words: str) -> bool:
    names = [entry.id, *(entry.get("tags") or ())]
    return any(word in name for name in names for word in words)


TOPICS = {
    "nccl": Topic(
        "nccl",
        lambda entry: entry.category == "network" and _mentions(entry, "nccl", "collective-timeout"),
        NCCL_TOOLS,
    ),
}


@dataclass(frozen=True)
class ComparedEntry:
    id: str
    title: str
    indicates: str  # the first sentence of the summary
    message: str  # observe[0]: the line you would see
    diagnostics: tuple[tuple[str, str], ...]  # (tool, use)


@dataclass(frozen=True)
class ToolRow:
    """One tool and the entries it helps with: to diagnose (diagnostics) or as part of a fix (env)."""

    name: str
    kind: str  # env | other
    diagnose: tuple[str, ...]
    fix: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    topic: str
    entries: tuple[ComparedEntry, ...]
    tools: tuple[ToolRow, ...]


def comparison_topics() -> tuple[str, ...]:
    return tuple(TOPICS) + CATEGORIES


def select(kb: KnowledgeBase, category: str) -> list[Entry]:
    """The entries of a category or of a topic such as `nccl` (what `list --category` and
    `compare` both accept)."""
    if category not in comparison_topics():
        raise UsageError(f"no category or topic called {category!r}", f"choose from {', '.join(comparison_topics())}")
    topic = TOPICS.get(category) or Topic(category, lambda entry: entry.category == category)
    return [entry for entry in kb.entries if topic.selects(entry)]


def compare(kb: KnowledgeBase, category: str) -> Comparison:
    """The entries of `category` (or of a topic such as `nccl`) side by side, with the tool matrix."""
    if category not in comparison_topics():
        raise UsageError(f"nothing to compare called {category!r}", f"choose from {', '.join(comparison_topics())}")
    topic = TOPICS.get(category) or Topic(category, lambda entry: entry.category == category)
    entries = select(kb, category)
    if not entries:
        filled = ", ".join(kb.categories()) or "none"
        raise UsageError(f"no entries to compare in {category!r} yet", f"categories with entries: {filled}")
    return Comparison(
        topic=category,
        entries=tuple(_compared(entry) for entry in entries),
        tools=_tool_rows(entries, topic.tools),
    )


def first_sentence(text: str) -> str:
    """The text up to its first full stop (not one of an abbreviation such as e.g.)."""
    text = " ".join(str(text).split())
    for match in SENTENCE_BREAK.finditer(text):
        if not text[: match.start()].endswith(ABBREVIATIONS):
            return text[: match.start()]
    return text


def tool_names(tool: str) -> list[tuple[str, str]]:
    """The (name, kind) a diagnostics `tool` stands for: its env variables, else the tool itself."""
    stripped = tool.strip()
    if CODE_SPAN.fullmatch(stripped):
        stripped = stripped[1:-1].strip()
    if ENV_NAME.fullmatch(stripped):
        return [(stripped, "env")]
    names = list(dict.fromkeys(ENV_ASSIGNMENT.findall(stripped)))
    return [(name, "env") for name in names] if names else [(stripped, "other")]


def _compared(entry: Entry) -> ComparedEntry:
    observe = entry.get("observe") or [""]
    diagnostics = tuple((item["tool"], item["use"]) for item in entry.get("diagnostics") or ())
    return ComparedEntry(entry.id, entry.title, first_sentence(entry.get("summary", "")), observe[0], diagnostics)


def _tool_rows(entries: list[Entry], always: tuple[str, ...]) -> tuple[ToolRow, ...]:
    """Rows for `always` first (in that order), then env variables by name, then other tools."""
    kinds = {name: "env" for name in always}
    diagnose: dict[str, list[str]] = {}
    fix: dict[str, list[str]] = {}
    for entry in entries:
        for item in entry.get("diagnostics") or ():
            for name, kind in tool_names(item["tool"]):
                kinds.setdefault(name, kind)
                _add(diagnose, name, entry.id)
        for option in entry.get("fix") or ():
            for name in option.get("env") or {}:
                kinds.setdefault(name, "env")
                _add(fix, name, entry.id)
    order = sorted(kinds, key=lambda name: (
        name not in always, always.index(name) if name in always else 0, kinds[name] != "env", name.lower(),
    ))
    return tuple(ToolRow(name, kinds[name], tuple(diagnose.get(name, ())), tuple(fix.get(name, ()))) for name in order)


def _add(table: dict[str, list[str]], name: str, entry_id: str) -> None:
    ids = table.setdefault(name, [])
    if entry_id not in ids:
        ids.append(entry_id)
