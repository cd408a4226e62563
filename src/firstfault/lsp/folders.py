"""Which files the editor server diagnoses on open, and which folder is "the job" for a file.

A run's logs are a folder: one file per rank, per node or per host, a launcher log beside them,
torchrun's `--log-dir` tree (`<log-dir>/<run-id>/attempt_N/<local_rank>/stderr.log`). A file
opened in the editor is diagnosed together with its siblings, so the job is the nearest folder
above it that is not itself one rank's or one node's part of the run. A folder that
is a project rather than a run (a repository, the home folder) is not read whole: only the log
files lying directly in it are. No I/O beyond listing folders; nothing here reads a log.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..ingest.attribution import hints_from_path

LOG_SUFFIXES = (".log", ".out", ".err")
RUN_FOLDER_TEXT_SUFFIX = ".txt"  # a log only under a run folder (else it is any text file)
# Files and folders that make a folder a project (code, a repository), not the output of a run.
PROJECT_MARKERS = (".git", ".hg", "pyproject.toml", "setup.py", "package.json", "Cargo.toml", "go.mod", "Makefile")
LISTING_LIMIT = 2000  # entries looked at when asking what a folder holds
_ATTEMPT = re.compile(r"attempt_\d+")


@dataclass(frozen=True)
class ScopeLimits:
    """How much one opened log may bring with it (`initializationOptions`: jobMaxFiles,
    jobMaxBytes, jobMaxDepth)."""

    max_files: int = 512
    max_bytes: int = 2 << 30
    max_depth: int = 4  # folder levels below the job folder


@dataclass(frozen=True)
class JobScope:
    """What to diagnose for a file: `paths` (the run folder, or the job's files) as given to
    `diagnose_paths`; `folder` names the job; `left_out` counts the files of the folder that were
    not taken (another job's, or past the limits) and `why` says why, for the editor to say."""

    folder: Path
    paths: tuple[str, ...]
    left_out: int = 0
    why: str = ""


def is_log_document(path: Path) -> bool:
    """Whether opening `path` in the editor should diagnose its job without being asked."""
    name = path.name.lower()
    if name.endswith(LOG_SUFFIXES):
        return True
    if name.endswith(RUN_FOLDER_TEXT_SUFFIX):
        return names_a_rank(path.name) or _holds_logs(path.parent)
    return False


def names_a_rank(name: str) -> bool:
    """Whether a file or folder name says which rank or node of the run it holds (`rank3`,
    `node1`, `worker-07`; host names are left out: a run's own name looks like one too)."""
    hints = hints_from_path(name if "." in name else name + ".log")
    return hints.rank is not None or hints.node_rank is not None


def job_scope(path: Path, workspace_roots: Sequence[Path] = (), limits: ScopeLimits = ScopeLimits()) -> JobScope:
    """The job of the file `path` (see job_folder), bounded: a run folder is read whole within
    the limits; any other folder (a project, `/tmp`, `~/Downloads`) gives only the file and its
    siblings that look like the same job (`rank3.log` beside `rank0.log`, `slurm-881-gpu-b07.out`
    beside `slurm-881-gpu-b06.out`)."""
    absolute = Path(os.path.abspath(path))
    folder = job_folder(path, workspace_roots)
    if folder != absolute.parent or _is_run_folder(folder):
        return _bounded(folder, absolute, limits)
    if _is_project(folder):  # code beside its logs: the log files lying directly in it
        files = sorted(str(item) for item in _log_files(folder))
        return _limited(JobScope(folder, tuple(files) if str(absolute) in files else (str(absolute), *files)), limits)
    entries = [Path(entry.path) for entry in _entries(folder) if entry.is_file()]
    shape = _shape(absolute.name)
    same_job = sorted(str(item) for item in entries if _shape(item.name) == shape)
    files = same_job if str(absolute) in same_job else [str(absolute), *same_job]
    left_out = len(entries) - len(files)
    why = f"{left_out} other file(s) in {folder} are not this job's (they do not look like {absolute.name})" if left_out > 0 else ""
    return _limited(JobScope(folder, tuple(files), left_out, why), limits)


_NUMBER = re.compile(r"(?<!\d)\d{1,4}(?!\d)")  # a rank, a node, a host's number; a job id (5+ digits) stays


def _shape(name: str) -> str:
    """A file name with its small numbers masked: the files of one job share a shape."""
    return _NUMBER.sub("#", name.lower())


def _is_run_folder(folder: Path) -> bool:
    """A folder that holds one run's logs: files or folders named per rank or node, a torchrun
    `--log-dir` tree. Never a project (code, a repository) or the home folder."""
    if _is_project(folder):
        return False
    return any(names_a_rank(entry.name) or _ATTEMPT.fullmatch(entry.name) or entry.name == "torchelastic"
               for entry in _entries(folder))


def _bounded(folder: Path, opened: Path, limits: ScopeLimits) -> JobScope:
    """The run folder whole when it is within the limits (new files are then found as they
    appear), else its files down to max_depth, the opened one first, up to the limits."""
    files, too_deep = _walk(folder, limits.max_depth)
    total = sum(size for _, size in files)
    if not too_deep and len(files) <= limits.max_files and total <= limits.max_bytes:
        return JobScope(folder, (str(folder),))
    names = [str(opened)] + [name for name, _ in files if name != str(opened)]
    why = f"{too_deep} file(s) lie deeper than {limits.max_depth} folder levels" if too_deep else ""
    return _limited(JobScope(folder, tuple(names), too_deep, why), limits, dict(files))


def _limited(scope: JobScope, limits: ScopeLimits, sizes: dict | None = None) -> JobScope:
    """At most max_files files and max_bytes bytes (the opened file, first, is always kept)."""
    kept, total = [], 0
    for name in scope.paths:
        size = (sizes or {}).get(name)
        if size is None:
            try:
                size = os.stat(name).st_size
            except OSError:
                size = 0
        if kept and (len(kept) >= limits.max_files or total + size > limits.max_bytes):
            break
        kept.append(name)
        total += size
    dropped = len(scope.paths) - len(kept)
    if not dropped:
        return scope
    why = "; ".join(part for part in (scope.why, f"{dropped} more past the limits ({limits.max_files} files, "
                                                 f"{limits.max_bytes >> 20} MiB)") if part)
    return JobScope(scope.folder, tuple(kept), scope.left_out + dropped, why)


def _walk(folder: Path, max_depth: int) -> tuple[list[tuple[str, int]], int]:
    """(path, size) of the files down to max_depth folder levels (hidden ones left out, as
    `diagnose` does), and how many lie deeper."""
    files, too_deep = [], 0
    for current, subfolders, names in os.walk(folder):
        depth = len(Path(current).relative_to(folder).parts)
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            if depth > max_depth:
                too_deep += 1
                continue
            try:
                files.append((os.path.join(current, name), os.stat(os.path.join(current, name)).st_size))
            except OSError:
                continue
        if len(files) + too_deep > 100 * LISTING_LIMIT:
            break  # a whole disk under a run folder: what was found is enough to refuse it whole
    return files, too_deep


def job_folder(path: Path, workspace_roots: Sequence[Path] = ()) -> Path:
    """The folder to diagnose for the file `path`: its own folder, or the run folder above it.

    Climbs out of torchrun `--log-dir` trees (local-rank and attempt folders, the run id folder
    above them, and the log dir itself when the launcher's log lies beside it) and out of
    per-rank and per-node folders (`rank3/`, `node1/`, `0/`). Never climbs above the innermost
    workspace folder that holds the file, nor into the home folder or the filesystem root. A
    folder per host is not climbed out of (a run's own name looks like a host name): "Diagnose
    folder" on the parent reads every host."""
    path = Path(os.path.abspath(path))
    folder = path.parent
    ceiling = _ceiling(path, workspace_roots)
    if ceiling is None:
        return folder
    if folder.name.isdigit() and _ATTEMPT.fullmatch(folder.parent.name):
        folder = _up(folder, ceiling)  # attempt_N/<local_rank>/
    if _ATTEMPT.fullmatch(folder.name):
        folder = _up(_up(folder, ceiling), ceiling)  # <log-dir>/<run id>/attempt_N/
        if folder != ceiling and not _holds_logs(folder) and _holds_logs(folder.parent):
            folder = _up(folder, ceiling)  # the launcher's log beside --log-dir
    while folder != ceiling and (folder.name.isdigit() or names_a_rank(folder.name)):
        folder = _up(folder, ceiling)
    return folder


def _ceiling(path: Path, workspace_roots: Sequence[Path]) -> Path | None:
    """The highest folder the job of `path` may be: the innermost workspace folder holding the
    file, else the first folder below the home folder (or the root) on the way to it; None when
    the file lies directly in the home folder or the root."""
    home, anchor = Path.home(), Path(path.anchor)
    roots = [Path(os.path.abspath(root)) for root in workspace_roots]
    holders = [root for root in roots if _is_within(path.parent, root) and root not in (home, anchor)]
    if holders:
        return max(holders, key=lambda root: len(root.parts))
    top = home if _is_within(path.parent, home) else anchor
    below = path.relative_to(top).parts
    return top / below[0] if len(below) > 1 else None


def _up(folder: Path, ceiling: Path) -> Path:
    return folder if folder == ceiling else folder.parent


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _is_project(folder: Path) -> bool:
    """A folder that is code or a repository (or the home folder): never read whole."""
    if folder == Path.home() or folder == Path(folder.anchor):
        return True
    return any((folder / marker).exists() for marker in PROJECT_MARKERS)


def _entries(folder: Path):
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= LISTING_LIMIT:
                    return
                yield entry
    except OSError:
        return


def _log_files(folder: Path) -> list[Path]:
    return [Path(entry.path) for entry in _entries(folder)
            if entry.name.lower().endswith(LOG_SUFFIXES) and entry.is_file()]


def _holds_logs(folder: Path) -> bool:
    """Whether `folder` holds log files directly (not in sub-folders)."""
    return any(entry.name.lower().endswith(LOG_SUFFIXES) and entry.is_file() for entry in _entries(folder))
