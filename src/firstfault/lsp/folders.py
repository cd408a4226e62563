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
class JobScope:
    """What to diagnose for a file: `paths` (the run folder, or the log files of a project
    folder) as given to `diagnose_paths`; `folder` names the job."""

    folder: Path
    paths: tuple[str, ...]


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


def job_scope(path: Path, workspace_roots: Sequence[Path] = ()) -> JobScope:
    """The job of the file `path`; see job_folder."""
    folder = job_folder(path, workspace_roots)
    if _is_project(folder):
        files = sorted(str(item) for item in _log_files(folder))
        absolute = str(Path(os.path.abspath(path)))
        return JobScope(folder, tuple(files) if absolute in files else (absolute, *files))
    return JobScope(folder, (str(folder),))


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
