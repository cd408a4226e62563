"""The secret catalogue (detectors.yaml): loaded, validated with file:line, compiled lazily.

    masker = load_masker()          # served from the cache between runs; no YAML on a warm run
    masker.mask(text)
    problems = check_catalogue()    # every problem at once; every example and near-miss run

Validation runs in layers, as for the knowledge base: YAML, then the shape of each detector,
then what its pattern may contain (named group `secret`, bounded quantifiers only, so that no
pattern can take more than linear time), then its examples through the whole masker.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import FirstfaultError, Problem
from .rules import RULES, LazyPattern, SecretNames, is_placeholder

CATALOGUE = Path(__file__).parent / "detectors.yaml"
KINDS = ("token", "generic", "pii")
MARKS = ("«", "»")
_ID = LazyPattern(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_REPLACEMENT = LazyPattern(r"<[a-z0-9-]{2,40}>")
_REQUIRED = ("id", "title", "kind", "examples", "near_misses")
_OPTIONAL = ("reference", "literals", "pattern", "rule", "replacement")
_NAME_LISTS = ("strong", "weak", "glued", "not_secret", "query")


class CatalogueError(FirstfaultError):
    """The secret catalogue is invalid: masking refuses to run with part of it."""


@dataclass(frozen=True)
class DetectorSpec:
    """One detector as written in the catalogue."""

    id: str
    title: str
    kind: str
    examples: tuple[str, ...]
    near_misses: tuple[str, ...]
    reference: str = ""
    literals: tuple[str, ...] | None = None  # None: the rule's own
    pattern: str = ""
    rule: str = ""
    replacement: str = "<masked>"
    line: int = 0


@dataclass(frozen=True)
class Catalogue:
    names: SecretNames
    detectors: tuple[DetectorSpec, ...]
    path: str = ""


class Detector:
    """A detector ready to run; its regex is compiled on first use (most never fire)."""

    def __init__(self, spec: DetectorSpec, names: SecretNames) -> None:
        self.spec = spec
        self.rule = RULES[spec.rule](names) if spec.rule else None
        literals = spec.literals if spec.literals is not None else getattr(self.rule, "literals", ())
        self.literals = tuple(literals)
        self._regex: re.Pattern | None = None

    def applies_to(self, lowered: str) -> bool:
        return not self.literals or any(literal in lowered for literal in self.literals)

    def apply(self, text: str) -> str:
        if self.rule is not None:
            return self.rule.apply(text)
        if self._regex is None:
            self._regex = re.compile(self.spec.pattern)
        return self._regex.sub(self._replace, text)

    def _replace(self, match: re.Match) -> str:
        group = "secret" if "secret" in match.re.groupindex else 0
        start, end = match.span(group)
        if start < 0 or is_placeholder(match.group(group)):
            return match.group(0)
        whole = match.group(0)
        return whole[:start - match.start()] + self.spec.replacement + whole[end - match.start():]


class Masker:
    """Every detector of a catalogue, in its order."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.detectors = [Detector(spec, catalogue.names) for spec in catalogue.detectors]
        # one test per distinct literal per text (most texts hold none), not one per detector
        self._always = frozenset(index for index, detector in enumerate(self.detectors) if not detector.literals)
        by_literal: dict[str, set[int]] = {}
        for index, detector in enumerate(self.detectors):
            for literal in detector.literals:
                by_literal.setdefault(literal, set()).add(index)
        self._by_literal = tuple((literal, frozenset(indices)) for literal, indices in by_literal.items())

    def mask(self, text: str) -> str:
        if not text:
            return text
        lowered = text.lower()
        active = self._always.union(*[indices for literal, indices in self._by_literal if literal in lowered])
        for index in sorted(active):
            text = self.detectors[index].apply(text)
        return text


@lru_cache(maxsize=1)
def load_masker() -> Masker:
    """The masker of the shipped catalogue, parsed once per process and cached between runs."""
    from ..kb.cache import cached_value

    catalogue, problems = cached_value("mask", [CATALOGUE, Path(__file__), Path(__file__).with_name("rules.py")],
                                       lambda: parse_catalogue(CATALOGUE))
    if problems or catalogue is None:
        raise CatalogueError(f"the secret catalogue is invalid ({len(problems)} problem(s), first: {problems[0] if problems else '?'})",
                             "run `firstfault kb check`; reinstall firstfault if you did not edit it")
    return Masker(catalogue)


# -- parsing and validation --------------------------------------------------------------------

def parse_catalogue(path: Path = CATALOGUE) -> tuple[Catalogue | None, list[Problem]]:
    """The catalogue and every problem in its shape (examples are run by check_catalogue)."""
    from ..kb.yaml_lines import LineDict, line_of, load_file

    label = _label(path)
    data, problems = load_file(path, label)
    if problems:
        return None, problems
    if not isinstance(data, LineDict) or set(data) != {"names", "detectors"}:
        return None, [Problem(label, 1, "the catalogue is a mapping with exactly `names` and `detectors`")]
    problems: list[Problem] = []
    names = _names(data["names"], label, problems)
    detectors, seen = [], set()
    items = data["detectors"] if isinstance(data["detectors"], list) else []
    if not items:
        problems.append(Problem(label, line_of(data, "detectors"), "`detectors` must be a non-empty list"))
    for index, item in enumerate(items):
        where = line_of(items, index)
        spec = _detector(item, where, label, problems)
        if spec is None:
            continue
        if spec.id in seen:
            problems.append(Problem(label, where, f"duplicate detector id {spec.id!r}"))
        seen.add(spec.id)
        detectors.append(spec)
    if names is None or problems:
        return None, problems
    return Catalogue(names, tuple(detectors), label), []


def _label(path: Path) -> str:
    try:
        return str(path.relative_to(Path(__file__).parents[3]))
    except ValueError:
        return str(path)


def _names(data, label: str, problems: list[Problem]) -> SecretNames | None:
    from ..kb.yaml_lines import line_of

    if not isinstance(data, dict) or set(data) != set(_NAME_LISTS):
        problems.append(Problem(label, getattr(data, "line", None), f"`names` needs exactly {', '.join(_NAME_LISTS)}"))
        return None
    for key in _NAME_LISTS:
        value = data[key]
        if not isinstance(value, list) or not value or not all(isinstance(name, str) and name for name in value):
            problems.append(Problem(label, line_of(data, key), f"names.{key} must be a non-empty list of text"))
            return None
        if key != "not_secret" and any(name != name.lower() or not re.fullmatch(r"[a-z0-9_-]+", name) for name in value):
            problems.append(Problem(label, line_of(data, key), f"names.{key}: names are lower case letters, digits and '_'"))
    for pattern in data["not_secret"]:
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.append(Problem(label, line_of(data, "not_secret"), f"names.not_secret: {pattern!r} is not a regex ({exc})"))
    if problems:
        return None
    return SecretNames(*(tuple(data[key]) for key in _NAME_LISTS))


def _detector(item, where: int | None, label: str, problems: list[Problem]) -> DetectorSpec | None:
    from ..kb.yaml_lines import line_of

    if not isinstance(item, dict):
        problems.append(Problem(label, where, "a detector is a mapping"))
        return None
    start = len(problems)
    name = item.get("id", "?")

    def problem(key: str, message: str) -> None:
        problems.append(Problem(label, line_of(item, key) if key in item else where, f"detector {name!r}: {message}"))

    unknown = sorted(set(item) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        problem(unknown[0], f"unknown key(s) {', '.join(map(str, unknown))}")
    for key in _REQUIRED:
        if key not in item:
            problem(key, f"lacks {key}")
    if not isinstance(item.get("id"), str) or not _ID.fullmatch(item.get("id", "")):
        problem("id", "id must be kebab-case")
    if item.get("kind") not in KINDS:
        problem("kind", f"kind must be one of {', '.join(KINDS)}")
    if item.get("kind") == "token" and not str(item.get("reference", "")).startswith("https://"):
        problem("reference", "a token format needs a reference (https://...) to where it is documented")
    if bool(item.get("pattern")) == bool(item.get("rule")):
        problem("pattern", "give exactly one of pattern and rule")
    if item.get("rule") and item["rule"] not in RULES:
        problem("rule", f"unknown rule {item['rule']!r} (one of {', '.join(RULES)})")
    if item.get("pattern"):
        for message in _pattern_problems(item["pattern"]):
            problem("pattern", message)
    if "replacement" in item and not _REPLACEMENT.fullmatch(str(item["replacement"])):
        problem("replacement", "replacement must look like <kind-of-secret>")
    literals = item.get("literals")
    if item.get("pattern") and literals is None:
        problem("literals", "a pattern needs literals (lower-case words one of which a line must hold), or [] for none")
    if literals is not None and (not isinstance(literals, list) or any(not isinstance(word, str) or word != word.lower() or not word for word in literals)):
        problem("literals", "literals must be a list of lower-case text")
    for key in ("examples", "near_misses"):
        value = item.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(line, str) for line in value):
            problem(key, f"{key} must be a non-empty list of lines")
    for example in item.get("examples") or ():
        if isinstance(example, str) and not _marked(example):
            problem("examples", f"every example marks its secret as «secret»: {example!r}")
    for near_miss in item.get("near_misses") or ():
        if isinstance(near_miss, str) and any(mark in near_miss for mark in MARKS):
            problem("near_misses", f"a near-miss marks no secret: {near_miss!r}")
    if len(problems) > start:
        return None
    return DetectorSpec(
        id=item["id"], title=item["title"], kind=item["kind"], examples=tuple(item["examples"]),
        near_misses=tuple(item["near_misses"]), reference=item.get("reference", ""),
        literals=tuple(literals) if literals is not None else None, pattern=item.get("pattern", ""),
        rule=item.get("rule", ""), replacement=item.get("replacement", "<masked>"), line=where or 0,
    )


def _pattern_problems(pattern: str) -> list[str]:
    """A pattern must compile, and every quantifier in it must be bounded: with `{0,N}` instead of
    `*` or `+` no line can make a detector backtrack beyond a constant per position."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return [f"pattern does not compile: {exc}"]
    problems = []
    if compiled.groupindex and set(compiled.groupindex) != {"secret"}:
        problems.append("the only named group a pattern may have is `secret`")
    if _unbounded(pattern):
        problems.append("pattern has an unbounded quantifier (* + {n,}): bound it, e.g. {1,256}")
    return problems


def _unbounded(pattern: str) -> bool:
    from re import _constants as constants, _parser as parser  # the parser re itself uses

    def walk(items) -> bool:
        for op, value in items:
            if op in (constants.MAX_REPEAT, constants.MIN_REPEAT, getattr(constants, "POSSESSIVE_REPEAT", None)):
                low, high, inner = value
                if high == constants.MAXREPEAT or walk(inner):
                    return True
            elif op in (constants.SUBPATTERN,):
                if walk(value[-1]):
                    return True
            elif op in (constants.BRANCH,):
                if any(walk(branch) for branch in value[1]):
                    return True
            elif op in (constants.ASSERT, constants.ASSERT_NOT):
                if walk(value[1]):
                    return True
        return False

    return walk(parser.parse(pattern))


def _marked(example: str) -> bool:
    depth = 0
    seen = False
    for char in example:
        if char == MARKS[0]:
            depth += 1
            seen = True
            if depth > 1:
                return False
        elif char == MARKS[1]:
            depth -= 1
            if depth < 0:
                return False
    return seen and depth == 0


def split_example(example: str) -> tuple[str, list[str], list[str]]:
    """(the line without marks, the parts outside the marks, the marked secrets)."""
    outside, secrets = [], []
    rest = example
    while MARKS[0] in rest:
        before, _, after = rest.partition(MARKS[0])
        secret, _, rest = after.partition(MARKS[1])
        outside.append(before)
        secrets.append(secret)
    outside.append(rest)
    return "".join(part for pair in zip(outside, secrets + [""]) for part in pair), outside, secrets


# -- running the examples ----------------------------------------------------------------------

def example_problems(masker: Masker) -> list[Problem]:
    """Each example through its detector (it must change the line) and through the whole masker
    (every marked secret replaced by a placeholder, everything else unchanged); each near-miss
    unchanged by the whole masker."""
    problems = []
    label = masker.catalogue.path
    for detector in masker.detectors:
        spec = detector.spec
        for example in spec.examples:
            line, outside, secrets = split_example(example)
            if not detector.applies_to(line.lower()):
                problems.append(Problem(label, spec.line, f"detector {spec.id!r}: no literal of it in the example {example!r}"))
            elif detector.apply(line) == line:
                problems.append(Problem(label, spec.line, f"detector {spec.id!r}: does not change the example {example!r}"))
            masked = masker.mask(line)
            expected = "(?:<[a-z0-9-]{2,40}>)+".join(re.escape(part) for part in outside)
            if not re.fullmatch(expected, masked, re.DOTALL):
                problems.append(Problem(label, spec.line, f"detector {spec.id!r}: example masked as {masked!r}, expected each «secret» replaced and the rest kept"))
        for near_miss in spec.near_misses:
            masked = masker.mask(near_miss)
            if masked != near_miss:
                problems.append(Problem(label, spec.line, f"detector {spec.id!r}: near-miss changed to {masked!r}"))
    return problems


def check_catalogue(path: Path = CATALOGUE) -> tuple[Catalogue | None, list[Problem]]:
    """Validate the catalogue and run every example; all problems at once."""
    catalogue, problems = parse_catalogue(path)
    if catalogue is None:
        return None, problems
    return catalogue, example_problems(Masker(catalogue))
