"""Name the rank behind a host-level GPU event (an Xid or ECC line names a PCI bus, not a rank).

NCCL's init lines say which bus each rank drives (`rank 3 nranks 8 cudaDev 3 busId 3b000`);
nvidia-smi says which GPU index sits on a bus (`GPU1: 0000:3B:00.0`), and under the usual
one-process-per-GPU launch the GPU index is the local rank.
"""
from __future__ import annotations

import re

from ..match.context import DEVICE_BUS
from ..model import Match

_PCI = re.compile(r"PCI:(?:[0-9A-Fa-f]{4,8}:)?(?P<bus>[0-9A-Fa-f]{2}):[0-9A-Fa-f]{2}")


def _bus_key(value: str) -> str:
    return value.lower().lstrip("0") or "0"


def bus_of(match: Match) -> str | None:
    """The PCI bus a failure line names (captured as `pci`, or in the `PCI:dddd:bb:dd` form)."""
    found = _PCI.search(match.captures.get("pci") and f"PCI:{match.captures['pci']}" or match.line.text)
    return _bus_key(found.group("bus")) if found else None


def rank_for_bus(bus: str, host: str | None, matches: list[Match]) -> int | None:
    """The rank whose GPU is on `bus` (on `host` when the lines name hosts)."""
    for match in matches:
        name = match.signature.name
        if name not in DEVICE_BUS:
            continue
        origin = match.line.origin
        if host and origin.host and origin.host != host:
            continue
        if name == "device-nccl-bus":
            raw = match.captures["bus"]
            if _bus_key(raw[:-3] if len(raw) > 3 else raw) == bus:
                return int(match.captures["rank"])
        elif _bus_key(match.captures["bus"]) == bus:
            return int(match.captures["device"])
    return None
