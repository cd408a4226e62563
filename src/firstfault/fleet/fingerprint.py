"""A stable fingerprint of a failure: its class and its first-fault line with the variable parts masked.

    fingerprint("cuda-oom", "[default1]:[rank9]: torch.OutOfMemoryError: ... Tried to allocate 2.00 GiB ...", hosts)
      -> ("5c1f0e2a9b3d7e41", "torch.OutOfMemoryError: ... Tried to allocate <num> GiB ...")

The same failure in two jobs gets the same fingerprint whatever the rank, host, pid, time,
address, size or step; as in Drain-style log grouping, variable tokens are masked before lines
are compared. Launcher prefixes come off with the engine's own prefix parser.
"""
from __future__ import annotations

import hashlib
import re

from ..ingest.attribution import parse_prefix

_NCCL_PREFIX = re.compile(r"^[A-Za-z0-9][\w.-]*:\d+:\d+ \[\d+\] ")  # host:pid:tid [device]
_MASKS = (
    # times: ISO / Python logging, glog, dmesg -T, syslog, dmesg seconds since boot
    (re.compile(r"\d{4}-\d\d-\d\d[T _]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+"), "<time>"),
    (re.compile(r"\[?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}\]?"), "<time>"),
    (re.compile(r"\b[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d\b"), "<time>"),
    (re.compile(r"^\[\s*\d+\.\d+\]"), "<time>"),
    (re.compile(r"\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?\b"), "<pci>"),  # PCI address
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?:<\d+>|:\d+)?"), "<ip>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b[0-9a-fA-F]{12,}\b"), "<hex>"),
    (re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])"), "<num>"),
)
_SPACES = re.compile(r"\s+")
MAX_TEXT = 300


def normalise(line: str, hosts: tuple[str, ...] | list[str] = ()) -> str:
    """The line without launcher prefixes, host names, times, addresses and numbers."""
    prefix = parse_prefix(line)
    text = _NCCL_PREFIX.sub("", line[prefix.offset:])
    for host in sorted(hosts, key=len, reverse=True):
        if host:
            text = text.replace(host, "<host>")
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    return _SPACES.sub(" ", text).strip()[:MAX_TEXT]


def fingerprint(failure_class: str, line: str, hosts: tuple[str, ...] | list[str] = ()) -> tuple[str, str]:
    """(16 hex digits, the normalised line) for a failure class and its first-fault line."""
    text = normalise(line, hosts)
    digest = hashlib.sha1(f"{failure_class}\n{text}".encode("utf-8", "replace")).hexdigest()[:16]
    return digest, text


def contract_fingerprint(contract: dict) -> tuple[str | None, str | None]:
    """The fingerprint of a diagnosis (its JSON contract): the first fault's class and line, or
    for an unexplained failure its first error line; (None, None) for a healthy run."""
    hosts = list((contract.get("inputs") or {}).get("hosts") or [])
    primary = contract.get("primary")
    if primary:
        line = initiating_text(primary, primary.get("initiating") or {})
        return fingerprint(primary.get("failure_id") or "", line, hosts) if line else (None, None)
    first_error = (contract.get("error_lines") or [None])[0]
    if contract.get("status") == "unknown" and first_error:
        return fingerprint("unknown", first_error.get("text") or "", hosts)
    return None, None


def initiating_text(primary: dict, initiating: dict) -> str:
    """The text of the first-fault line among the primary finding's evidence."""
    evidence = primary.get("evidence") or []
    for item in evidence:
        if item.get("source") == initiating.get("source") and item.get("line") == initiating.get("line"):
            return item.get("text") or ""
    return (evidence[0].get("text") or "") if evidence else ""
