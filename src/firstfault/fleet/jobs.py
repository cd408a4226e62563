"""Which jobs are under the roots, and what each one's files look like now (for incremental scans).

    jobs, skipped = find_jobs(["/shared/jobs"])

A job is one folder or one archive (.tar.gz, .tgz, .tar, .zip) directly under a root; a root
that is itself an archive is one job. Anything else directly under a root (a stray file, a
socket) is returned in `skipped` with the reason, so the command can say so. Hidden entries
(`.name`) are not jobs, as hidden files are not logs for `diagnose`.

A job's `stamp` (file count, total bytes, newest modification time, and a digest of every file's
relative path, size and mtime) is what an incremental scan compares: a job whose stamp did not
change is not diagnosed again.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..model import Skipped

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


@dataclass(frozen=True)
class Stamp:
    files: int
    bytes: int
    modified: float  # newest mtime, epoch seconds
    digest: str


@dataclass(frozen=True)
class JobRef:
    """One job to diagnose: where it is and what it looked like when it was found."""

    path: str  # absolute
    job_id: str
    is_archive: bool
    stamp: Stamp


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def job_id_of(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def find_jobs(roots: list[str]) -> tuple[list[JobRef], list[Skipped]]:
    """Every job under the roots, sorted by path within each root; duplicates (same real path) once."""
    jobs: list[JobRef] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for root in roots:
        for path in _candidates(Path(root), skipped):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            archive = path.is_file()
            stamp = archive_stamp(path) if archive else folder_stamp(path)
            if stamp is None:
                skipped.append(Skipped(str(path), "cannot read its size and modification time"))
                continue
            jobs.append(JobRef(str(Path(real)), job_id_of(path), archive, stamp))
    return jobs, skipped


def _candidates(root: Path, skipped: list[Skipped]):
    if root.is_file() and is_archive(root):
        yield root
        return
    if not root.is_dir():
        reason = "not a folder of jobs or a job archive" if root.exists() else "no such file or directory"
        skipped.append(Skipped(str(root), reason))
        return
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError as exc:
        skipped.append(Skipped(str(root), f"cannot list folder: {exc.strerror}"))
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=True):
            yield path
        elif entry.is_file(follow_symlinks=True) and is_archive(path):
            yield path
        else:
            skipped.append(Skipped(str(path), "not a job: a job is a folder or an archive (.tar.gz, .tgz, .tar, .zip)"))


def folder_stamp(folder: Path) -> Stamp | None:
    """Stamp of every non-hidden file under the folder (the files `diagnose` would read).

    One os.walk and one stat per file: ingest's expand_inputs gives the same list at four times
    the cost (realpath and type checks per file), which a rescan of a large fleet would feel."""
    entries = []
    try:
        for current, subfolders, files in os.walk(folder, followlinks=False):
            subfolders[:] = [name for name in subfolders if not name.startswith(".")]
            for name in files:
                if name.startswith("."):
                    continue
                path = os.path.join(current, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue  # a broken link: diagnose lists it as skipped
                entries.append((os.path.relpath(path, folder), info.st_size, info.st_mtime_ns))
    except OSError:
        return None
    return _stamp(entries)


def archive_stamp(path: Path) -> Stamp | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return _stamp([(path.name, info.st_size, info.st_mtime_ns)])


def _stamp(entries: list[tuple[str, int, int]]) -> Stamp:
    entries.sort()
    digest = hashlib.sha1()
    for relative, size, mtime_ns in entries:
        digest.update(f"{relative}\0{size}\0{mtime_ns}\n".encode("utf-8", "surrogateescape"))
    newest = max((mtime_ns for _, _, mtime_ns in entries), default=0) / 1e9
    return Stamp(files=len(entries), bytes=sum(size for _, size, _ in entries), modified=newest,
                 digest=digest.hexdigest()[:20])
