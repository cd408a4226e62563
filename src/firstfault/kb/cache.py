"""A cache of validated data files, so a run does not parse and check ~100 YAML files.

The cache file holds what `check_entries(root)` returned (entries and problems), pickled, under
the user cache dir (`$XDG_CACHE_HOME/firstfault/`, else `~/.cache/firstfault/`). Its name is a
hash of every entry file's path, size and modification time, of the firstfault version and of
the loader and schema sources: editing an entry, adding one, or upgrading firstfault makes a
new key, and the stale file is simply never read again. `cached_value` does the same for any
other data file (the secret catalogue). Any failure to read or write the cache (no home, a
read-only disk, `XDG_CACHE_HOME` pointing at a file) falls back to loading from the files and
is never an error; `FIRSTFAULT_NO_CACHE=1` turns the cache off. `write_atomic` is the one way
firstfault writes into its cache directory.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import stat
from pathlib import Path

DISABLE_VARIABLE = "FIRSTFAULT_NO_CACHE"
_FORMAT = "kb-1"


# (and the class list the check holds the entries to: editing classes.yaml alone changes the check's verdict)
_VALIDATING_CODE = ("kb/loader.py", "kb/schema.py", "kb/yaml_lines.py", "kb/classes.py", "kb/classes.yaml", "model.py",
                    "match/conditions.py")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "firstfault"


def fingerprint(root: Path) -> str:
    """A key that changes whenever any entry file (or the code that validates them) changes."""
    code = [Path(__file__).parent.parent / name for name in _VALIDATING_CODE]
    return _fingerprint(f"{root.resolve()}", code + sorted(root.glob("*/*.yaml")))


def _fingerprint(name: str, files) -> str:
    from .. import __version__

    digest = hashlib.sha256(f"{_FORMAT}|{__version__}|{name}|".encode())
    for path in files:  # stat'ed, not imported: a warm cache needs no YAML parser
        try:
            info = os.stat(path)
        except OSError:
            continue
        digest.update(f"{path}:{info.st_size}:{info.st_mtime_ns}|".encode())
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
    return _cached(f"{fingerprint(root)}.kb.pickle", lambda: check(root),
                   lambda value: ([_plain_entry(entry) for entry in value[0]], value[1]))


def cached_value(name: str, files: list[Path], build):
    """`build()` -> a picklable value made from `files`, served from the cache while none of
    them (nor the firstfault version) changed."""
    if os.environ.get(DISABLE_VARIABLE):
        return build()
    return _cached(f"{_fingerprint(name, files)}.{name}.pickle", build, lambda value: value)


def _cached(file_name: str, build, plain):
    try:
        path = cache_dir() / file_name
    except (OSError, RuntimeError):  # no home directory to find
        return build()
    if _trusted(path):
        try:
            with open(path, "rb") as stream:
                return pickle.load(stream)
        except Exception:  # a damaged or foreign cache file: rebuild it
            pass
    value = build()
    _store(path, plain(value))
    return value


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
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return
    write_atomic(path, data)


def write_atomic(path: Path, data: bytes) -> bool:
    """Write a cache file whole or not at all; False (and nothing raised) when the cache
    directory cannot be made or written."""
    import tempfile

    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
        return True
    except (OSError, ValueError):
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        return False
