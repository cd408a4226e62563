"""One entry -> its documentation as an ordered list of sections, for every entry renderer.

The section order and headings live here only; the terminal and Markdown renderers walk the
same sections, so `firstfault explain` and a pasted issue never disagree. No I/O.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..model import Entry
from ..placeholders import PLACEHOLDER, fill_placeholders  # noqa: F401 - re-exported
from ..stack import select_fixes, stack_names

SUMMARY, OBSERVE, SYMPTOMS, MECHANISM = "Summary", "What you'll observe", "Symptoms", "Mechanism"
CONFIRM, FIX, VERIFY, PREVENTION = "How to confirm", "Fix", "Verification", "Prevention"
FAQ, DIAGNOSTICS, RELATED, REFERENCES = "FAQ", "Diagnostics", "Related", "References"

# Every entry has these (the schema requires their fields); FAQ, Diagnostics, Related are optional.
REQUIRED_SECTIONS = (SUMMARY, OBSERVE, SYMPTOMS, MECHANISM, CONFIRM, FIX, VERIFY, PREVENTION, REFERENCES)

def paragraphs(text: str) -> list[str]:
    """The paragraphs of a text field, each on one line.

    A folded YAML scalar (`summary: >`) keeps a newline only where the author left a blank line;
    a literal one (`|`) keeps every line break, so there blank lines separate paragraphs.
    """
    separator = re.compile(r"\n\s*\n") if re.search(r"\n\s*\n", text.strip()) else re.compile(r"\n")
    return [" ".join(part.split()) for part in separator.split(text.strip()) if part.strip()]


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class LogLines:
    """Messages exactly as they appear in logs: never wrapped, never filled."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Item:
    """A bullet; `detail` explains it; `literal` marks an id, tool or command shown as code."""

    text: str
    detail: str = ""
    literal: bool = False


@dataclass(frozen=True)
class Step:
    """One numbered check, cheapest first, with the command that runs it."""

    text: str
    command: str = ""


@dataclass(frozen=True)
class Code:
    text: str
    language: str = ""  # bash, python, json, yaml or "" for plain text


@dataclass(frozen=True)
class Link:
    title: str
    url: str


@dataclass(frozen=True)
class FixOption:
    title: str
    stack: str
    why: str
    steps: tuple[str, ...] = ()
    blocks: tuple[Code, ...] = ()


@dataclass(frozen=True)
class Section:
    heading: str
    blocks: tuple


@dataclass(frozen=True)
class Header:
    """The title block: what the entry is called and how it is filed."""

    title: str
    id: str
    category: str
    severity: str
    status: str
    systems: tuple[str, ...]
    tags: tuple[str, ...]
    redirect_from: tuple[str, ...]


def numbered(blocks) -> list[tuple[int, object]]:
    """(number, block): steps and fixes are numbered 1, 2, ...; a paragraph among them is not counted."""
    result, number = [], 0
    for block in blocks:
        if isinstance(block, (Step, FixOption)):
            number += 1
        result.append((number, block))
    return result


def entry_header(entry: Entry) -> Header:
    return Header(
        title=entry.title, id=entry.id, category=entry.category, severity=entry.severity,
        status=entry.status, systems=tuple(entry.get("systems") or ()),
        tags=tuple(entry.get("tags") or ()), redirect_from=tuple(entry.get("redirect_from") or ()),
    )


FIX_LIMIT = 4  # fixes a diagnosis shows; the entry has them all


def build_sections(
    entry: Entry,
    values: Mapping[str, object] | None = None,
    related_titles: Mapping[str, str] | None = None,
    stack: Sequence[str] | None = None,
    evidence: Sequence[str] = (),
) -> list[Section]:
    """The sections of `entry` in their fixed order; empty optional sections are left out.

    `stack`: for a diagnosis, the ids of the stacks the logs show (firstfault.stack): the Fix
    section then names them and holds the fixes that fit them, theirs first (see `fix_blocks`)."""
    fill = _Filler(values)
    sections = [
        Section(SUMMARY, (Paragraph(fill(entry.get("summary", ""))),)),
        Section(OBSERVE, (LogLines(tuple(entry.get("observe") or ())),)),
        Section(SYMPTOMS, tuple(Item(fill(s["text"]), fill(s["meaning"])) for s in entry.get("symptoms") or ())),
        Section(MECHANISM, (Paragraph(fill(entry.get("mechanism", ""))),)),
        Section(CONFIRM, _steps(entry.get("confirm"), fill)),
        Section(FIX, fix_blocks(entry, values, stack, evidence)),
        Section(VERIFY, _steps(entry.get("verify"), fill) + _verified(entry.get("verified"))),
        Section(PREVENTION, tuple(Item(fill(text)) for text in entry.get("prevention") or ())),
        Section(FAQ, tuple(Item(fill(qa["q"]), fill(qa["a"])) for qa in entry.get("faq") or ())),
        Section(DIAGNOSTICS, tuple(
            Item(d["tool"], fill(d["use"]), literal=True) for d in entry.get("diagnostics") or ()
        )),
        Section(RELATED, tuple(
            Item(other, (related_titles or {}).get(other, ""), literal=True) for other in entry.get("related") or ()
        )),
        Section(REFERENCES, tuple(Link(ref["title"], ref["url"]) for ref in entry.get("references") or ())),
    ]
    return [section for section in sections if section.heading in REQUIRED_SECTIONS or section.blocks]


def fix_blocks(entry: Entry, values: Mapping[str, object] | None, stack: Sequence[str] | None,
               evidence: Sequence[str] = ()) -> tuple:
    """The Fix section's blocks: every fix for an entry page; for a diagnosis, a line naming the
    stack the logs show, the fixes that fit the evidence lines and the stack (at most FIX_LIMIT),
    and a line naming the rest."""
    items = list(entry.get("fix") or ())
    if stack is None:
        return tuple(_fix_option(item, values) for item in items)
    shown, left_out = select_fixes(items, stack, FIX_LIMIT, evidence)
    names = stack_names(stack)
    blocks: list = [Paragraph(f"Stack in the logs: {', '.join(names)}." if names else
                              "Stack in the logs: not recognised (no launcher, framework or scheduler lines).")]
    blocks += [_fix_option(item, values) for item in shown]
    hidden = len(items) - len(shown)
    if hidden:
        stacks = ", ".join(left_out)
        blocks.append(Paragraph(f"Not shown: {hidden} more fix{'es' if hidden != 1 else ''} ({stacks}); "
                                f"`firstfault explain {entry.id}` has them all."))
    return tuple(blocks)


def verify_steps(entry: Entry, values: Mapping[str, object] | None) -> tuple[Step, ...]:
    """The entry's verification steps with the log's values filled in."""
    return _steps(entry.get("verify"), _Filler(values))


def _steps(items, fill) -> tuple[Step, ...]:
    return tuple(Step(fill(item["check"]), _shell(item.get("command") or "", fill)) for item in items or ())


def _shell(text: str, fill) -> str:
    """Commands and env values: an unknown value becomes a shell variable (`$HOST`), not a phrase."""
    return fill_placeholders(str(text), fill.values, shell=True) if text else ""


def _verified(verified) -> tuple[Paragraph, ...]:
    if not verified:
        return ()
    return (Paragraph(f"Verified in the lab: applying the fix makes the symptom disappear (scenario {verified['scenario']})."),)


class _Filler:
    """Prose with the log's values filled in (firstfault.placeholders); `.values` for commands."""

    def __init__(self, values: Mapping[str, object] | None) -> None:
        self.values = values or {}

    def __call__(self, text) -> str:
        return fill_placeholders(str(text), self.values)


def _fix_option(item: Mapping, values: Mapping[str, object] | None) -> FixOption:
    """Env and commands are filled (a diagnosis knows the interface or rank); code and config are not."""
    fill = _Filler(values)
    blocks = []
    if item.get("env"):
        blocks.append(Code("\n".join(_export(name, _shell(value, fill)) for name, value in item["env"].items()), "bash"))
    if item.get("config"):
        blocks.append(Code(str(item["config"]).rstrip("\n"), config_language(str(item["config"]))))
    if item.get("code"):
        blocks.append(Code(str(item["code"]).rstrip("\n"), "python"))
    if item.get("command"):
        blocks.append(Code(_shell(item["command"], fill).rstrip("\n"), "bash"))
    return FixOption(
        title=fill(item["title"]), stack=item["stack"], why=fill(item["why"]),
        steps=tuple(fill(step) for step in item.get("steps") or ()), blocks=tuple(blocks),
    )


def _export(name: str, value: str) -> str:
    quoted = value if re.fullmatch(r"[\w.,:/=@%+<>$-]*", value) else "'" + value.replace("'", "'\\''") + "'"
    return f"export {name}={quoted}"


def config_language(text: str) -> str:
    """json for `{...}`/`[...]`, yaml for `key: value` lines, otherwise plain."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        return "json"
    first = next((line for line in stripped.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    return "yaml" if re.match(r"\s*[\w.-]+:(\s|$)", first) else ""
