"""Faults train.py plants that take more than a line: native crashes, real hangs, a retried download.

Each one is the real thing, not a message that imitates it: the native crashes die by the signal the
hardware or the C runtime raises (so no Python traceback is printed), the hangs block in a system call
that never returns, the download fails on a real connection. train.py runs as a script under torchrun,
so it imports this module as a sibling file; nothing here knows about firstfault.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import platform
import queue
import resource
import signal
import socket
import threading
import time
import urllib.request
from pathlib import Path

NATIVE_CRASHES = ("segfault", "bus-error", "abort", "cxx-terminate", "illegal-instruction", "fpe")

# Machine code for the faults only the CPU raises. x86-64: `ud2`; `xor ecx,ecx; cdq; idiv ecx; ret`.
# AArch64: `udf #0` (integer division by zero does not trap there, so SIGFPE has no AArch64 code).
_ILLEGAL_INSTRUCTION = {"x86_64": b"\x0f\x0b", "AMD64": b"\x0f\x0b", "aarch64": b"\x00\x00\x00\x00",
                        "arm64": b"\x00\x00\x00\x00"}
_DIVIDE_BY_ZERO = {"x86_64": b"\x31\xc9\x99\xf7\xf9\xc3", "AMD64": b"\x31\xc9\x99\xf7\xf9\xc3"}


def crash_natively(kind: str, scratch_dir: str) -> None:
    """Die the way native code dies: by a fatal signal, with no Python traceback."""
    if kind == "segfault":
        ctypes.string_at(0)  # a NULL pointer read in native code
    elif kind == "bus-error":
        _read_truncated_mapping(Path(scratch_dir) / f"feature-cache-{os.getpid()}.bin")
    elif kind == "abort":
        os.abort()  # what a failed C assert() does
    elif kind == "cxx-terminate":
        _throw_uncaught_cxx_exception("shard reader: record 4096 extends past the end of the shard")
    elif kind == "illegal-instruction":
        _run_machine_code(_ILLEGAL_INSTRUCTION, signal.SIGILL)
    elif kind == "fpe":
        _run_machine_code(_DIVIDE_BY_ZERO, signal.SIGFPE)
    raise ValueError(f"unknown native crash {kind!r}")


def _read_truncated_mapping(path: Path) -> None:
    """Map a cache file, let it be truncated underneath (as a rebuild by another process does), read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * (1 << 20))
    with open(path, "rb") as handle:
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    os.truncate(path, 0)
    mapping[1 << 16]  # the page is gone: the kernel raises SIGBUS


def _throw_uncaught_cxx_exception(message: str) -> None:
    """Throw a std::runtime_error from native code with no handler: libstdc++ calls std::terminate."""
    cxx = ctypes.CDLL("libstdc++.so.6")
    cxx.__cxa_allocate_exception.restype = ctypes.c_void_p
    cxx.__cxa_allocate_exception.argtypes = [ctypes.c_size_t]
    exception = cxx.__cxa_allocate_exception(64)  # more than sizeof(std::runtime_error) on every ABI
    constructor = cxx._ZNSt13runtime_errorC1EPKc  # std::runtime_error::runtime_error(const char*)
    constructor.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    constructor(exception, message.encode())
    type_info = ctypes.c_char.in_dll(cxx, "_ZTISt13runtime_error")
    destructor = ctypes.cast(cxx._ZNSt13runtime_errorD1Ev, ctypes.c_void_p)
    cxx.__cxa_throw.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    cxx.__cxa_throw(exception, ctypes.addressof(type_info), destructor)


def _run_machine_code(code_by_machine: dict, fallback: signal.Signals) -> None:
    code = code_by_machine.get(platform.machine())
    if code is None:  # no instruction raises it on this CPU: the signal is still the one native code gets
        signal.raise_signal(fallback)
        return
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    ctypes.CFUNCTYPE(ctypes.c_int)(address)()


def load_jpeg_decoder() -> ctypes.CDLL:
    """Load the GPU JPEG decoder's shared library, as a data pipeline does at start-up: a node whose
    image lacks it fails here with the dynamic loader's error (OSError)."""
    return ctypes.CDLL("libnvjpeg.so.12")


def lose_write_permission(path: Path) -> None:
    """Make `path` unwritable to this process, as a volume mounted for another user is. Root passes
    every permission check, so a root process first becomes `nobody` (the job's user on that node);
    any other user gets a symlink into a folder it may not write."""
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
        return
    locked = path.parent / ".other-users-volume"
    locked.mkdir(exist_ok=True)
    locked.chmod(0o555)
    path.unlink(missing_ok=True)
    path.symlink_to(locked / path.name)


def block_writing_shard(path: Path) -> None:
    """Open a checkpoint shard for writing where the open never returns (a FIFO nobody reads,
    as a hung network mount behaves): the rank is stuck in a system call, printing nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    with open(path, "wb") as handle:
        handle.write(b"")


def wait_for_silent_service() -> None:
    """Ask a scoring service that accepts the connection and never answers, with no timeout."""
    service = socket.socket()
    service.bind(("127.0.0.1", 0))
    service.listen(1)  # nobody ever accepts: the request sits in the backlog
    url = f"http://127.0.0.1:{service.getsockname()[1]}/score"
    urllib.request.urlopen(url, data=b'{"split": "heldout"}')  # no timeout= : blocks in recv forever


def start_upload_thread(log) -> queue.Queue:
    """A checkpoint uploader thread that is not a daemon: the interpreter waits for it at exit."""
    uploads: queue.Queue = queue.Queue()

    def upload_forever():
        while True:
            path = uploads.get()
            log.info("uploaded %s", path)

    threading.Thread(target=upload_forever, name="ckpt-uploader").start()
    return uploads


def fetch_with_retry(url: str, log, tries: int = 5, delay: float = 0.2) -> bytes:
    """Download with retries, logging every failed attempt with its traceback."""
    for attempt in range(1, tries + 1):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = response.read()
            log.info("downloaded %s (%d bytes) on attempt %d/%d", url, len(body), attempt, tries)
            return body
        except OSError:
            if attempt == tries:
                raise
            log.warning("download of %s failed (attempt %d/%d), retrying in %.1fs", url, attempt, tries, delay,
                        exc_info=True)
            time.sleep(delay)
    raise AssertionError("unreachable")


def limit_address_space(headroom: int) -> None:
    """Cap this process's virtual memory `headroom` bytes above what it maps now, as `ulimit -v` in a
    container does: the next large allocation fails with ENOMEM instead of being overcommitted."""
    with open("/proc/self/status") as status:
        mapped_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (mapped_kib * 1024 + headroom, resource.getrlimit(resource.RLIMIT_AS)[1]))
