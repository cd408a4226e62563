"""Read the PCI bus a host-level GPU event names (an Xid or ECC line names a bus, not a rank);
the identity map (correlate/identity.py) says which rank drives that bus."""
from __future__ import annotations

import re

from ..model import Match
from .identity import normal_bus

_PCI = re.compile(r"PCI:(?:[0-9A-Fa-f]{4,8}:)?(?P<bus>[0-9A-Fa-f]{2}):[0-9A-Fa-f]{2}")


def bus_of(match: Match) -> str | None:
    """The PCI bus a failure line names (captured as `pci`, or in the `PCI:dddd:bb:dd` form)."""
    found = _PCI.search(match.captures.get("pci") and f"PCI:{match.captures['pci']}" or match.line.text)
    return normal_bus(found.group("bus")) if found else None
