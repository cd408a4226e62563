"""Turn what the user named (files, folders, globs, '-') into a list of inputs, never losing one:
anything that cannot be read becomes a `Skipped` with the reason.

Folders are walked with an explicit stack (no recursion: a folder 1,000 levels deep is fine),
in sorted order, without following links to folders (each is listed as skipped). A name that
exists as given is taken literally even when it holds glob characters (`rank[1].log`); a `**`
glob follows links to folders once each, so a link to a parent folder cannot loop.
"""
from __future__ import annotations

import glob
import os
import re
import stat
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ..model import Skipped

STDIN = "-"
VANISHED = "no longer there: deleted or moved while firstfault ran"


@dataclass(frozen=True)
class InputFile:
    """One readable thing: a file on disk, stdin, or bytes already in memory."""

    display: str  # how reports name it (relative to what the user named)
    relative: str  # the path used for rank/host hints (relative to the named root)
    path: Path | None = None
    content: bytes | None = None  # in-memory input (web uploads, tests)
    is_stdin: bool = False
    max_bytes: int | None = None  # a gzip input stops expanding here (uploads)
    notes: tuple[str, ...] = ()  # what was left out of it before the scan (reported as skipped)
    first_line: int = 1  # the number of its first line (a piece of a text that held several files)
    stdin_head: bytes = b""  # standard input's first bytes, read before the rest (see stdin_in_memory)

    def head(self, size: int) -> bytes | None:
        """Its first `size` bytes as stored (None: standard input, read once by the reader, or a
        file that cannot be read, which the reader reports)."""
        if self.content is not None:
            return self.content[:size]
        if self.path is None or self.is_stdin:
            return None
        try:
            with open(self.path, "rb") as stream:
                return stream.read(size)
        except OSError:
            return None

    def whole(self, limit: int) -> bytes | None:
        """All its bytes as stored, if there are at most `limit` (None: more, or unreadable)."""
        if self.content is not None:
            return self.content if len(self.content) <= limit else None
        if self.path is None or self.is_stdin:
            return None
        try:
            if self.path.stat().st_size > limit:
                return None
            return self.path.read_bytes()
        except OSError:
            return None


STDIN_PASTE_BYTES = 64 * 1024 * 1024  # standard input up to this size is read whole, as a paste


def stdin_in_memory(item: InputFile) -> InputFile:
    """Standard input as bytes in memory when it is no longer than STDIN_PASTE_BYTES (`pbpaste |
    firstfault diagnose -`: a paste, whose forms ingest.pasted reads back as for a file); a longer
    stream (a log piped through) is read as it comes, its first bytes kept to be read first."""
    head = sys.stdin.buffer.read(STDIN_PASTE_BYTES + 1)
    if len(head) <= STDIN_PASTE_BYTES:
        return replace(item, content=head, is_stdin=False)
    return replace(item, stdin_head=head)


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


def _expand_one(argument: str, skipped: list[Skipped], listed: bool = False):
    """`listed`: the path came from a glob or a folder listing, so if it is gone now it was
    deleted while firstfault ran."""
    if not listed and glob.has_magic(argument) and not os.path.lexists(argument):
        matches = _glob(argument)
        if not matches:
            skipped.append(Skipped(argument, "no file matches this pattern"))
        for match in matches:
            yield from _expand_one(match, skipped, listed=True)
        return
    path = Path(argument)
    kind = _kind(path)
    if kind == "folder":
        found = False
        for item in _walk(path, skipped):
            found = True
            yield item
        if not found and not any(item.source.startswith(str(path)) for item in skipped):
            hidden = any(name.startswith(".") for name in os.listdir(path)) if os.access(path, os.R_OK) else False
            skipped.append(Skipped(argument, "empty folder: no files in it" + (" (hidden files and folders are not read)" if hidden else "")))
    elif kind == "file":
        yield path, path.parent
    else:
        skipped.append(Skipped(argument, VANISHED if kind == "missing" and listed else _REASONS[kind]))


_REASONS = {
    "missing": "no such file or directory",
    "broken-link": "broken symbolic link",
    "special": "not a regular file (device, socket or pipe); pipe it to stdin with '-'",
    "folder-link": "a link to a folder: not followed inside a folder walk (name it to read it)",
    "unlistable": "cannot be examined (permission denied or path too long)",
}


def _kind(path: Path, follow_folders: bool = True) -> str:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "broken-link" if os.path.islink(path) else "missing"
    except OSError:
        return "unlistable"
    if stat.S_ISDIR(info.st_mode):
        return "folder" if follow_folders or not os.path.islink(path) else "folder-link"
    return "file" if stat.S_ISREG(info.st_mode) else "special"


def _walk(root: Path, skipped: list[Skipped]):
    """Every file under `root`, sorted, depth first, without recursion or following links."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted((entry.name for entry in listing if not entry.name.startswith(".")))
        except OSError as error:
            skipped.append(Skipped(str(folder), f"cannot list folder: {error.strerror or error}"))
            continue
        subfolders = []
        for name in entries:
            path = folder / name
            kind = _kind(path, follow_folders=False)
            if kind == "file":
                yield path, root
            elif kind == "folder":
                subfolders.append(path)
            else:
                skipped.append(Skipped(str(path), VANISHED if kind == "missing" else _REASONS[kind]))
        stack.extend(reversed(subfolders))


def _glob(pattern: str) -> list[str]:
    """The paths a glob matches, sorted. Without `**` that is glob.glob; with it, a walk from
    the pattern's fixed prefix that follows each folder (link or not) once."""
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    parts = pattern.split(os.sep)
    fixed = []
    for part in parts:
        if glob.has_magic(part):
            break
        fixed.append(part)
    base = os.sep.join(fixed) or ("" if not pattern.startswith(os.sep) else os.sep)
    regex = _pattern_regex(parts[len(fixed):])
    matches, visited, stack = [], set(), [base or "."]
    while stack:
        folder = stack.pop()
        try:
            info = os.stat(folder)
            if (info.st_dev, info.st_ino) in visited:
                continue
            visited.add((info.st_dev, info.st_ino))
            with os.scandir(folder) as listing:
                names = sorted(entry.name for entry in listing if not entry.name.startswith("."))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name) if folder != "." or base else name
            relative = os.path.relpath(path, base or ".")
            if regex.fullmatch(relative.replace(os.sep, "/")):
                matches.append(path)
            if os.path.isdir(path):
                stack.append(path)
    return sorted(set(matches))


def _pattern_regex(parts: list[str]) -> re.Pattern:
    """Path components of a glob as one regex: `**` is any number of folders."""
    pieces = ["(?:[^/]+/)*" if part == "**" else _component(part) + "/" for part in parts]
    if parts and parts[-1] == "**":
        pieces.append("[^/]+/")
    pattern = "".join(pieces)
    return re.compile(pattern[:-1] if pattern.endswith("/") else pattern)


def _component(part: str) -> str:
    """One glob component as a regex that never crosses a '/'."""
    out, index = [], 0
    while index < len(part):
        char = part[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and part.find("]", index + 1 if part[index:index + 1] in ("!", "]") else index) > 0:
            end = part.find("]", index + 1 if part[index:index + 1] in ("!", "]") else index)
            body = part[index:end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            index = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


def _input_for(path: Path, root: Path) -> InputFile:
    try:
        relative = str(path.relative_to(root))
    except ValueError:
        relative = path.name
    return InputFile(display=str(path), relative=relative, path=path)


def in_memory_inputs(named_contents, max_bytes: int | None = None) -> list[InputFile]:
    """Inputs for content already in memory: (name, bytes or str) pairs."""
    inputs = []
    for name, content in named_contents:
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else bytes(content)
        inputs.append(InputFile(display=name, relative=name, content=data, max_bytes=max_bytes))
    return inputs
