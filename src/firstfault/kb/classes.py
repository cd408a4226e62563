"""The project's list of core failure classes (classes.yaml) and its agreement with the entries."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..errors import Problem
from ..model import Entry

CLASSES_FILE = Path(__file__).with_name("classes.yaml")


@lru_cache(maxsize=1)
def core_classes() -> dict[str, str]:
    """class id -> category, in the order of the file."""
    import yaml

    data = yaml.safe_load(CLASSES_FILE.read_text(encoding="utf-8")) or {}
    return {class_id: category for category, members in data.items() for class_id in (members or {})}


def class_descriptions() -> dict[str, str]:
    import yaml

    data = yaml.safe_load(CLASSES_FILE.read_text(encoding="utf-8")) or {}
    return {class_id: text for members in data.values() for class_id, text in (members or {}).items()}


def check_class_list(entries: list[Entry]) -> list[Problem]:
    """Every listed class has a core entry of its category, and every core entry is listed."""
    listed = core_classes()
    by_id = {entry.id: entry for entry in entries}
    problems = []
    for class_id, category in listed.items():
        entry = by_id.get(class_id)
        if entry is None:
            problems.append(Problem(str(CLASSES_FILE), None, f"class {class_id!r} has no entry"))
        elif entry.get("core_class"):
            problems.append(Problem(entry.path, None, f"{class_id!r} is a core class (classes.yaml) but names core_class {entry.get('core_class')!r}"))
        elif entry.category != category:
            problems.append(Problem(entry.path, None, f"{class_id!r} is in category {entry.category!r}, classes.yaml files it under {category!r}"))
    for entry in entries:
        if not entry.get("core_class") and entry.id not in listed:
            problems.append(Problem(entry.path, None, f"{entry.id!r} names no core_class, so it is a core class: add it to classes.yaml or name the class it specialises"))
    return problems
