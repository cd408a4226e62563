"""Streaming gzip that hands over every byte it could decompress, in time linear in its output.

- Output is produced in bounded pieces (`max_length`), so one compressed piece that expands
  a thousandfold (a single-line log, a bomb) never lands in memory at once, and nothing is
  copied more than a constant number of times.
- `limit` stops the expansion after that many bytes (`ExpansionLimit`): every byte decompressed
  counts, whatever the compression ratio.
- Damage (corrupt data, a bad CRC, a cut-off file) keeps every byte before it, at any offset:
  the stream is decoded again up to the damaged piece, which is then fed byte by byte. With isal
  (fast, no decoder copies) that needs a seekable input; stdin is decoded with zlib, which keeps
  a copy of its state before each piece.
"""
from __future__ import annotations

import gzip
import zlib

GZIP_MAGIC = b"\x1f\x8b"
_WBITS = 16 + zlib.MAX_WBITS


class ExpansionLimit(Exception):
    """The decompressed data passed the limit given for this input."""


def _fast_zlib():
    try:
        from isal import isal_zlib  # about twice as fast as zlib when installed

        return isal_zlib
    except ImportError:
        return zlib


class GzipStream:
    RAW_PIECE = 64 * 1024  # compressed bytes read at a time
    OUT_PIECE = 1 << 20  # decompressed bytes produced per call at most

    def __init__(self, raw, limit: int | None = None) -> None:
        self._raw = raw
        self._seekable = bool(getattr(raw, "seekable", lambda: False)())
        self._zlib = _fast_zlib() if self._seekable else zlib
        self._errors = tuple({zlib.error, getattr(self._zlib, "error", zlib.error)})
        self._origin = raw.tell() if self._seekable else 0
        self.limit = limit
        self.produced = 0  # decompressed bytes so far, all members
        self._decoder = self._zlib.decompressobj(_WBITS)
        self._checkpoint = None  # zlib only: the decoder before the piece being decoded
        self._pending = b""  # compressed bytes not consumed yet
        self._member_start = self._origin  # raw offset where the current member began
        self._member_output = 0  # bytes the current member produced so far
        self._read_to = self._origin  # raw offset after the last compressed byte read
        self._buffer = bytearray()
        self._offset = 0
        self._eof = False
        self._error: Exception | None = None

    def read(self, size: int) -> bytes:
        while len(self._buffer) - self._offset < size and not self._eof:
            self._fill()
        data = bytes(self._buffer[self._offset:self._offset + size])
        self._offset += len(data)
        if self._offset > (1 << 20) and self._offset * 2 > len(self._buffer):
            del self._buffer[:self._offset]  # amortised: only once half the buffer is consumed
            self._offset = 0
        if not data and self._error is not None:
            error, self._error = self._error, None
            raise error
        return data

    def close(self) -> None:
        pass

    def _fill(self) -> None:
        if not self._pending:
            self._pending = self._raw.read(self.RAW_PIECE)
            self._read_to += len(self._pending)
            if not self._pending:
                started = self._member_output or self._read_to > self._member_start
                if started and not self._decoder.eof:
                    try:
                        self._take(self._decoder.flush())  # output owed for input already read
                    except self._errors:
                        pass
                self._eof = True
                if started and not self._decoder.eof:
                    self._error = EOFError("compressed file ended before the end-of-stream marker was reached")
                return
        piece_start = self._read_to - len(self._pending)
        if self._zlib is zlib:
            self._checkpoint = self._decoder.copy()
        try:
            out = self._decoder.decompress(self._pending, self.OUT_PIECE)
        except self._errors as exc:
            self._recover(piece_start, self._pending)
            self._fail(gzip.BadGzipFile(f"corrupt gzip data: {exc}"))
            return
        self._pending = self._decoder.unconsumed_tail
        self._take(out)
        if self._decoder.eof:
            rest = self._decoder.unused_data + self._pending
            self._member_start = self._read_to - len(rest)
            self._member_output = 0
            self._decoder = self._zlib.decompressobj(_WBITS)  # concatenated members
            self._pending = rest

    def _take(self, out: bytes) -> None:
        if self.limit is not None and self.produced + len(out) > self.limit:
            out = out[:max(0, self.limit - self.produced)]
            self._buffer += out
            self.produced += len(out)
            self._fail(ExpansionLimit(f"expands beyond {self.limit} bytes"))
            return
        self._buffer += out
        self.produced += len(out)
        self._member_output += len(out)

    def _fail(self, error: Exception) -> None:
        self._eof = True
        self._error = error
        self._pending = b""

    def _recover(self, piece_start: int, piece: bytes) -> None:
        """Everything the damaged piece decodes to before its damage."""
        decoder = self._checkpoint if self._zlib is zlib else self._replayed_decoder(piece_start)
        if decoder is None or self._error is not None:
            return
        for index in range(len(piece)):
            try:
                out = decoder.decompress(piece[index:index + 1])
            except zlib.error:
                return
            if self._error is None:
                self._take(out)
            if decoder.eof or self._eof:
                return

    def _replayed_decoder(self, piece_start: int):
        """A zlib decoder in the state the fast decoder had at `piece_start`: the member is
        decoded again from its start; of its output only what was not delivered yet is kept."""
        try:
            position = self._raw.tell()
            self._raw.seek(self._member_start)
            decoder = zlib.decompressobj(_WBITS)
            remaining = piece_start - self._member_start
            replayed, owed = 0, self._member_output
            while remaining > 0:
                data = self._raw.read(min(self.RAW_PIECE, remaining))
                if not data:
                    return None
                remaining -= len(data)
                while data:
                    out = decoder.decompress(data, self.OUT_PIECE)
                    data = decoder.unconsumed_tail
                    if replayed + len(out) > owed:  # output the fast decoder still owed
                        self._take(out[max(0, owed - replayed):])
                        owed = replayed + len(out)
                    replayed += len(out)
            self._raw.seek(position)
            return decoder
        except (OSError, zlib.error, ValueError):
            return None
