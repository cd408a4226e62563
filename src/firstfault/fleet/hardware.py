"""Which failures a host can be blamed for, and how much each weighs. The one place that says so.

A failure counts against the host it started on only when it is the host's doing:
- hardware (weight 1): a GPU that fell off the bus (Xid 79), uncorrectable ECC errors
  (Xid 48/94/95, row remapping), NVLink errors, GSP firmware timeouts, and the InfiniBand fabric
  (HCA port errors, transport retries exhausted);
- node conditions (weight 0.5): the host's state rather than a broken part, or a fault that is
  hardware only some of the time (an unspecified launch failure without an Xid, a driver whose
  library and kernel module disagree, NVSwitch Fabric Manager down).
Every other failure (code, data, configuration, framework, numerics, memory a job asked for) is
never blamed on a host: weight 0. The ids are knowledge-base entry ids; a test checks that each
still exists and sits in the `device` or `network` category, and that every entry tagged
`hardware` is listed.
"""
from __future__ import annotations

HARDWARE = 1.0
NODE_CONDITION = 0.5

HOST_FAULT_WEIGHTS = {
    "gpu-fallen-off-bus": HARDWARE,
    "gpu-ecc-error": HARDWARE,
    "nvlink-error": HARDWARE,
    "gpu-gsp-timeout": HARDWARE,
    "nccl-ib-async-error": HARDWARE,
    "nccl-ib-timeout": HARDWARE,
    "nccl-ib-completion-error": HARDWARE,
    "cuda-launch-failure": NODE_CONDITION,
    "nvidia-driver-library-mismatch": NODE_CONDITION,
    "nvswitch-fabric-manager-down": NODE_CONDITION,
}


def host_fault_weight(failure_id: str | None, entry_id: str | None) -> float:
    """How much a job's failure counts against the host it started on (0: never).

    The more specific entry decides when it is listed; else its core class does (an IB entry
    not listed here whose core class is `nccl-ib-timeout` is still the fabric)."""
    if entry_id and entry_id in HOST_FAULT_WEIGHTS:
        return HOST_FAULT_WEIGHTS[entry_id]
    return HOST_FAULT_WEIGHTS.get(failure_id or "", 0.0)


def is_hardware(failure_id: str | None, entry_id: str | None) -> bool:
    return host_fault_weight(failure_id, entry_id) >= HARDWARE
