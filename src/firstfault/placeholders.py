"""`{name}` placeholders in knowledge-base text, filled with values from the log.

A value the log did not give is left out of the sentence, never shown as a placeholder:

    fill_placeholders("rank {rank} raised {exc_type}", {"exc_type": "KeyError"})
        -> "a rank raised KeyError"
    fill_placeholders("torchrun on {host} is stopping worker {pid} ({signal})", {})
        -> "torchrun is stopping a worker"
    fill_placeholders("ssh {host} nvidia-smi", {}, shell=True)
        -> "ssh $HOST nvidia-smi"      (commands: a shell variable the reader sets)

The omission is grammar over short English messages, in this order: a leading `rank {rank}: `
or `{host}: ` subject goes; inside parentheses, parts that only name unknown values go (and the
parentheses when nothing is left); `key={value}` tokens go; `on {host}`-style phrases go; a
`rank {rank}`-style label keeps its noun (`a rank`); any other unknown value becomes a plain noun
phrase (`an exception`). Then dangling words and punctuation are tidied.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

# `{name}`, but not `${NAME}` (shell) nor `{{name}}` (escaped braces)
PLACEHOLDER = re.compile(r"(?<![{$])\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")

# An unknown value while the sentence is being rewritten: \x00name\x01, with any quotes around it
# and the unit written after it (`{timeout_ms} ms`, `{size} bytes`, `{max_len}-token`).
_OPEN, _CLOSE = "\x00", "\x01"
_UNIT = r"(?:\s(?:ms|s|GiB|MiB|GB|MB|bytes|tokens)\b|-(?=\w)|\+)?"
_TOKEN = rf"(?:`\x00(\w+)\x01`|'\x00(\w+)\x01'|\"\x00(\w+)\x01\"|\x00(\w+)\x01){_UNIT}"
_PREPOSITIONS = ("on", "at", "to", "from", "in", "of", "for", "with", "within", "after", "by", "via", "vs",
                 "than", "over", "writing", "talking to", "due to")
_PREPOSITION = "|".join(sorted((re.escape(word) for word in _PREPOSITIONS), key=len, reverse=True))
# Nouns that name the value after them (`rank 3`, `worker 7123`): with the value unknown they
# read `a rank`; identifiers that mean nothing without their value (`pid`) go with it.
_LABELS = {"local rank": "local rank", "global rank": "global rank", "rank": "rank", "pid": "process",
           "process": "process", "worker": "worker", "task": "task", "step": "step", "port": "port",
           "GPU": "GPU", "device": "device", "record": "record", "parameter": "parameter", "job": "job",
           "segment": "segment", "module": "module", "library": "library", "interface": "interface",
           "address": "address", "node": "node", "peer": "peer", "key": "key", "file": "file",
           "call": "call", "backend": "backend", "iteration": "iteration", "signal": "signal",
           "code": "code", "status": "status", "index": "", "SXid": "", "Xid": ""}
_LABEL = "|".join(sorted((re.escape(word) for word in _LABELS), key=len, reverse=True))
# After these words a bare label reads better with an article: `names a rank`, `got a signal`.
_VERB = re.compile(r"(?i)^(?!shared$|failed$|named$|mixed$)(?:\w+ed|\w+ing|names|reports|saw|got|but|while|and|or|of|to|"
                   r"from|on|at|in|by|with)$")
_DETERMINER = re.compile(r"(?i)\b(?:no|the|a|an|its|their|this|that|any)\s+(?:[\w-]+\s+)?$")
# What an unknown value is called when the sentence needs a noun in its place; others just go.
_NOUNS = {
    "exc_type": "an exception", "host": "a host", "node": "a node", "peer": "a peer", "rank": "a rank",
    "pid": "a process", "path": "a file", "module": "a module", "library": "a library", "name": "a name",
    "tensor": "a tensor", "address": "the address", "signal": "a signal", "kernel": "a kernel",
    "global_name": "a global", "entity": "the job", "endpoint": "the hub", "model_class": "the model",
    "op": "an operation", "iface": "an interface", "interface": "an interface", "iface_wanted": "the right interface",
    "dtype_a": "one dtype", "dtype_b": "another dtype", "object": "an object", "record": "a record",
}
_WHERE = ("host", "node", "peer", "rank", "device")  # `on {host}` and the like just go
_VOWEL = re.compile(r"(?i)^(?:[aeio]|u(?!ni)|x\b)")


def fill_placeholders(text: str, values: Mapping[str, object] | None = None, *, shell: bool = False) -> str:
    """Replace `{name}` with values[name]. A value that is None or empty is left out of the
    sentence (see the module docstring); with `shell=True` (commands, env values) it becomes a
    shell variable the reader sets, `$NAME`."""
    values = values or {}

    def known(name: str) -> str | None:
        value = values.get(name)
        return None if value is None or value == "" else str(value)

    if all(known(name) is not None for name in PLACEHOLDER.findall(text)):
        return PLACEHOLDER.sub(lambda match: known(match.group(1)), text)
    if shell:
        return PLACEHOLDER.sub(lambda match: known(match.group(1)) or f"${match.group(1).upper()}", text)
    marked = PLACEHOLDER.sub(
        lambda match: match.group(0) if known(match.group(1)) is not None else f"{_OPEN}{match.group(1)}{_CLOSE}", text)
    return PLACEHOLDER.sub(lambda match: known(match.group(1)) or "", _tidy(_omit_unknown(marked)))


def _name(match: re.Match, first_group: int) -> str:
    return next(group for group in match.groups()[first_group - 1:first_group + 3] if group)


def _omit_unknown(text: str) -> str:
    text = re.sub(r"\s*\(([^()]*)\)", _parenthetical, text)
    text = re.sub(rf"^(?:(?:local |global )?rank |host |node )?{_TOKEN}:\s+", "", text)
    text = re.sub(rf"(?:\s+(?:{_PREPOSITION}))?\s*[\w.]+={_TOKEN}|:{_TOKEN}", "", text)  # SeqNum={seq}, :{port}
    text = re.sub(rf"\s*\b({_PREPOSITION})\s+(?:({_LABEL})\s+)?{_TOKEN}", _preposition_phrase, text)
    text = re.sub(rf"(^|[;:,.]\s+|\b[\w']+\s+)({_LABEL})\s+{_TOKEN}", _labelled, text)
    text = re.sub(rf"(?:\s+(?:{_PREPOSITION}))?\s*[:;,]\s*{_TOKEN}(?=\s*$|\s*[;,.(]|\))", "", text)  # `with: {reason}`
    return re.sub(_TOKEN, _bare, text)


def _parenthetical(match: re.Match) -> str:
    inner = match.group(1)
    if _OPEN not in inner:
        return match.group(0)
    kept = []
    for part in re.split(r",\s*", inner):
        if _OPEN not in part:
            kept.append(part)
        elif "{" in part:  # a known value beside the unknown one: only the unknown one goes
            kept.append(re.sub(_TOKEN, "", part))
    leading = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
    return f"{leading}({', '.join(kept)})" if kept else ""


def _preposition_phrase(match: re.Match) -> str:
    """`on {host}` goes; `by rank {rank}` reads `by a rank`; `to {iface}` reads `to an interface`."""
    preposition, label, name = match.group(1), match.group(2), _name(match, 3)
    if label:
        noun = _LABELS[label]
        return f" {preposition} {_article(noun)}" if noun else ""
    noun = _NOUNS.get(name, "") if name not in _WHERE else ""
    return f" {preposition} {noun}" if noun else ""


def _labelled(match: re.Match) -> str:
    before, label = match.group(1), match.group(2)
    noun = _LABELS[label]
    if not noun:
        return before.rstrip() + " " if before.strip() else ""
    word = before.strip()
    if word in ("", ";", ":", ",", ".") or _VERB.match(word):
        return f"{before}{_article(noun)}"
    return f"{before}{label}" if label != "pid" else before.rstrip() + " "


def _bare(match: re.Match) -> str:
    noun = _NOUNS.get(_name(match, 1), "")
    if noun and _DETERMINER.search(match.string[:match.start()]):
        noun = noun.split(" ", 1)[1]  # `has no a name` -> `has no name`
    return noun


def _article(noun: str) -> str:
    return ("an " if _VOWEL.match(noun) else "a ") + noun


def _tidy(text: str) -> str:
    """Doubled spaces and punctuation, empty parentheses and dangling joins left by the omissions."""
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"\s+([,;:)\]])", r"\1", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"([,;:])(?=\s*[,;:])", "", text)
    text = re.sub(r"\s+\b(?:and|or|vs)\s*(?=[,;:)]|$)", "", text)
    text = re.sub(r"\s*[,;:]\s*$", "", text.rstrip())
    text = re.sub(r" {2,}", " ", text)
    return text.strip()
