"""The knowledge-base ids the engine itself names, in one place (a test checks each exists)."""
from __future__ import annotations

PEER_CRASH = "collective-timeout-peer-crash"
STRAGGLER = "collective-timeout-straggler"
UNEVEN = "uneven-batches-hang"
MISMATCH = "collective-mismatch"
EXTERNAL_STOP = "preempted-sigterm"
NATIVE_CRASH = "native-crash"
LAUNCHER_AFTERMATH = "torchelastic-child-failed"

ENGINE_IDS = (PEER_CRASH, STRAGGLER, UNEVEN, MISMATCH, EXTERNAL_STOP, NATIVE_CRASH, LAUNCHER_AFTERMATH)
