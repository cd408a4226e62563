"""Redaction at ingress: nothing unmasked goes further.

Secrets, e-mail addresses and home-directory user names are replaced before a line is matched,
stored or printed, by the detectors of the catalogue (detectors.yaml: each kind of secret with
examples that must be masked and near-misses that must not). Hosts and IPs get stable
pseudonyms only when asked (`--mask-hosts`, hosts.py), since the failing host is part of the
answer.

    mask_secrets(text) -> text        # a line, a block of lines, a name, a note
"""
from __future__ import annotations

from .catalogue import CatalogueError, check_catalogue, load_masker
from .hosts import HostMasker

__all__ = ["mask_secrets", "HostMasker", "CatalogueError", "check_catalogue", "load_masker"]


def mask_secrets(text: str) -> str:
    """Replace every secret the catalogue knows in `text`."""
    return load_masker().mask(text)
