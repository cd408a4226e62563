"""Expand uploaded .zip, .tar, .tar.gz and .gz files in memory, never on disk, within limits.

Nothing here writes a file: members are read into bytes with a bounded read, so a member that
lies about its size (a decompression bomb) is stopped at the byte where it crosses the limit.
Every byte decompressed, at any depth (a .gz inside a .gz, gzip bytes sent as JSON text),
counts against the request's expansion limit, and gzip that expands a thousandfold is refused
after its first 16 MiB.
A member whose path leaves the archive (`../`, an absolute path, a drive letter) rejects the whole
archive: that is an attack, not a log folder. Links, devices and nested archives are skipped with
a note, since logs are never among them.
"""
from __future__ import annotations

import io
import re
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field

from ..ingest.encoding import BINARY_SAMPLE, looks_binary
from ..ingest.gzip_stream import GZIP_MAGIC
from ..mask import mask_secrets
from .limits import Limits, malformed, size, too_large

_DRIVE = re.compile(r"^[A-Za-z]:")
_RATIO_CHECKED_AFTER = 16 * 1024 * 1024  # expanded bytes; below this any ratio is fine
_GUNZIP_PIECE = 64 * 1024
_NESTED_SUFFIXES = (".zip", ".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tar.xz", ".7z", ".rar")


@dataclass
class Budget:
    """What is left of a request's limits while its files are expanded."""

    limits: Limits
    files: list[tuple[str, bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    total_bytes: int = 0

    @property
    def bytes_left(self) -> int:
        return self.limits.max_total_bytes - self.total_bytes

    def add(self, name: str, data: bytes) -> None:
        name = mask_secrets(name)  # names reach the diagnosis and the history as they are
        if len(self.files) >= self.limits.max_files:
            raise malformed(
                "too_many_files",
                f"more than {self.limits.max_files} log files in one request",
                "send the logs of the ranks that failed first, or one file per node",
            )
        while data[:2] == GZIP_MAGIC:  # gzip within gzip, or gzip bytes given as text: each layer counts
            self.charge(len(data))
            data = _bounded_gunzip(data, self.bytes_left, name, self.limits)
            name = name[:-3] if name.lower().endswith(".gz") else name
        if len(data) > self.bytes_left:
            raise _expanded_too_large(self.limits)
        if looks_binary(data[:BINARY_SAMPLE]):
            self.notes.append(f"{_shown(name)}: skipped, binary content")
            return
        self.total_bytes += len(data)
        self.files.append((name, data))

    def charge(self, count: int) -> None:
        """Count bytes that were expanded on the way to a file (an outer gzip layer)."""
        if count > self.bytes_left:
            raise _expanded_too_large(self.limits)
        self.total_bytes += count


def _expanded_too_large(limits: Limits):
    return too_large("input_too_large", f"the logs expand to more than {size(limits.max_total_bytes)}")


def _shown(name: str) -> str:
    name = mask_secrets(name)
    return name if len(name) <= 160 else name[:157] + "..."


def member_name(raw: str, archive: str) -> str:
    """The member's path inside the archive, or a 422 when it would land outside it."""
    name = raw.replace("\\", "/")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if name.startswith("/") or _DRIVE.match(name) or ".." in parts or not parts:
        raise malformed(
            "unsafe_archive_path",
            f"{_shown(archive)}: member {_shown(raw)!r} points outside the archive",
            "pack the log folder with relative paths (tar czf logs.tar.gz logs/)",
        )
    return "/".join(parts)


def _skipped_name(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return name.startswith("__MACOSX/") or base.startswith("._") or base == ".DS_Store"


def _bounded_gunzip(data: bytes, limit: int, name: str, limits: Limits) -> bytes:
    """Decompress gzip data (every member); refuse once the output passes `limit` bytes, or
    passes 16 MiB at a ratio only a bomb reaches (real logs compress 10-100:1)."""
    out = bytearray()
    position = 0  # into data: what the decoders consumed
    try:
        while position < len(data):
            if data[position:position + 2] != b"\x1f\x8b":
                if data[position:].strip(b"\x00"):  # zero padding after the last member is allowed
                    raise OSError("trailing data after the gzip stream")
                break
            decoder = zlib.decompressobj(31)
            while not decoder.eof:
                piece = data[position:position + _GUNZIP_PIECE]
                if not piece:
                    raise EOFError("the gzip data ends early")
                while piece:
                    out += decoder.decompress(piece, 1 << 20)
                    used = len(piece) - len(decoder.unconsumed_tail) - len(decoder.unused_data)
                    position += used
                    piece = decoder.unconsumed_tail
                    if len(out) > limit or (len(out) > _RATIO_CHECKED_AFTER and len(out) > limits.max_compression_ratio * position):
                        raise _bomb(name, limits)
                    if decoder.eof:
                        break
    except (OSError, EOFError, zlib.error) as exc:
        raise malformed("bad_archive", f"{_shown(name)}: not a readable gzip file ({exc})") from None
    return bytes(out)


def _bomb(name: str, limits: Limits):
    return too_large(
        "decompression_bomb",
        f"{_shown(name)}: expands beyond the limit of {size(limits.max_total_bytes)}",
        "upload the log files themselves, or a smaller archive",
    )


def _is_tar(data: bytes) -> bool:
    return len(data) >= 262 and data[257:262] == b"ustar"


def expand(name: str, data: bytes, budget: Budget) -> None:
    """Add one uploaded file to the budget: archives are opened, plain logs go in as they are."""
    limits = budget.limits
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        _expand_zip(name, data, budget)
    elif data[:2] == GZIP_MAGIC:
        # a .tar.gz holds headers and padding besides the logs, so allow one block per member
        plain = _bounded_gunzip(data, budget.bytes_left + 512 * limits.max_archive_members, name, limits)
        if _is_tar(plain):
            _expand_tar(name, plain, budget)
        else:
            if len(plain) > budget.bytes_left:
                raise _bomb(name, limits)
            inner = name[:-3] if name.lower().endswith(".gz") else name
            budget.add(inner, plain)  # a gzip inside is expanded there, and counted
    elif _is_tar(data):
        _expand_tar(name, data, budget)
    else:
        budget.add(name, data)


def _expand_zip(name: str, data: bytes, budget: Budget) -> None:
    limits = budget.limits
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise malformed("bad_archive", f"{_shown(name)}: not a readable zip file ({exc})") from None
    if len(infos) > limits.max_archive_members:
        raise malformed("too_many_members", f"{_shown(name)}: more than {limits.max_archive_members} entries")
    for info in infos:
        path = member_name(info.filename, name)
        if info.is_dir() or _skipped_name(path):
            continue
        kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the archiver recorded no file type
        if kind and kind != stat.S_IFREG:
            budget.notes.append(f"{_shown(name)}/{_shown(path)}: skipped, not a regular file")
            continue
        if info.flag_bits & 0x1:
            raise malformed("bad_archive", f"{_shown(name)}: {_shown(path)} is encrypted")
        if path.lower().endswith(_NESTED_SUFFIXES):
            budget.notes.append(f"{_shown(name)}/{_shown(path)}: skipped, nested archives are not opened")
            continue
        if info.file_size > budget.bytes_left or (
            info.file_size > 16 * 1024 * 1024 and info.file_size > limits.max_compression_ratio * max(info.compress_size, 1)
        ):
            raise _bomb(name, limits)
        try:
            with archive.open(info) as member:
                content = member.read(budget.bytes_left + 1)
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, zlib.error) as exc:
            raise malformed("bad_archive", f"{_shown(name)}: cannot read {_shown(path)} ({exc})") from None
        if len(content) > budget.bytes_left:
            raise _bomb(name, limits)
        _add_member(name, path, content, budget)


def _expand_tar(name: str, data: bytes, budget: Budget) -> None:
    limits = budget.limits
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise malformed("bad_archive", f"{_shown(name)}: not a readable tar file ({exc})") from None
    members = 0
    try:
        while True:
            info = archive.next()
            if info is None:
                break
            members += 1
            if members > limits.max_archive_members:
                raise malformed("too_many_members", f"{_shown(name)}: more than {limits.max_archive_members} entries")
            path = member_name(info.name, name)
            if info.isdir() or _skipped_name(path):
                continue
            if not info.isfile():
                budget.notes.append(f"{_shown(name)}/{_shown(path)}: skipped, not a regular file")
                continue
            if path.lower().endswith(_NESTED_SUFFIXES):
                budget.notes.append(f"{_shown(name)}/{_shown(path)}: skipped, nested archives are not opened")
                continue
            if info.size > budget.bytes_left:
                raise _bomb(name, limits)
            member = archive.extractfile(info)
            content = member.read(budget.bytes_left + 1) if member else b""
            _add_member(name, path, content, budget)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise malformed("bad_archive", f"{_shown(name)}: damaged tar file ({exc})") from None


def _add_member(archive: str, path: str, content: bytes, budget: Budget) -> None:
    budget.add(path, content)  # rank0.log.gz inside a folder archive is expanded (and counted) there
