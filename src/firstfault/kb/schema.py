"""The entry schema, checked in layers: shape of each field, then cross-entry rules.

Every problem is collected (never the first only) and carries file:line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..errors import Problem
from .yaml_lines import LineDict, line_of

CATEGORIES = ("network", "memory", "device", "numerics", "framework", "data", "environment", "serving")
SEVERITIES = ("critical", "high", "medium", "low")
STATUSES = ("stable", "experimental", "deprecated")
ROLES = ("root", "symptom", "collateral")
SYSTEMS = (
    "pytorch", "nccl", "gloo", "cuda", "hf-transformers", "hf-accelerate", "deepspeed",
    "megatron-lm", "vllm", "slurm", "kubernetes", "ray", "linux", "docker", "triton",
)
FIX_STACKS = (
    "general", "pytorch", "hf-trainer", "hf-accelerate", "deepspeed", "megatron-lm", "vllm",
    "nccl", "slurm", "kubernetes", "docker", "ray", "lightning",
)
ACTIONS = ("restart", "exclude-host-and-restart", "fix-and-rerun")
DEFAULT_ACTION = "fix-and-rerun"
ID_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
URL_PATTERN = re.compile(r"https?://[^\s/]+\.[^\s]+")


@dataclass(frozen=True)
class Field:
    """One top-level key: whether it is required and how its value is checked."""

    required: bool
    check: Callable[[object], str | None]


def _text(value) -> str | None:
    return None if isinstance(value, str) and value.strip() else "must be non-empty text"


def _one_of(choices) -> Callable[[object], str | None]:
    def check(value) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"
    return check


def _list_of_text(value) -> str | None:
    if not isinstance(value, list):
        return "must be a list"
    if any(not isinstance(item, str) or not item.strip() for item in value):
        return "every item must be non-empty text"
    return None


def _non_empty(check: Callable) -> Callable:
    def wrapped(value) -> str | None:
        if isinstance(value, list) and not value:
            return "must not be empty"
        return check(value)
    return wrapped


def _list_of_maps(required: tuple[str, ...], optional: tuple[str, ...] = ()) -> Callable:
    allowed = set(required) | set(optional)

    def check(value) -> str | None:
        if not isinstance(value, list):
            return "must be a list"
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                return f"item {index + 1} must be a mapping with {', '.join(required)}"
            missing = [key for key in required if not item.get(key)]
            if missing:
                return f"item {index + 1} lacks {', '.join(missing)}"
            unknown = sorted(set(item) - allowed)
            if unknown:
                return f"item {index + 1} has unknown key(s) {', '.join(map(str, unknown))}"
        return None
    return check


def _systems(value) -> str | None:
    if not isinstance(value, list) or not value:
        return "must be a non-empty list"
    unknown = [item for item in value if item not in SYSTEMS]
    return f"unknown system(s) {unknown}; known: {', '.join(SYSTEMS)}" if unknown else None


def _fix(value) -> str | None:
    shape = _list_of_maps(("title", "stack", "why"), ("steps", "command", "env", "config", "code", "when"))(value)
    if shape:
        return shape
    for index, item in enumerate(value):
        if item["stack"] not in FIX_STACKS:
            return f"item {index + 1}: stack must be one of {', '.join(FIX_STACKS)}"
        if "when" in item and _regex(item["when"]):
            return f"item {index + 1}: when (the evidence this fix fits) {_regex(item['when'])}"
        if "env" in item and not isinstance(item["env"], dict):
            return f"item {index + 1}: env must map variable names to values"
        if "steps" in item and _list_of_text(item["steps"]):
            return f"item {index + 1}: steps must be a list of text"
    return None


def _regex(value) -> str | None:
    if not isinstance(value, str) or not value:
        return "must be a regular expression"
    try:
        re.compile(value)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    return None


def _references(value) -> str | None:
    shape = _list_of_maps(("title", "url"))(value)
    if shape:
        return shape
    for index, item in enumerate(value):
        if not URL_PATTERN.fullmatch(str(item["url"])):
            return f"item {index + 1}: url {item['url']!r} is not an http(s) URL"
    return None


def _verified(value) -> str | None:
    if not isinstance(value, dict) or value.get("by") != "lab" or not value.get("scenario"):
        return "must be {by: lab, scenario: NAME}"
    return None


def _signatures(value) -> str | None:
    return None if isinstance(value, list) else "must be a list (may be empty)"


FIELDS: dict[str, Field] = {
    "id": Field(True, _text),
    "title": Field(True, _text),
    "category": Field(True, _one_of(CATEGORIES)),
    "severity": Field(True, _one_of(SEVERITIES)),
    "status": Field(True, _one_of(STATUSES)),
    "systems": Field(True, _systems),
    "tags": Field(True, _non_empty(_list_of_text)),
    "related": Field(False, _list_of_text),
    "core_class": Field(False, _text),
    "explains": Field(False, _list_of_text),  # failures this one causes on other ranks or later
    "action": Field(False, _one_of(ACTIONS)),  # what to do with the job; default fix-and-rerun
    "redirect_from": Field(False, _list_of_text),
    "summary": Field(True, _text),
    "mechanism": Field(True, _text),
    "observe": Field(True, _non_empty(_list_of_text)),
    "symptoms": Field(True, _non_empty(_list_of_maps(("text", "meaning")))),
    "confirm": Field(True, _non_empty(_list_of_maps(("check",), ("command",)))),
    "fix": Field(True, _non_empty(_fix)),
    "verify": Field(True, _non_empty(_list_of_maps(("check",), ("command",)))),
    "prevention": Field(True, _non_empty(_list_of_text)),
    "faq": Field(False, _list_of_maps(("q", "a"))),
    "references": Field(True, _non_empty(_references)),
    "verified": Field(False, _verified),
    "diagnostics": Field(False, _list_of_maps(("tool", "use"))),
    "signatures": Field(True, _signatures),
}

SIGNATURE_KEYS = {"name", "role", "weight", "pattern", "message", "examples", "near_misses", "core_class", "condition",
                  "prefilter", "raised_in"}
FORBIDDEN_REGEX = (
    (re.compile(r"\(\?[=!<]"), "lookaround is not allowed"),
    (re.compile(r"\\[1-9]"), "backreferences are not allowed"),
    (re.compile(r"\(\?P="), "named backreferences are not allowed"),
)


def check_fields(path: str, data: LineDict) -> list[Problem]:
    """Layer 1: every key known, every required key present, each value of the right shape."""
    problems = []
    for key in data:
        if key not in FIELDS:
            problems.append(Problem(path, line_of(data, key), f"unknown key {key!r}"))
    for key, spec in FIELDS.items():
        if key not in data:
            if spec.required:
                problems.append(Problem(path, data.line or 1, f"missing required key {key!r}"))
            continue
        message = spec.check(data[key])
        if message:
            problems.append(Problem(path, line_of(data, key), f"{key}: {message}"))
    return problems


def check_signature(path: str, signature, index: int, container) -> list[Problem]:
    """Layer 2: one signature's shape and regex; examples are run by the checker."""
    line = line_of(container, index)
    if not isinstance(signature, dict):
        return [Problem(path, line, f"signature {index + 1} must be a mapping")]
    line = getattr(signature, "line", line)
    problems = []
    unknown = sorted(set(signature) - SIGNATURE_KEYS)
    if unknown:
        problems.append(Problem(path, line, f"signature {index + 1}: unknown key(s) {', '.join(unknown)}"))
    name = signature.get("name")
    label = f"signature {name!r}" if name else f"signature {index + 1}"
    if not isinstance(name, str) or not ID_PATTERN.fullmatch(name or ""):
        problems.append(Problem(path, line, f"{label}: name must be kebab-case"))
    if signature.get("role") not in ROLES:
        problems.append(Problem(path, line, f"{label}: role must be one of {', '.join(ROLES)}"))
    weight = signature.get("weight")
    if not isinstance(weight, (int, float)) or not 0 < weight <= 1:
        problems.append(Problem(path, line, f"{label}: weight must be a number in (0, 1]"))
    problems.extend(_check_pattern(path, line, label, signature.get("pattern")))
    if "prefilter" in signature:
        problems.extend(_check_pattern(path, line, f"{label} prefilter", signature.get("prefilter")))
    if "condition" in signature:
        problems.extend(_check_condition(path, line, label, signature.get("condition"), signature.get("pattern")))
    problems.extend(_check_lines(path, line, label, signature))
    if "raised_in" in signature:
        problems.extend(_check_raised_in(path, line, label, signature.get("raised_in")))
    return problems


def _check_lines(path: str, line: int, label: str, container) -> list[Problem]:
    """`examples` and `near_misses`: each a non-empty list of single log lines."""
    problems = []
    for key in ("examples", "near_misses"):
        value = container.get(key)
        if not isinstance(value, list) or not value or _list_of_text(value):
            problems.append(Problem(path, line, f"{label}: {key} must be a non-empty list of lines"))
        elif any("\n" in item.rstrip("\n") for item in value):
            problems.append(Problem(path, line, f"{label}: each of {key} must be one log line (no line breaks)"))
    return problems


def _check_raised_in(path: str, line: int, label: str, raised_in) -> list[Problem]:
    """`raised_in: {frames: [regex, ...], examples: [frame lines], near_misses: [frame lines]}`."""
    if not isinstance(raised_in, dict) or set(raised_in) != {"frames", "examples", "near_misses"}:
        return [Problem(path, line, f"{label}: raised_in must be a mapping of frames, examples and near_misses")]
    frames = raised_in.get("frames")
    if not isinstance(frames, list) or not frames:
        return [Problem(path, line, f"{label}: raised_in frames must be a non-empty list of regexes")]
    problems = []
    for frame in frames:
        problems.extend(_check_pattern(path, line, f"{label} raised_in frame", frame))
    return problems + _check_lines(path, line, f"{label} raised_in", raised_in)


def _check_condition(path: str, line: int, label: str, condition, pattern) -> list[Problem]:
    from ..match.conditions import ConditionError, names

    if not isinstance(condition, str) or not condition.strip():
        return [Problem(path, line, f"{label}: condition must be non-empty text")]
    try:
        wanted = names(condition)
    except ConditionError as exc:
        return [Problem(path, line, f"{label}: condition: {exc}")]
    try:
        groups = set(re.compile(pattern).groupindex) if isinstance(pattern, str) else set()
    except re.error:
        return []  # reported by the pattern check
    unknown = sorted(wanted - groups)
    return [Problem(path, line, f"{label}: condition reads {', '.join(unknown)}, which the pattern does not capture")] if unknown else []


def _check_pattern(path: str, line: int, label: str, pattern) -> list[Problem]:
    if not isinstance(pattern, str) or not pattern:
        return [Problem(path, line, f"{label}: pattern must be a non-empty regex")]
    problems = [Problem(path, line, f"{label}: {why}") for rx, why in FORBIDDEN_REGEX if rx.search(pattern)]
    stripped = pattern[4:] if pattern.startswith("(?i)") else pattern
    if stripped.startswith("^") or stripped.endswith("$") or stripped.startswith(".*"):
        problems.append(Problem(path, line, f"{label}: no ^/$ anchors or leading .* (lines carry prefixes)"))
    try:
        re.compile(pattern)
    except re.error as exc:
        problems.append(Problem(path, line, f"{label}: invalid regex: {exc}"))
    return problems
