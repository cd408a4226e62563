"""YAML loading that remembers line numbers and refuses duplicate keys.

PyYAML is imported when a file is parsed: a diagnosis reads the knowledge base from its cache
and never needs it (see tests/speed/test_imports.py)."""
from __future__ import annotations

from functools import lru_cache


class LineDict(dict):
    """A mapping that knows the line of each key (1-based) and of itself."""

    line: int = 0
    key_lines: dict


class LineList(list):
    line: int = 0
    item_lines: list


class DuplicateKey(Exception):
    def __init__(self, key: str, line: int) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key
        self.line = line


def _construct_mapping(loader, node, deep=False):
    mapping = LineDict()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise DuplicateKey(str(key), key_node.start_mark.line + 1)
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


def _construct_sequence(loader, node, deep=False):
    items = LineList(loader.construct_object(child, deep=True) for child in node.value)
    items.line = node.start_mark.line + 1
    items.item_lines = [child.start_mark.line + 1 for child in node.value]
    return items


@lru_cache(maxsize=1)
def _line_loader():
    import yaml

    # the C loader is several times faster; fall back when libyaml is absent
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("LineLoader", (base,), {})
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    return loader


def load_file(path, label: str):
    """(data, problems) of one YAML file: problems (with file:line) when it cannot be read or
    parsed, or has a duplicate key."""
    import yaml

    from ..errors import Problem

    try:
        return load_with_lines(path.read_text(encoding="utf-8")), []
    except DuplicateKey as exc:
        return None, [Problem(label, exc.line, str(exc))]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, [Problem(label, mark.line + 1 if mark else None, f"invalid YAML: {exc}")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(label, None, f"cannot read: {exc}")]


def load_with_lines(text: str):
    """Parse YAML text; mappings are LineDict, sequences LineList. Raises yaml.YAMLError or DuplicateKey."""
    import yaml

    return yaml.load(text, Loader=_line_loader())


def line_of(container, key) -> int | None:
    """The line of `key` in a LineDict (or item index in a LineList), else the container's line."""
    if isinstance(container, LineDict):
        return container.key_lines.get(key, container.line)
    if isinstance(container, LineList) and isinstance(key, int) and key < len(container.item_lines):
        return container.item_lines[key]
    return getattr(container, "line", None)
