"""Markers -> LSP diagnostics, grouped by the file they lie in.

    diagnostics_by_uri(markers, href) -> {uri: [Diagnostic, ...]}

Every marker becomes a diagnostic on its exact line (LSP lines count from 0), source
"firstfault", its knowledge-base entry as the `code`, linked through `codeDescription`, and its
links to other lines as `relatedInformation`. Positions count UTF-16 code units, the protocol's
default, so a line with non-ASCII text is underlined to its end in every editor.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from lsprotocol import types

from .markers import ERROR, INFORMATION, WARNING, Marker

SOURCE = "firstfault"
SEVERITIES = {
    ERROR: types.DiagnosticSeverity.Error,
    WARNING: types.DiagnosticSeverity.Warning,
    INFORMATION: types.DiagnosticSeverity.Information,
}


def uri_of(source: str) -> str:
    """The file URI of a path the diagnosis names (absolute: the server diagnoses absolute paths)."""
    return Path(source).absolute().as_uri()


def line_range(line: int, text: str = "") -> types.Range:
    """The whole of 1-based `line`, as far as `text` (the line as the log has it) reaches."""
    row = max(line - 1, 0)
    return types.Range(start=types.Position(line=row, character=0),
                       end=types.Position(line=row, character=_utf16_length(text.rstrip("\r\n"))))


def diagnostics_by_uri(markers: Iterable[Marker], href: Callable[[str], str]) -> dict[str, list[types.Diagnostic]]:
    """The diagnostics of every file a marker lies in. `href(entry_id)` links an entry."""
    links: dict[str, str] = {}
    grouped: dict[str, list[types.Diagnostic]] = {}
    for marker in markers:
        description = None
        if marker.entry_id:
            if marker.entry_id not in links:
                links[marker.entry_id] = href(marker.entry_id)
            description = types.CodeDescription(href=links[marker.entry_id])
        related = [types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri_of(item.source), range=line_range(item.line)), message=item.message)
            for item in marker.related] or None
        grouped.setdefault(uri_of(marker.source), []).append(types.Diagnostic(
            range=line_range(marker.line, marker.text), message=marker.message, severity=SEVERITIES[marker.severity],
            source=SOURCE, code=marker.entry_id or None, code_description=description, related_information=related,
            data={"kind": marker.kind, "entry": marker.entry_id},
        ))
    return grouped


def unread_diagnostic(reason: str) -> types.Diagnostic:
    """On a file the diagnosis could not read (binary, empty, unreadable): why, on its first line."""
    return types.Diagnostic(range=line_range(1), message=f"firstfault did not read this file: {reason}",
                            severity=types.DiagnosticSeverity.Warning, source=SOURCE, data={"kind": "unread"})


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
