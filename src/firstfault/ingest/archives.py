"""Log archives given on the command line (`tar czf logs.tgz logs/`, a `.zip` from a cluster's
portal), read as the log files they hold.

    inputs, skipped = with_archives_opened(inputs)

An input named like an archive (.zip, .tar, .tgz, .tar.gz) whose first bytes say it is one is
opened in memory by the web interface's bounded expander (`web/archives.py`: no file is written,
a member's path may not leave the archive, decompression bombs are refused). Each member becomes
an input shown as `logs/rank3.log in logs.tgz`, whose path inside the archive gives the rank and
host hints a folder on disk would. What is left out (links, nested archives, binary members, an
archive over the limits) is said, never dropped silently. Other inputs are not opened here.
"""
from __future__ import annotations

from dataclasses import replace

from ..model import Skipped
from .combined import PIECE_OF
from .gzip_stream import GZIP_MAGIC
from .sources import InputFile

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tar.gz")
MAX_ARCHIVE_BYTES = 1024 * 1024 * 1024  # the log text all archives may expand to, held in memory
MAX_ARCHIVE_FILES = 8192
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_TAR_MAGIC_AT = 257


def with_archives_opened(inputs: list[InputFile]) -> tuple[list[InputFile], list[Skipped]]:
    """`inputs` with each archive replaced by the files it holds, and what was left out of them."""
    if not any(_named_like_an_archive(item) for item in inputs):
        return inputs, []  # (nothing imported, nothing read: most runs end here)
    from ..web.archives import Budget, expand
    from ..web.limits import InputRejected, Limits

    budget = Budget(Limits(max_total_bytes=MAX_ARCHIVE_BYTES, max_files=MAX_ARCHIVE_FILES))
    opened: list[InputFile] = []
    skipped: list[Skipped] = []
    for item in inputs:
        if not (_named_like_an_archive(item) and _is_an_archive(item)):
            opened.append(item)
            continue
        before, notes = len(budget.files), len(budget.notes)
        try:
            if item.path.stat().st_size > MAX_ARCHIVE_BYTES:
                raise OSError(f"larger than the {MAX_ARCHIVE_BYTES >> 20} MiB firstfault opens in memory")
            expand(item.display, item.path.read_bytes(), budget)
        except (InputRejected, OSError) as exc:
            del budget.files[before:]
            reason = exc.message if isinstance(exc, InputRejected) else exc.strerror or exc.args[0]
            reason = reason.removeprefix(f"{item.display}: ")
            hint = (exc.hint if isinstance(exc, InputRejected) else "") or "extract it and give the folder"
            skipped.append(Skipped(item.display, f"archive not opened: {reason}; {hint}"))
            continue
        skipped += [Skipped(item.display, note) for note in budget.notes[notes:]]
        opened += [_member(item, name, data) for name, data in budget.files[before:]]
    return opened, skipped


def _member(archive: InputFile, name: str, data: bytes) -> InputFile:
    """A file of the archive, `name` its path inside it."""
    return replace(archive, display=f"{name}{PIECE_OF}{archive.display}", relative=name, path=None, content=data)


def _named_like_an_archive(item: InputFile) -> bool:
    return item.path is not None and item.display.lower().endswith(ARCHIVE_SUFFIXES)


def _is_an_archive(item: InputFile) -> bool:
    head = item.head(_TAR_MAGIC_AT + 5) or b""
    return head[:4] in _ZIP_MAGIC or head[:2] == GZIP_MAGIC or head[_TAR_MAGIC_AT:] == b"ustar"
