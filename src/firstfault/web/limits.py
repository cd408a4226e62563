"""What one request may send, and the error a request gets when it sends more.

Every limit is answered with one JSON error shape (or the same message on an HTML page):
413 when something is too large (request body, expanded archive, lines), 422 when the input is
malformed or there is too much of it by count (files, archive members, unsafe archive paths).
"""
from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_request_bytes: int = 64 * MiB  # the raw HTTP body, archives still compressed
    max_total_bytes: int = 256 * MiB  # all log text after archives are expanded
    max_files: int = 512  # log files after archives are expanded
    max_lines: int = 2_000_000  # lines over all files
    max_archive_members: int = 4096  # entries of one archive, folders included
    # expanded/compressed size of one member (over 16 MiB) that counts as a bomb; DEFLATE tops out near
    # 1032:1, which only constant filler reaches (repetitive logs compress 10-100:1)
    max_compression_ratio: int = 1000
    max_concurrent: int = 2  # diagnoses running at once; more requests wait their turn (memory, 2-core hosts)
    # urlencoded bodies are the page's small forms (a sample's name, a delete button); logs come
    # as multipart, JSON or text, whose parsers do not blow a body up ~60 times in memory
    max_form_bytes: int = 1 * MiB
    max_json_depth: int = 8  # {"files": [{"name": ..., "text": ...}]} is 3 deep
    # slow clients: a request's head must arrive within head_timeout seconds of the connection
    # (or of the previous response); its body may pause at most body_idle_timeout seconds and
    # take at most body_timeout seconds in all
    head_timeout: float = 10.0  # (the README states both: `--client-timeout`, default 10)
    body_idle_timeout: float = 10.0
    body_timeout: float = 300.0
    # a body slower than this on average, once body_idle_timeout has passed, is refused (408): a
    # client trickling a byte every few seconds would hold its connection for body_timeout
    min_body_rate: int = 16 * 1024  # bytes per second
    # bodies read or being read at once, over all requests (their Content-Length, else
    # max_request_bytes): beyond it a request is answered 503 with Retry-After at once. Two
    # diagnoses run at a time (each expanding up to max_total_bytes), so more large bodies than
    # about two waiting would only hold memory
    max_inflight_bytes: int = 160 * MiB
    diagnosis_seconds: float = 120.0  # one request's diagnosis (and archive expansion) at most
    diagnoses_per_day: int = 500  # per token, on a server that asks to sign in (429 beyond it)
    concurrent_per_token: int = 2  # requests one signed-in identity may have diagnosing at once (429 beyond)


def size(count: int) -> str:
    """A byte count for a person: 64 MiB, 300 KiB, 512 bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"


class InputRejected(Exception):
    """The request's input breaks a limit or cannot be read; `status` is the HTTP answer."""

    def __init__(self, status: int, code: str, message: str, hint: str = "", retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.retry_after = retry_after  # seconds, sent as Retry-After (503: busy)

    def as_json(self) -> dict:
        return {"error": {"status": self.status, "code": self.code, "message": self.message, "hint": self.hint}}


def too_large(code: str, message: str, hint: str = "") -> InputRejected:
    return InputRejected(413, code, message, hint or "split the logs, or keep only the ranks and the time window around the failure")


def malformed(code: str, message: str, hint: str = "") -> InputRejected:
    return InputRejected(422, code, message, hint)
