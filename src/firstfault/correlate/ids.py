"""The knowledge-base ids the engine itself names, in one place (a test checks each exists)."""
from __future__ import annotations

PEER_CRASH = "collective-timeout-peer-crash"
STRAGGLER = "collective-timeout-straggler"
UNEVEN = "uneven-batches-hang"
MISMATCH = "collective-mismatch"
EXTERNAL_STOP = "preempted-sigterm"
NATIVE_CRASH = "native-crash"
VIRTUAL_INTERFACE = "nccl-virtual-interface"
LAUNCHER_AFTERMATH = "torchelastic-child-failed"
P2P_FAILURE = "nccl-p2p-failure"
HOST_OOM = "host-oom-killed"
RENDEZVOUS = "rendezvous-failure"

ENGINE_IDS = (PEER_CRASH, STRAGGLER, UNEVEN, MISMATCH, EXTERNAL_STOP, NATIVE_CRASH, LAUNCHER_AFTERMATH, VIRTUAL_INTERFACE,
              P2P_FAILURE, HOST_OOM, RENDEZVOUS)

# Failures whose process is ended by a signal (the kernel's SIGKILL, a SIGSEGV of its own): it
# never exits with a code of its own, so a launcher's report of one (1, 2: a Python error's) is
# another process's
SIGNAL_DEATHS = (HOST_OOM, NATIVE_CRASH)

# Aborts (SIGABRT) are also how the NCCL watchdog ends a rank after a collective timeout: with a
# timeout in the job, these signatures are its teardown, not a native crash of their own.
ABORT_CORE_DUMPED = "native-crash/abort-core-dumped"  # the abort itself, as a shell or launcher reports it
ABORT_SIGNATURES = (ABORT_CORE_DUMPED, "native-crash/cpp-terminate")

# torchrun's `Sending process P closing signal SIGTERM` (torchelastic-child-failed): the agent is
# stopping its workers, and the line names the pid of each
CLOSING_SIGNAL = "closing-signal"
# Ray's report of a worker whose process died with no Python error (torchelastic-child-failed)
RAY_ACTOR_DIED = "ray-actor-died"
