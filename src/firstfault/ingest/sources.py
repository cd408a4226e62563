"""Turn what the user named (files, folders, globs, '-') into a list of inputs, never losing one:
anything that cannot be read becomes a `Skipped` with the reason."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from ..model import Skipped

STDIN = "-"


@dataclass(frozen=True)
class InputFile:
    """One readable thing: a file on disk, stdin, or bytes already in memory."""

    display: str  # how reports name it (relative to what the user named)
    relative: str  # the path used for rank/host hints (relative to the named root)
    path: Path | None = None
    content: bytes | None = None  # in-memory input (web uploads, tests)
    is_stdin: bool = False


def expand_inputs(arguments: list[str]) -> tuple[list[InputFile], list[Skipped]]:
    """Expand files, folders (recursively, sorted) and globs; '-' is standard input."""
    inputs: list[InputFile] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for argument in arguments:
        if argument == STDIN:
            inputs.append(InputFile(display="<stdin>", relative="stdin", is_stdin=True))
            continue
        for path, root in _expand_one(argument, skipped):
            key = os.path.realpath(path)
            if key in seen:
                continue
            seen.add(key)
            inputs.append(_input_for(path, root))
    return inputs, skipped


def _expand_one(argument: str, skipped: list[Skipped]):
    if glob.has_magic(argument):
        matches = sorted(glob.glob(argument, recursive=True))
        if not matches:
            skipped.append(Skipped(argument, "no file matches this pattern"))
        for match in matches:
            yield from _expand_one(match, skipped)
        return
    path = Path(argument)
    if path.is_dir():
        found = False
        for item in _walk(path, skipped):
            found = True
            yield item
        if not found and not any(item.source.startswith(str(path)) for item in skipped):
            hidden = any(name.startswith(".") for name in os.listdir(path)) if os.access(path, os.R_OK) else False
            skipped.append(Skipped(argument, "empty folder: no files in it" + (" (hidden files and folders are not read)" if hidden else "")))
    elif path.is_file():
        yield path, path.parent
    elif path.exists():
        skipped.append(Skipped(argument, "not a regular file (device, socket or pipe); pipe it to stdin with '-'"))
    elif path.is_symlink():
        skipped.append(Skipped(argument, "broken symbolic link"))
    else:
        skipped.append(Skipped(argument, "no such file or directory"))


def _walk(root: Path, skipped: list[Skipped]):
    def on_error(error: OSError) -> None:
        skipped.append(Skipped(str(error.filename or root), f"cannot list folder: {error.strerror}"))

    for folder, subfolders, files in os.walk(root, onerror=on_error, followlinks=False):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(folder) / name
            if path.is_file():
                yield path, root
            else:
                skipped.append(Skipped(str(path), "not a regular file or a broken link"))


def _input_for(path: Path, root: Path) -> InputFile:
    try:
        relative = str(path.relative_to(root))
    except ValueError:
        relative = path.name
    return InputFile(display=str(path), relative=relative, path=path)


def in_memory_inputs(named_contents) -> list[InputFile]:
    """Inputs for content already in memory: (name, bytes or str) pairs."""
    inputs = []
    for name, content in named_contents:
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        inputs.append(InputFile(display=name, relative=name, content=data))
    return inputs
