"""Read one input as blocks of decoded lines, with bounded memory and no tracebacks.

Line numbers count '\\n' only, as `grep -n` does. Gzip is recognised by its magic bytes
(gzip_stream.py), UTF-16 by its BOM or NULs (encoding.py). Lines longer than MAX_LINE are cut
(the cut is reported). Invalid UTF-8 is replaced, and reported. Binary files are skipped with a
reason; a damaged gzip keeps everything before the damage; an input with a size limit
(`InputFile.max_bytes`, uploads) stops expanding at the limit.
"""
from __future__ import annotations

import gzip
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from .encoding import BINARY_SAMPLE, Utf16Stream, looks_binary, utf16_encoding
from .gzip_stream import GZIP_MAGIC, ExpansionLimit, GzipStream
from .sources import InputFile

BLOCK_BYTES = 4 * 1024 * 1024
MAX_LINE = 64 * 1024


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


class Block:
    """Consecutive complete lines joined by '\\n' (no trailing one); `first_line` is the
    1-based number of the first. `data` is the UTF-8 bytes as read (over-long lines cut);
    `text` is decoded on first use, undecodable bytes replaced. `line_count` is counted on
    first use too, unless a consumer that counts lines anyway sets it. `span`: (offset, size)
    of the bytes on disk it was made of, when read from a plain file (see read_span)."""

    __slots__ = ("first_line", "data", "_line_count", "_text", "span")

    def __init__(self, first_line: int, data: bytes, line_count: int | None = None, text: str | None = None,
                 span: tuple[int, int] | None = None) -> None:
        self.first_line = first_line
        self.data = data
        self._line_count = line_count
        self._text = text
        self.span = span

    def rewrite(self, data: bytes) -> None:
        """Replace the block's bytes by the same lines said another way (as many of them): no
        longer the bytes on disk, so it is kept, not read again from its span."""
        self.data, self._text, self.span = data, None, None

    @property
    def line_count(self) -> int:
        if self._line_count is None:
            self._line_count = newlines(self.data) + 1
        return self._line_count

    @line_count.setter
    def line_count(self, count: int) -> None:
        self._line_count = count

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.data.decode("utf-8", "replace")
        return self._text

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


COUNT_BY_DELETION_MIN = 1 << 20
SAMPLE_BYTES = 65536
LONG_LINE = 48  # bytes a line on average, from which deleting the line ends counts them faster


def newlines(data: bytes) -> int:
    """How many '\n' `data` holds. `bytes.count` tests every byte (about 1.5 GB/s); deleting them
    with `bytes.replace` finds them with memchr first and, copy included, takes half as long when
    lines are long, twice as long when they are short: the first 64 KiB tell which."""
    if len(data) < COUNT_BY_DELETION_MIN:
        return data.count(b"\n")
    sampled = min(len(data), SAMPLE_BYTES)
    if data.count(b"\n", 0, sampled) * LONG_LINE > sampled:
        return data.count(b"\n")
    return len(data) - len(data.replace(b"\n", b""))


def _open_binary(item: InputFile):
    if item.content is not None:
        return io.BytesIO(item.content)
    if item.is_stdin:
        return _Prefixed(item.stdin_head, sys.stdin.buffer) if item.stdin_head else sys.stdin.buffer
    try:
        return open(item.path, "rb")
    except PermissionError:
        raise Unreadable("permission denied") from None
    except FileNotFoundError:
        raise Unreadable("no longer there: deleted or moved while firstfault ran") from None
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None


class _Prefixed(io.RawIOBase):
    """Bytes already read from a stream (standard input's first, see sources.stdin_in_memory), then
    the rest of that stream."""

    def __init__(self, head: bytes, rest) -> None:
        self._head, self._rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size], self._head = self._head[:size], self._head[size:]
            return size
        data = self._rest.read1(len(buffer)) if hasattr(self._rest, "read1") else self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def _decompressing(raw, item: InputFile):
    head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if head == GZIP_MAGIC:
        return GzipStream(raw, limit=item.max_bytes)
    return raw


def read_blocks(item: InputFile, stats: ReadStats, decode: bool = True, start: int = 0,
                stop: int | None = None, first_line: int = 1) -> Iterator[Block]:
    """Yield blocks of lines; raise Unreadable before the first block if nothing can be read.

    With `decode=False` blocks are not decoded up front (their `text` is decoded on first use)
    and `stats.invalid_utf8` is left to the caller, which checks `data` its own way.

    `start`/`stop` (multiples of BLOCK_BYTES; a plain file on disk only, see `range_start`) give
    the blocks a whole read gives from its reads between those offsets: the line that begins
    before `start` and ends after it comes first, the line the read at `stop` cuts is left to
    the next range. Their line numbers count from `first_line`.
    """
    raw = io.BufferedReader(_open_binary(item)) if item.content is not None or item.is_stdin else _open_binary(item)
    try:
        if start or stop is not None:
            yield from _range_blocks(raw, stats, decode, start, stop, first_line)
            return
        if item.path is not None and _plain_text_file(raw):
            yield from _plain_blocks(raw, stats, decode, 0, 0, None, first_line)
            return
        stream = _decompressing(raw if hasattr(raw, "peek") else io.BufferedReader(raw), item)
        yield from _blocks(stream, stats, decode, line_number=first_line)
    finally:
        if not item.is_stdin:
            raw.close()


def read_span(item: InputFile, span: tuple[int, int], first_line: int) -> Block:
    """The block read from `span` of a plain file on disk (Block.span), read again as it was."""
    offset, size = span
    try:
        with open(item.path, "rb") as handle:
            data = os.pread(handle.fileno(), size, offset)
    except OSError as exc:
        raise Unreadable(f"could not be read again ({exc.strerror or exc})") from None
    if len(data) != size:
        raise Unreadable("it changed while firstfault read it")
    return Block(first_line, without_terminal_codes(_cut_long_lines(data, ReadStats())), span=span)


def range_start(handle, offset: int) -> int | None:
    """Where the block a whole read gives at `offset` (a multiple of BLOCK_BYTES) begins: after
    the last line end of the read before it. None when that read holds no line end in its last
    MAX_LINE bytes (a line that long is not cut there)."""
    if offset == 0:
        return 0
    window = min(MAX_LINE, offset)
    handle.seek(offset - window)
    before = handle.read(window)
    newline = before.rfind(b"\n")
    return None if newline < 0 or len(before) < window else offset - window + newline + 1


def _range_blocks(raw, stats: ReadStats, decode: bool, start: int, stop: int | None, first_line: int) -> Iterator[Block]:
    begin = range_start(raw, start)
    if begin is None:
        raise Unreadable("a range cannot start inside a line longer than 64 KiB")
    if _plain_text_file(raw):
        yield from _plain_blocks(raw, stats, decode, begin, start, stop, first_line)
        return
    raw.seek(begin)
    pending = raw.read(start - begin)
    yield from _blocks(raw, stats, decode, pending=pending, first=start == 0,
                       budget=None if stop is None else stop - start, line_number=first_line)


TAIL_PROBE = 8192  # bytes read at a read's end to find its last line end


def _plain_text_file(raw) -> bool:
    """A regular file that starts as text (not gzip, UTF-16, binary or empty): its blocks can be
    read by _plain_blocks."""
    if not hasattr(os, "pread"):
        return False
    try:
        descriptor = raw.fileno()
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return False
        head = os.pread(descriptor, BINARY_SAMPLE, 0)
    except (OSError, AttributeError, io.UnsupportedOperation):
        return False
    return starts_as_plain_text(head)


def starts_as_plain_text(head: bytes) -> bool:
    """Whether a file whose first bytes are `head` is read as the bytes it holds: not empty, not
    gzip, not UTF-16, not binary (what the first read of _blocks checks)."""
    return bool(head) and head[:2] != GZIP_MAGIC and utf16_encoding(head) is None and not looks_binary(head)


def _plain_blocks(raw, stats: ReadStats, decode: bool, begin: int, start: int, stop: int | None,
                  line_number: int) -> Iterator[Block]:
    """The blocks _blocks gives for the reads of a plain file from `start` to `stop` (the first
    beginning with the line that begins at `begin`), each read from disk at once: the end of
    each BLOCK_BYTES read is probed for its last line end, then the lines up to it are read
    exactly, so a block is not copied again to cut it there or to join a line the read before
    split. What follows the last line end of the file (a last line without one, or what was
    written since it was opened), and a read without a line end in its last TAIL_PROBE bytes, go
    to _blocks (same blocks, as read)."""
    descriptor = raw.fileno()
    size_now = os.fstat(descriptor).st_size
    position, offset = begin, start  # the next block's first byte (a line start); the next read's
    while stop is None or offset < stop:
        limit = offset + (BLOCK_BYTES if stop is None else min(BLOCK_BYTES, stop - offset))
        last = limit >= size_now  # this read reaches the end of the file
        limit = min(limit, size_now)
        probe = min(TAIL_PROBE, limit - offset)
        tail = os.pread(descriptor, probe, limit - probe) if probe > 0 else b""
        newline = tail.rfind(b"\n") if probe > 0 and len(tail) == probe else -1
        if newline < 0:
            break
        end = limit - probe + newline
        if last and limit > end + 1:
            end = limit  # the file's last line has no line end: it stays in its block (a report cut in two reads apart)
        data = os.pread(descriptor, end - position, position)
        if len(data) != end - position:
            break  # the file changed under us
        stats.bytes += limit - offset
        line_number = yield from _block(data, line_number, stats, decode, (position, end - position))
        position, offset = min(end + 1, limit), limit
        if last:
            break
    else:
        return  # the line the read at `stop` cuts is the next range's
    raw.seek(position)
    pending = raw.read(offset - position)
    yield from _blocks(raw, stats, decode, pending=pending, first=offset == 0,
                       budget=None if stop is None else stop - offset, line_number=line_number)


READ_PIECE = 256 * 1024


def _read_chunk(stream, stats: ReadStats, budget: int | None = None) -> bytes:
    """Up to BLOCK_BYTES, and no more than `budget`; a damaged or cut-off stream keeps every
    byte read before the damage."""
    pieces: list[bytes] = []
    size = 0
    limit = BLOCK_BYTES if budget is None else min(BLOCK_BYTES, budget)
    # a plain file is read in one call (one copy); gzip in pieces
    piece_size = READ_PIECE if isinstance(stream, GzipStream) else BLOCK_BYTES
    while size < limit:
        try:
            piece = stream.read(min(piece_size, limit - size))
        except ExpansionLimit:
            stats.truncated = f"expands beyond {stream.limit} bytes, the limit for one input; kept the first {stream.limit} bytes"
            break
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
            if stats.bytes == 0 and size == 0 and isinstance(exc, gzip.BadGzipFile) and "corrupt" not in str(exc):
                raise Unreadable(f"not a valid gzip file ({exc})") from None
            read = stats.bytes + size
            stats.truncated = f"input ends early ({exc.__class__.__name__}: {exc}); kept the {read} bytes read before it"
            break
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _blocks(stream, stats: ReadStats, decode: bool = True, pending: bytes = b"", first: bool = True,
            budget: int | None = None, line_number: int = 1) -> Iterator[Block]:
    """`pending`: the start of a line whose end is not read yet (never holds a '\n'); a range
    starts with the one the read before it left. `budget`: the bytes a range reads; the line
    its last read cuts is left for the next range."""
    overlong = False  # inside a line longer than any block: its tail is dropped
    held = None  # the last read's complete lines, yielded once the next read shows whether the text ends there
    while True:
        if budget is not None and budget <= 0:
            if held is not None:
                yield from _block(held, line_number, stats, decode)
            return
        chunk = _read_chunk(stream, stats, budget)
        if budget is not None:
            budget = budget - len(chunk) if chunk else None  # the file ended first: read to its end
        if first:
            first = False
            encoding = utf16_encoding(chunk)
            if encoding:  # PowerShell's default: read as the text it is
                stream = Utf16Stream(stream, encoding, chunk)
                chunk = _read_chunk(stream, stats)
            if not chunk:
                raise Unreadable(stats.truncated or "empty file")
            if looks_binary(chunk):
                raise Unreadable("binary file (not text); if it is a log archive, extract it first")
        stats.bytes += len(chunk)
        if overlong:
            newline = chunk.find(b"\n")
            if newline < 0 and chunk:
                continue
            overlong, chunk = False, chunk[newline:] if newline >= 0 else chunk
        if not chunk:
            if held is not None:  # the last line, without a line end, stays in the block of the lines before it
                yield from _block(b"\n".join((held, pending)) if pending else held, line_number, stats, decode)
            elif pending:  # the last line, without a line end
                yield from _block(pending, line_number, stats, decode)
            return
        newline = chunk.rfind(b"\n")
        if newline < 0:
            # no line end in this chunk: keep the start of the line, drop its tail
            data = pending + chunk
            if len(data) > MAX_LINE:
                pending, overlong = data[:MAX_LINE], True
                stats.long_lines += 1
            else:
                pending = data
            continue
        # the complete lines, joined without copying the chunk twice, and without the last '\n'
        data = b"".join((pending, memoryview(chunk)[:newline])) if pending else chunk[:newline]
        pending = chunk[newline + 1:]
        if held is not None:
            line_number = yield from _block(held, line_number, stats, decode)
        held = data


def _block(data: bytes, line_number: int, stats: ReadStats, decode: bool, span: tuple[int, int] | None = None):
    data = _cut_long_lines(data, stats)
    data = without_terminal_codes(data)
    block = Block(line_number, data, None, _decode(data, stats) if decode else None, span)
    yield block
    count = block.line_count  # counted by now if the consumer numbered lines itself
    stats.lines += count
    return line_number + count


_WINDOW = MAX_LINE // 2
# Terminal control sequences in a log captured with its colours (rich, loguru, colorlog, a CI
# runner, `script`): colours, cursor moves and line erases (CSI) and character set choices
# (`ESC ( B`, tput sgr0's). No one reads them, and they split the words a signature looks for
# (`\x1b[31mERROR\x1b[0m:`). Other sequences (an OSC clipboard write or link) stay, for the
# reports to show escaped: they are not colour, and may be an attack worth seeing.
_TERMINAL_CODES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|[()*+][0-~])")


def without_terminal_codes(data: bytes) -> bytes:
    """`data` without colour, cursor and character-set sequences (see _TERMINAL_CODES)."""
    return _TERMINAL_CODES.sub(b"", data) if b"\x1b" in data else data  # a memchr: ~0.15 ms a 4 MiB block


def _cut_long_lines(data: bytes, stats: ReadStats) -> bytes:
    """Cut lines longer than MAX_LINE characters to their first MAX_LINE characters.

    A line longer than MAX_LINE bytes covers a whole aligned window of MAX_LINE/2 bytes, so only
    windows without a newline need a closer look (a few `find` calls per block otherwise)."""
    find, rfind = data.find, data.rfind
    long_spans = []
    position = 0
    for window in range(0, len(data), _WINDOW):
        if window < position or find(b"\n", window, window + _WINDOW) >= 0:
            continue
        start = rfind(b"\n", 0, window) + 1
        end = find(b"\n", window)
        end = len(data) if end < 0 else end
        position = end
        if end - start > MAX_LINE and len(data[start:end].decode("utf-8", "replace")) > MAX_LINE:
            long_spans.append((start, end))
    if not long_spans:
        return data
    pieces, previous = [], 0
    for start, end in long_spans:
        stats.long_lines += 1
        pieces.append(data[previous:start])
        pieces.append(data[start:end].decode("utf-8", "replace")[:MAX_LINE].encode("utf-8"))
        previous = end
    pieces.append(data[previous:])
    return b"".join(pieces)


def _decode(data: bytes, stats: ReadStats) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 = True
        return data.decode("utf-8", errors="replace")
