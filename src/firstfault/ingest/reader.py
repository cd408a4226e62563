"""Read one input as blocks of decoded lines, with bounded memory and no tracebacks.

Line numbers count '\\n' only, as `grep -n` does. Gzip is recognised by its magic bytes. Lines
longer than MAX_LINE are cut (the cut is reported). Invalid UTF-8 is replaced, and reported.
Binary files are skipped with a reason; a truncated gzip keeps what was read before the damage.
"""
from __future__ import annotations

import gzip
import io
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from .sources import InputFile

BLOCK_BYTES = 4 * 1024 * 1024
MAX_LINE = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
_BINARY_SAMPLE = 8192


class Unreadable(Exception):
    """This input cannot be read at all; the message is the reason shown to the user."""


@dataclass
class ReadStats:
    """What happened while reading one input, for the report."""

    lines: int = 0
    bytes: int = 0
    long_lines: int = 0
    invalid_utf8: bool = False
    truncated: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Block:
    """Consecutive complete lines joined by '\\n' (no trailing one); `first_line` is the
    1-based number of the first."""

    first_line: int
    text: str
    line_count: int

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


def _open_binary(item: InputFile):
    if item.content is not None:
        return io.BytesIO(item.content)
    if item.is_stdin:
        return sys.stdin.buffer
    try:
        return open(item.path, "rb")
    except PermissionError:
        raise Unreadable("permission denied") from None
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None


def _decompressing(raw, item: InputFile):
    head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if head == GZIP_MAGIC:
        return _gzip_reader(raw)
    return raw


def _gzip_reader(raw):
    try:
        from isal import igzip  # about twice as fast as zlib's gzip when installed

        return igzip.IGzipFile(fileobj=raw)
    except ImportError:
        return gzip.GzipFile(fileobj=raw)


def read_blocks(item: InputFile, stats: ReadStats) -> Iterator[Block]:
    """Yield blocks of lines; raise Unreadable before the first block if nothing can be read."""
    raw = io.BufferedReader(_open_binary(item)) if item.content is not None or item.is_stdin else _open_binary(item)
    try:
        stream = _decompressing(raw if hasattr(raw, "peek") else io.BufferedReader(raw), item)
        yield from _blocks(stream, stats)
    finally:
        if not item.is_stdin:
            raw.close()


def _read_chunk(stream, stats: ReadStats) -> bytes:
    try:
        return stream.read(BLOCK_BYTES)
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        if stats.bytes == 0 and "gzip" in type(exc).__name__.lower():
            raise Unreadable(f"not a valid gzip file ({exc})") from None
        stats.truncated = f"input ends early ({exc.__class__.__name__}: {exc}); kept the {stats.lines} lines before it"
        return b""


def _blocks(stream, stats: ReadStats) -> Iterator[Block]:
    pending = b""
    line_number = 1
    first = True
    overlong = False  # inside a line longer than any block: its tail is dropped
    while True:
        chunk = _read_chunk(stream, stats)
        if first:
            first = False
            if not chunk:
                raise Unreadable(stats.truncated or "empty file")
            if _looks_binary(chunk):
                raise Unreadable("binary file (not text); if it is a log archive, extract it first")
        stats.bytes += len(chunk)
        if overlong:
            newline = chunk.find(b"\n")
            if newline < 0 and chunk:
                continue
            overlong, chunk = False, chunk[newline:] if newline >= 0 else chunk
        data = pending + chunk
        if not chunk and not data:
            return
        cut = data.rfind(b"\n") + 1 if chunk else len(data)
        if cut == 0:
            # no line end in this chunk: keep the start of the line, drop its tail
            if len(data) > MAX_LINE:
                pending, overlong = data[:MAX_LINE], True
                stats.long_lines += 1
            else:
                pending = data
            continue
        pending, data = data[cut:], data[:cut]
        if data:
            text = _decode(data, stats)
            count = text.count("\n") + 1
            yield Block(line_number, text, count)
            line_number += count
            stats.lines += count
        if not chunk:
            return


def _looks_binary(sample: bytes) -> bool:
    head = sample[:_BINARY_SAMPLE]
    if b"\x00" in head:
        return True
    control = sum(1 for byte in head if byte < 9 or 13 < byte < 32 and byte != 27)
    return control > len(head) * 0.1


_OVERLONG = re.compile(r"[^\n]{%d}" % (MAX_LINE + 1))


def _decode(data: bytes, stats: ReadStats) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 = True
        text = data.decode("utf-8", errors="replace")
    if text.endswith("\n"):
        text = text[:-1]
    if _OVERLONG.search(text):
        lines = text.split("\n")
        for index, line in enumerate(lines):
            if len(line) > MAX_LINE:
                stats.long_lines += 1
                lines[index] = line[:MAX_LINE]
        text = "\n".join(lines)
    return text
