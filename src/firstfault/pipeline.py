"""The one entry point every interface calls: ingest -> mask -> match -> correlate.

    diagnose_paths(["logs/"]) -> Diagnosis
    diagnose_texts([("rank0.log", b"...")]) -> Diagnosis      # pasted or uploaded, in memory

Renderers (firstfault.render.*) turn the Diagnosis into text; nothing here prints.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from .model import Diagnosis


def diagnose_paths(paths: Sequence[str], *, mask_hosts: bool = False, observer=None, kb=None) -> Diagnosis:
    """Diagnose files, folders (recursive), globs, .gz files and '-' (stdin)."""
    raise NotImplementedError("engine under construction")


def diagnose_texts(named_texts: Iterable[tuple[str, bytes | str]], *, mask_hosts: bool = False, observer=None, kb=None) -> Diagnosis:
    """Diagnose in-memory logs given as (name, content) pairs; names play the role of file paths."""
    raise NotImplementedError("engine under construction")
