"""The configuration file: `firstfault.toml`, or `[tool.firstfault]` in `pyproject.toml`.

Found from the current folder upward: the first folder holding a `firstfault.toml` or a
`pyproject.toml` is the project's, and its file is the configuration (`firstfault.toml` when it
has both; a `pyproject.toml` without `[tool.firstfault]` means no configuration). Options given on
the command line win over the file. Every key (docs/configuration.md):

    format = "markdown"                     # default --format of the commands that offer it
    color = "never"                         # default --color: auto, always, never
    mask-hosts = true                       # default of --mask-hosts (diagnose, watch, run)
    save = true                             # default of --save: keep diagnoses in the history (diagnose, watch, run)
    signature-folders = ["ops/firstfault"]  # folders of your own entries, added to the built-in ones

An unknown key, or a value of the wrong kind, is an error naming the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError

FILE_NAME = "firstfault.toml"
PYPROJECT = "pyproject.toml"
TABLE = "tool.firstfault"
FORMATS = ("terminal", "json", "markdown")
COLORS = ("auto", "always", "never")


@dataclass(frozen=True)
class Config:
    path: Path | None = None  # the file read, None when there is none
    format: str | None = None
    color: str | None = None
    mask_hosts: bool | None = None
    signature_folders: tuple[Path, ...] = field(default=())
    save: bool | None = None


def _checked_format(value, where: str) -> str:
    if value not in FORMATS:
        raise UsageError(f"{where}: format must be one of {', '.join(FORMATS)}, not {value!r}", "e.g. format = \"markdown\"")
    return value


def _checked_color(value, where: str) -> str:
    if value not in COLORS:
        raise UsageError(f"{where}: color must be one of {', '.join(COLORS)}, not {value!r}", "e.g. color = \"never\"")
    return value


def _checked_bool(value, where: str, key: str = "mask-hosts") -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{where}: {key} must be true or false, not {value!r}", f"e.g. {key} = true")
    return value


def _checked_folders(value, where: str) -> list:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise UsageError(f"{where}: signature-folders must be a list of folder paths", 'e.g. signature-folders = ["ops/firstfault"]')
    return value


KEYS = {"format": _checked_format, "color": _checked_color, "mask-hosts": _checked_bool,
        "signature-folders": _checked_folders, "save": lambda value, where: _checked_bool(value, where, "save")}


def find_config_file(start: Path | None = None) -> tuple[Path, bool] | None:
    """(the file, whether it is a pyproject.toml), or None when the project has none."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        own = candidate / FILE_NAME
        if own.is_file():
            return own, False
        pyproject = candidate / PYPROJECT
        if pyproject.is_file():
            return pyproject, True
    return None


def load_config(start: Path | None = None) -> Config:
    found = find_config_file(start)
    if found is None:
        return Config()
    path, is_pyproject = found
    text = _read(path)
    data = _parse(path, text)
    if is_pyproject:
        table = (data.get("tool") or {}).get("firstfault")
        if table is None:
            return Config()
        header = _table_line(text)
    else:
        table, header = data, 0
    if not isinstance(table, dict):
        raise UsageError(f"{path}:{header or 1}: [{TABLE}] must be a table of settings", "see docs/configuration.md")
    values = {}
    for key, value in table.items():
        where = f"{path}:{_key_line(text, key, header)}"
        if key not in KEYS:
            raise UsageError(f"{where}: unknown setting {key!r}", f"settings: {', '.join(KEYS)} (docs/configuration.md)")
        values[key] = KEYS[key](value, where)
    folders = tuple((path.parent / item).resolve() for item in values.get("signature-folders", ()))
    for folder, item in zip(folders, values.get("signature-folders", ())):
        if not folder.is_dir():
            line = _key_line(text, "signature-folders", header)
            raise UsageError(f"{path}:{line}: signature folder {item!r} is not a folder ({folder})",
                             "paths are relative to the configuration file")
    return Config(path, values.get("format"), values.get("color"), values.get("mask-hosts"), folders, values.get("save"))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the configuration: {exc}", "fix or remove the file") from None


def _parse(path: Path, text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise UsageError(f"{path}:{line.group(1) if line else 1}: not valid TOML: {exc}", "see docs/configuration.md") from None


def _table_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"\s*\[\s*tool\s*\.\s*firstfault\s*\]", line):
            return number
    return 0


def _key_line(text: str, key: str, after: int) -> int:
    """The line of `key = ...` in the firstfault table (the first one after its header)."""
    pattern = re.compile(rf"""\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    for number, line in enumerate(text.splitlines(), start=1):
        if number > after and pattern.match(line):
            return number
    return after or 1
