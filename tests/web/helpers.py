"""Builders of uploads for the web tests: multi-rank logs, archives good and bad."""
from __future__ import annotations

import gzip
import io
import socket
import tarfile
import zipfile

RANK_LOGS = {
    "rank0.log": (
        "2026-12-02 10:00:00,100 INFO train: rank 0/4 initialized process group (backend=nccl)\n"
        "2026-12-02 10:00:05,000 INFO train: epoch 0 step 10 loss 1.23\n"
        "[rank0]:[E1202 10:10:05.120000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    ),
    "rank1.log": (
        "2026-12-02 10:00:00,100 INFO train: rank 1/4 initialized process group (backend=nccl)\n"
        "2026-12-02 10:00:05,010 INFO train: epoch 0 step 10 loss 1.25\n"
        "[rank1]: Traceback (most recent call last):\n"
        "[rank1]:   File \"/home/alice/train.py\", line 120, in <module>\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n"
    ),
    "rank2.log": (
        "2026-12-02 10:00:00,100 INFO train: rank 2/4 initialized process group (backend=nccl)\n"
        "[rank2]:[E1202 10:10:05.320000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600014 milliseconds before timing out.\n"
    ),
    "rank3.log": (
        "2026-12-02 10:00:00,100 INFO train: rank 3/4 initialized process group (backend=nccl)\n"
        "[rank3]:[E1202 10:10:05.520000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.\n"
    ),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def combined_console() -> str:
    """One pasted console of four ranks (torchrun --tee style): the prefixes name the ranks."""
    return "".join(RANK_LOGS[name] for name in ("rank0.log", "rank1.log", "rank2.log", "rank3.log"))


def tar_gz(files: dict[str, bytes | str], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    # a fixed gzip time, as gz() above: the same bytes every call
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as packed, tarfile.open(fileobj=packed, mode="w") as archive:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def zip_bytes(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def log_folder_tar_gz() -> bytes:
    return tar_gz({f"job-1234/logs/{name}": text for name, text in RANK_LOGS.items()})


def gz(data: bytes) -> bytes:
    """Gzip with a fixed time in its header: the same bytes on every call (test ids are made of
    them, and pytest-xdist's workers must collect the same ids)."""
    return gzip.compress(data, mtime=0)
