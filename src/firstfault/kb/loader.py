"""Load the entries from disk, validate them, and hand out a KnowledgeBase."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ..errors import KnowledgeBaseError, Problem, UnknownEntryError
from ..model import Entry, Signature
from .classes import check_class_list
# YAML (and the schema checks that use it) are imported where entries are parsed: a run served
# from the cache (kb/cache.py) never needs them.

ENTRIES_DIR = Path(__file__).parent / "entries"


class KnowledgeBase:
    """All entries, by id, with redirects for renamed ids."""

    def __init__(self, entries: list[Entry], problems: list[Problem] = ()) -> None:
        self.problems = list(problems)
        self.entries = sorted(entries, key=lambda entry: (entry.category, entry.id))
        self._by_id = {entry.id: entry for entry in self.entries}
        self._redirects = {
            old: entry.id for entry in self.entries for old in entry.get("redirect_from") or ()
        }

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self._by_id or entry_id in self._redirects

    def get(self, entry_id: str) -> Entry:
        resolved = self._redirects.get(entry_id, entry_id)
        try:
            return self._by_id[resolved]
        except KeyError:
            raise UnknownEntryError(
                f"no knowledge-base entry {entry_id!r}",
                "`firstfault list` shows every id; `firstfault search TEXT` finds one by message",
            ) from None

    def categories(self) -> list[str]:
        return sorted({entry.category for entry in self.entries})

    def in_category(self, category: str) -> list[Entry]:
        return [entry for entry in self.entries if entry.category == category]

    @property
    def signatures(self) -> list[Signature]:
        return [signature for entry in self.entries for signature in entry.signatures]


def entry_files(root: Path = ENTRIES_DIR) -> list[Path]:
    return sorted(root.glob("*/*.yaml"))


def _parse(path: Path, label: str):
    from .yaml_lines import LineDict, load_file

    data, problems = load_file(path, label)
    if problems:
        return None, problems
    if not isinstance(data, LineDict):
        return None, [Problem(label, 1, "an entry must be a YAML mapping")]
    return data, []


def _build_entry(label: str, data: LineDict) -> Entry:
    signatures = tuple(
        Signature(
            entry_id=data["id"],
            name=item["name"],
            role=item["role"],
            weight=float(item["weight"]),
            pattern=item["pattern"],
            message=item.get("message", ""),
            examples=tuple(item.get("examples") or ()),
            near_misses=tuple(item.get("near_misses") or ()),
            core_class=item.get("core_class") or data.get("core_class") or "",  # a signature may narrow it
            condition=item.get("condition") or "",
            prefilter=item.get("prefilter") or "",
            raised_in=tuple((item.get("raised_in") or {}).get("frames") or ()),
        )
        for item in data.get("signatures") or ()
    )
    return Entry(
        id=data["id"], title=data["title"], category=data["category"], severity=data["severity"],
        status=data["status"], signatures=signatures, data=dict(data), path=label,
    )


def _check_file(path: Path, root: Path) -> tuple[Entry | None, list[Problem]]:
    from .schema import check_fields, check_signature
    from .yaml_lines import line_of

    label = _label(path, root)
    data, problems = _parse(path, label)
    if data is None:
        return None, problems
    problems = check_fields(label, data)
    if data.get("id") != path.stem:
        problems.append(Problem(label, line_of(data, "id"), f"id {data.get('id')!r} must equal the file name {path.stem!r}"))
    if data.get("category") != path.parent.name:
        problems.append(Problem(label, line_of(data, "category"), f"category {data.get('category')!r} must equal the folder {path.parent.name!r}"))
    signatures = data.get("signatures") if isinstance(data.get("signatures"), list) else []
    names = set()
    for index, signature in enumerate(signatures):
        problems.extend(check_signature(label, signature, index, signatures))
        name = signature.get("name") if isinstance(signature, dict) else None
        if name in names:
            problems.append(Problem(label, line_of(signatures, index), f"duplicate signature name {name!r}"))
        names.add(name)
    if problems:
        return None, problems
    return _build_entry(label, data), []


def _label(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.parent.parent.parent.parent))
    except ValueError:
        return str(path)


def _check_examples(entry: Entry) -> list[Problem]:
    from ..match.compiler import prefilter_problems
    from ..match.conditions import holds

    def matches(regex: re.Pattern, condition: str, line: str) -> bool:
        found = regex.search(line)
        return bool(found) and (not condition or holds(condition, found.groupdict()))

    problems = []
    for signature in entry.signatures:
        regex = re.compile(signature.pattern)
        for example in signature.examples:
            if not matches(regex, signature.condition, example):
                problems.append(Problem(entry.path, None, f"signature {signature.name!r}: example does not match: {example!r}"))
        problems.extend(Problem(entry.path, None, f"signature {signature.name!r}: {why}") for why in prefilter_problems(signature))
        for near_miss in signature.near_misses:
            if matches(regex, signature.condition, near_miss):
                problems.append(Problem(entry.path, None, f"signature {signature.name!r}: near-miss matches: {near_miss!r}"))
        problems.extend(Problem(entry.path, None, f"signature {signature.name!r}: {why}") for why in _raised_in_problems(entry, signature))
    return problems


def _raised_in_problems(entry: Entry, signature) -> list[str]:
    """Each frame pattern matches one of its example frames; none matches a near-miss frame."""
    if not signature.raised_in:
        return []
    raised_in = next(item for item in entry.get("signatures") if item.get("name") == signature.name)["raised_in"]
    problems = []
    for frames in signature.raised_in:
        if not any(re.search(frames, example) for example in raised_in["examples"]):
            problems.append(f"raised_in frame pattern {frames!r} matches none of its examples")
        problems.extend(f"raised_in near-miss frame matches {frames!r}: {near_miss!r}"
                        for near_miss in raised_in["near_misses"] if re.search(frames, near_miss))
    return problems


def _check_cross_entry(entries: list[Entry]) -> list[Problem]:
    from .yaml_lines import line_of

    problems = []
    ids = {entry.id for entry in entries}
    by_id = {}
    seen_old: dict[str, str] = {}
    for entry in entries:
        if entry.id in by_id:
            problems.append(Problem(entry.path, line_of(entry.data, "id"), f"id {entry.id!r} is also the id of {by_id[entry.id].path}"))
        by_id.setdefault(entry.id, entry)
    for entry in entries:
        problems.extend(_check_core_class(entry, by_id))
        for key in ("related", "explains"):
            for other in entry.get(key) or ():
                if other not in ids:
                    problems.append(Problem(entry.path, line_of(entry.data, key), f"{key} id {other!r} has no entry"))
                elif other == entry.id:
                    problems.append(Problem(entry.path, line_of(entry.data, key), f"{key} names the entry itself"))
                elif key == "explains" and entry.id in (by_id[other].get("explains") or ()):
                    problems.append(Problem(entry.path, line_of(entry.data, key), f"{entry.id!r} and {other!r} explain each other: one must be the cause"))
        for old in entry.get("redirect_from") or ():
            if old in ids or old in seen_old:
                problems.append(Problem(entry.path, line_of(entry.data, "redirect_from"), f"redirect {old!r} is already an id or redirect"))
            seen_old[old] = entry.id
    return problems


def _check_core_class(entry: Entry, by_id: dict) -> list[Problem]:
    from .yaml_lines import line_of

    problems = []
    for signature in entry.signatures:
        if signature.core_class and signature.core_class != entry.get("core_class"):
            problems += _core_class_problems(entry, signature.core_class, by_id, f"signature {signature.name!r}: ")
    if entry.get("core_class"):
        problems += _core_class_problems(entry, entry.get("core_class"), by_id, "")
    return problems


def _core_class_problems(entry: Entry, core: str, by_id: dict, label: str) -> list[Problem]:
    from .yaml_lines import line_of

    line = line_of(entry.data, "core_class") if not label else None
    if core == entry.id:
        return [Problem(entry.path, line, f"{label}core_class names the entry itself: leave it out for a core class")]
    if core not in by_id:
        return [Problem(entry.path, line, f"{label}core_class {core!r} has no entry")]
    if by_id[core].get("core_class"):
        return [Problem(entry.path, line, f"{label}core_class {core!r} is not a core class (it names {by_id[core].get('core_class')!r})")]
    return []


def check_entries(root: Path = ENTRIES_DIR, known: tuple[Entry, ...] = ()) -> tuple[list[Entry], list[Problem]]:
    """Validate every entry under `root`; returns the good entries and all problems. `known`:
    entries already loaded (the built-in ones, for a folder of one's own) that ids, core classes
    and related ids of these may refer to, and must not repeat."""
    entries, problems = [], []
    files = entry_files(root)
    if not files:
        problems.append(Problem(str(root), None, "no entries found"))
    for path in files:
        entry, file_problems = _check_file(path, root)
        problems.extend(file_problems)
        if entry is not None:
            problems.extend(_check_examples(entry))
            entries.append(entry)
    known_paths = {entry.path for entry in known}
    problems.extend(problem for problem in _check_cross_entry(list(known) + entries) if problem.path not in known_paths)
    if not known:  # the built-in entries: the core classes are listed (a folder of one's own may add classes)
        problems.extend(check_class_list(entries))
    return entries, problems


@lru_cache(maxsize=4)
def load_knowledge_base(root: Path = ENTRIES_DIR, strict: bool = False, extra: tuple[Path, ...] = ()) -> KnowledgeBase:
    """The knowledge base. Strict: raise KnowledgeBaseError listing every problem. Otherwise the
    valid entries are used and `kb.problems` lists what was left out (`firstfault kb check`).
    `extra`: folders of one's own entries (the configuration's signature-folders), added."""
    from .cache import cached_check  # parsing and checking every entry is cached between runs

    entries, problems = cached_check(root, check_entries)
    for folder in extra:
        own, own_problems = check_entries(Path(folder), known=tuple(entries))
        entries, problems = entries + own, problems + own_problems
    if problems and strict:
        raise KnowledgeBaseError(problems)
    if not entries:
        raise KnowledgeBaseError(problems or [Problem(str(root), None, "no entries")])
    return KnowledgeBase(entries, problems)
