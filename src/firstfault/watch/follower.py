"""Follow growing logs by polling: files, folders (new files that appear later), rotation, truncation.

Passive: files are only opened for reading. Each poll returns `Chunk`s of new complete lines;
a partial last line waits for its newline. A file is known by its inode, so a rotated file
(renamed, then a new file created under the old name) is drained to its end through the handle
already open and a rename inside a watched folder is followed without re-reading; a file that
shrinks in place (copytruncate) starts a new generation read from its start.
"""
from __future__ import annotations

import glob
import os
import stat as stat_module
from dataclasses import dataclass, field

READ_BYTES = 4 * 1024 * 1024  # per file per poll: a burst is read over several polls, never all at once
MAX_PENDING = 64 * 1024  # a partial line longer than this is cut (its tail is dropped)
SKIPPED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip", ".tar", ".pt", ".pth", ".bin", ".safetensors")


@dataclass(frozen=True)
class Chunk:
    """New complete lines of one file generation (`data` ends in '\\n'), or a record file's content."""

    key: tuple[str, int]  # (path when first seen, generation): one accumulated scan per key
    display: str
    relative: str
    data: bytes
    record: bool = False  # a whole JSON file (a torchelastic error record candidate), not log lines


@dataclass(frozen=True)
class FileEvent:
    """Something that happened to a followed file, for the observer (stderr)."""

    display: str
    what: str  # new | rotated | truncated | renamed | gone | skipped


@dataclass
class _Followed:
    path: str
    relative: str
    inode: tuple[int, int]
    handle: object
    key: tuple[str, int]
    offset: int = 0
    pending: bytes = b""
    overlong: bool = False
    record_stamp: tuple = ()  # (size, mtime) of the last read of a JSON record file
    is_record: bool = False


def own_outputs(*streams) -> frozenset:
    """(st_dev, st_ino) of the regular files the given streams write to (stdout redirected into
    the watched folder), so that a follower never reads its own output."""
    inodes = set()
    for stream in streams:
        try:
            info = os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError):
            continue
        if stat_module.S_ISREG(info.st_mode):
            inodes.add((info.st_dev, info.st_ino))
    return frozenset(inodes)


@dataclass
class Follower:
    """Polls the given files, folders and globs; call `poll()` every ~0.2 s."""

    paths: list[str]
    ignored: frozenset = frozenset()  # (st_dev, st_ino) of files never to follow: the command's own output
    events: list[FileEvent] = field(default_factory=list)
    _followed: dict[str, _Followed] = field(default_factory=dict)
    _skipped: set = field(default_factory=set)
    _generations: dict[str, int] = field(default_factory=dict)
    behind: bool = False  # the last poll left unread data (a backlog bigger than one read)

    def poll(self) -> list[Chunk]:
        self.behind = False
        found: dict = {}  # path -> (relative, stat); one path per inode (a file named twice is read once)
        seen_inodes = set()
        for path, (relative, stat) in self._discover():
            inode = (stat.st_dev, stat.st_ino)
            if inode in self.ignored:
                continue  # `watch DIR > DIR/out`: what we write is not a log to follow
            if path not in found and inode not in seen_inodes:
                found[path] = (relative, stat)
                seen_inodes.add(inode)
        by_inode = {(st.st_dev, st.st_ino): path for path, (_relative, st) in found.items()}
        chunks: list[Chunk] = []
        for path, followed in list(self._followed.items()):
            current = found.get(path)
            if current is not None and (current[1].st_dev, current[1].st_ino) == followed.inode:
                if current[1].st_size < followed.offset and not followed.is_record:
                    chunks += self._drain(followed, final=True)
                    self._restart(followed, "truncated")
                continue
            new_path = by_inode.get(followed.inode)
            if followed.is_record:
                # a record replaced whole (written aside, then renamed over): read the new one afresh
                self._close(followed)
                del self._followed[path]
                continue
            if new_path is not None and new_path not in self._followed:
                # renamed inside the watched set: keep reading it where we were
                del self._followed[path]
                followed.path, followed.relative = new_path, found[new_path][0]
                self._followed[new_path] = followed
                self.events.append(FileEvent(new_path, "renamed"))
            else:
                chunks += self._drain(followed, final=True)  # rotated away or deleted: read what is left
                self._close(followed)
                self._followed.pop(path, None)
                self.events.append(FileEvent(path, "rotated" if current is not None else "gone"))
        followed_inodes = {followed.inode for followed in self._followed.values()}
        for path, (relative, stat) in found.items():
            if path not in self._followed and path not in self._skipped and (stat.st_dev, stat.st_ino) not in followed_inodes:
                self._start(path, relative, stat)
        for followed in list(self._followed.values()):
            chunks += self._read(followed)
        return chunks

    def close(self) -> list[Chunk]:
        """Stop following; returns what was left, a final partial line included."""
        chunks = []
        for followed in self._followed.values():
            chunks += self._drain(followed, final=True)
            self._close(followed)
        self._followed.clear()
        return chunks

    def _discover(self):
        for argument in self.paths:
            candidates = sorted(glob.glob(argument, recursive=True)) if glob.has_magic(argument) else [argument]
            for candidate in candidates:
                if os.path.isdir(candidate):
                    yield from _walk(candidate)
                else:
                    try:
                        stat = os.stat(candidate)
                    except OSError:
                        continue  # not there yet: it may appear later
                    if _is_regular(stat):
                        yield candidate, (os.path.basename(candidate), stat)

    def _start(self, path: str, relative: str, stat) -> None:
        if path.endswith(SKIPPED_SUFFIXES):
            self._skip(path, "compressed or binary files are not followed; run `firstfault diagnose` on them")
            return
        try:
            handle = open(path, "rb")
        except OSError as exc:
            self._skip(path, exc.strerror or str(exc))
            return
        generation = self._generations.get(path, 0)
        self._generations[path] = generation + 1
        followed = _Followed(path, relative, (stat.st_dev, stat.st_ino), handle, (path, generation),
                             is_record=path.endswith(".json"))
        self._followed[path] = followed
        self.events.append(FileEvent(path, "new"))

    def _restart(self, followed: _Followed, what: str) -> None:
        followed.handle.seek(0)
        generation = self._generations.get(followed.path, 0)
        self._generations[followed.path] = generation + 1
        followed.key = (followed.path, generation)
        followed.offset, followed.pending, followed.overlong = 0, b"", False
        self.events.append(FileEvent(followed.path, what))

    def _skip(self, path: str, reason: str) -> None:
        self._skipped.add(path)
        self.events.append(FileEvent(path, f"skipped: {reason}"))

    def _read(self, followed: _Followed, final: bool = False) -> list[Chunk]:
        if followed.is_record:
            return self._read_record(followed)
        try:
            data = followed.handle.read(READ_BYTES)
        except OSError:
            data = b""
        if data and followed.offset == 0 and b"\x00" in data[:8192]:
            self._close(followed)
            self._followed.pop(followed.path, None)
            self._skip(followed.path, "binary file (not text)")
            return []
        followed.offset += len(data)
        if len(data) == READ_BYTES:
            self.behind = True
        data = followed.pending + data
        cut = data.rfind(b"\n") + 1
        if final and data and cut < len(data):
            data, cut = data + b"\n", len(data) + 1
        complete, followed.pending = data[:cut], data[cut:]
        if followed.overlong:
            newline = complete.find(b"\n")
            if newline < 0:
                followed.pending = b""
                return []
            complete, followed.overlong = complete[newline + 1:], False  # the cut line was already counted
        if len(followed.pending) > MAX_PENDING:
            complete += followed.pending[:MAX_PENDING] + b"\n"
            followed.pending, followed.overlong = b"", True
        if not complete:
            return []
        return [Chunk(followed.key, followed.path, followed.relative, complete)]

    def _read_record(self, followed: _Followed) -> list[Chunk]:
        try:
            stat = os.fstat(followed.handle.fileno())
        except OSError:
            return []
        stamp = (stat.st_size, stat.st_mtime_ns)
        if stamp == followed.record_stamp or stat.st_size == 0 or stat.st_size > READ_BYTES:
            return []
        followed.record_stamp = stamp
        followed.handle.seek(0)
        data = followed.handle.read(READ_BYTES)
        followed.offset = len(data)
        return [Chunk(followed.key, followed.path, followed.relative, data, record=True)]

    def _drain(self, followed: _Followed, final: bool = False) -> list[Chunk]:
        chunks = []
        for _ in range(64):  # bounded: a file still being written fast is picked up again next poll
            before = followed.offset
            chunks += self._read(followed, final=final)
            if followed.offset == before or followed.path not in self._followed:
                break
        return chunks

    @staticmethod
    def _close(followed: _Followed) -> None:
        try:
            followed.handle.close()
        except OSError:
            pass


def _walk(root: str):
    for folder, subfolders, files in os.walk(root, followlinks=False):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            if _is_regular(stat):
                yield path, (os.path.relpath(path, root), stat)


def _is_regular(stat) -> bool:
    return stat_module.S_ISREG(stat.st_mode)
