"""What the first bytes of an input say about it: binary, UTF-16 text, or (else) UTF-8-ish text.

UTF-16 is what Windows PowerShell 5 writes with `>` and `Out-File` (little-endian, with a byte
order mark); such logs are read by transcoding them to UTF-8 as they stream, instead of being
skipped as binary because of their NUL bytes. Without a BOM, UTF-16 is recognised by its NULs:
text in the ASCII range has one in every other byte.
"""
from __future__ import annotations

import codecs
import re
from dataclasses import replace

BINARY_SAMPLE = 8192
_NUL_RUN = re.compile(b"\x00{16,}")  # a hole, not text
_TEXT_BYTES = bytes(byte for byte in range(256) if not (byte < 9 or 13 < byte < 32 and byte != 27))


def utf16_encoding(head: bytes) -> str | None:
    """'utf-16' (with a BOM), 'utf-16-le' or 'utf-16-be' when `head` is UTF-16 text, else None."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    sample = head[:BINARY_SAMPLE]
    sample = sample[:len(sample) - len(sample) % 2]
    if len(sample) < 8:
        return None
    even, odd = sample[0::2], sample[1::2]
    even_nuls, odd_nuls, pairs = even.count(0), odd.count(0), len(sample) // 2
    if odd_nuls >= pairs * 0.9 and even_nuls <= pairs * 0.02:
        return "utf-16-le"
    if even_nuls >= pairs * 0.9 and odd_nuls <= pairs * 0.02:
        return "utf-16-be"
    return None


def looks_binary(sample: bytes) -> bool:
    """More than 10% control bytes, or of bytes that are no UTF-8, in the first 8 KiB of text
    (UTF-16 text is not binary). A stray NUL counts as a control byte: a text log can hold a few
    (torch's DataLoader writes one after its `Unexpected bus error encountered in worker` line).
    Runs of NULs are holes (a file copied and truncated while written, a crashed writer's
    preallocated end) and are passed over, to the text after them when a hole fills the sample."""
    if b"\x00" in sample[:BINARY_SAMPLE] and utf16_encoding(sample[:BINARY_SAMPLE]) is not None:
        return False
    holes = b"\x00" in sample[:BINARY_SAMPLE * 4]  # (the regex over 32 KiB only where a NUL is)
    text = (_NUL_RUN.sub(b"", sample[:BINARY_SAMPLE * 4]) if holes else sample)[:BINARY_SAMPLE]
    if not text:
        return True  # nothing but NULs
    control = len(text.translate(None, _TEXT_BYTES))  # the control bytes (and stray NULs) that remain
    if control > len(text) * 0.1:
        return True
    return text.decode("utf-8", "replace").count("\ufffd") > len(text) * 0.1  # compressed or random bytes


class Utf16Stream:
    """A binary stream of UTF-16 text read as UTF-8; `head` is what was read from it already."""

    def __init__(self, raw, encoding: str, head: bytes = b"") -> None:
        self._raw = raw
        self._head = head
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._done = False

    def read(self, size: int) -> bytes:
        out = b""
        while not out and not self._done:
            if self._head:
                data, self._head = self._head, b""
            else:
                data = self._raw.read(max(2, size))
            self._done = not data
            out = self._decoder.decode(data, final=self._done).encode("utf-8")
        return out

    def close(self) -> None:
        pass


MAX_TRANSCODED_BYTES = 64 * 1024 * 1024  # a UTF-16 paste read whole as UTF-8 (larger ones stream)


def as_utf8(item, head: bytes | None):
    """`item` (an ingest.sources.InputFile) as UTF-8 content when it is a UTF-16 text of at most
    MAX_TRANSCODED_BYTES, so that what is done to a pasted text (a margin, line numbers, hard
    wraps, several files in one) is done to it too; else `item` itself."""
    encoding = utf16_encoding(head) if head else None
    data = item.whole(MAX_TRANSCODED_BYTES) if encoding else None
    if data is None:
        return item
    return replace(item, path=None, content=data.decode(encoding, "replace").encode("utf-8"))
