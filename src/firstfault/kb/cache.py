"""A cache of the validated knowledge base, so a run does not parse and check ~100 YAML files.

The cache file holds what `check_entries(root)` returned (entries and problems), pickled, under
the user cache dir (`$XDG_CACHE_HOME/firstfault/`, else `~/.cache/firstfault/`). Its name is a
hash of every entry file's path, size and modification time, of the firstfault version and of
the loader and schema sources: editing an entry, adding one, or upgrading firstfault makes a
new key, and the stale file is simply never read again. Any failure to read or write the cache
falls back to loading from the YAML files; `FIRSTFAULT_NO_CACHE=1` turns the cache off.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import stat
from pathlib import Path

DISABLE_VARIABLE = "FIRSTFAULT_NO_CACHE"
_FORMAT = "kb-1"


_VALIDATING_CODE = ("kb/loader.py", "kb/schema.py", "kb/yaml_lines.py", "model.py", "match/conditions.py")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "firstfault"


def fingerprint(root: Path) -> str:
    """A key that changes whenever any entry file (or the code that validates them) changes."""
    from .. import __version__

    digest = hashlib.sha256(f"{_FORMAT}|{__version__}|{root.resolve()}|".encode())
    for code in _VALIDATING_CODE:  # stat'ed, not imported: a warm cache needs no YAML parser
        info = os.stat(Path(__file__).parent.parent / code)
        digest.update(f"{code}:{info.st_size}:{info.st_mtime_ns}|".encode())
    for path in sorted(root.glob("*/*.yaml")):
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(root)}:{info.st_size}:{info.st_mtime_ns}|".encode())
    return digest.hexdigest()[:32]


def _trusted(path: Path) -> bool:
    """Only unpickle a file this user owns in a folder others cannot write to."""
    try:
        info, folder = path.stat(), path.parent.stat()
    except OSError:
        return False
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and (info.st_uid != uid or folder.st_uid != uid):
        return False
    return not folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def cached_check(root: Path, check):
    """`check(root)` -> (entries, problems), served from the cache when it is current."""
    if os.environ.get(DISABLE_VARIABLE):
        return check(root)
    try:
        path = cache_dir() / f"{fingerprint(root)}.kb.pickle"
    except OSError:
        return check(root)
    if _trusted(path):
        try:
            with open(path, "rb") as stream:
                entries, problems = pickle.load(stream)
            return entries, problems
        except Exception:  # a damaged or foreign cache file: rebuild it
            pass
    entries, problems = check(root)
    _store(path, ([_plain_entry(entry) for entry in entries], problems))
    return entries, problems


def _plain(value):
    """YAML's line-keeping mappings and lists as plain ones: unpickling then needs no YAML."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _plain_entry(entry):
    from dataclasses import replace

    return replace(entry, data=_plain(entry.data))


def _store(path: Path, value) -> None:
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        try:
            os.unlink(temporary)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass
