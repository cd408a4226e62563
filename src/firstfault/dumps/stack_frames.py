"""What a frame means: library or user code, inside a collective or not, and its grouping key."""
from __future__ import annotations

import re
from typing import Sequence

from .results import Frame

# Frames in these places are the machinery, not the user's code.
_LIBRARY_PATH = re.compile(
    r"(site-packages|dist-packages)/|^torch/|/lib/python\d+(\.\d+)?/|^<frozen |^threading\.py$"
    r"|^(runpy|threading|selectors|socket|queue|subprocess)\.py$"
    r"|\.so(\.[\d.]+)?$")  # py-spy --native frames: C code in shared libraries
# torch.distributed entry points a rank blocks in while it waits for the others.
COLLECTIVE_FUNCTIONS = frozenset({
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "barrier", "monitored_barrier", "broadcast", "broadcast_object_list",
    "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather", "gather_object", "scatter",
    "scatter_object_list", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "_all_gather_base", "_reduce_scatter_base", "wait", "wait_tensor", "synchronize",
})
_DISTRIBUTED_FILE = re.compile(r"torch/(distributed|csrc/distributed|_C)|distributed_c10d|c10d")


def short_function(function: str) -> str:
    """py-spy writes qualified names ('Thread.run', 'f.<locals>.wrapper'); faulthandler does not."""
    return function.rsplit(".", 1)[-1] if not function.startswith("<") else function


def base_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def is_library(frame: Frame) -> bool:
    return bool(_LIBRARY_PATH.search(frame.file.replace("\\", "/")))


def user_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame in the user's own code, None when every frame is library code."""
    return next((frame for frame in frames if not is_library(frame)), None)


def in_collective(frames: Sequence[Frame]) -> bool:
    return any(short_function(frame.function) in COLLECTIVE_FUNCTIONS
               and _DISTRIBUTED_FILE.search(frame.file.replace("\\", "/")) for frame in frames)


def grouping_key(frames: Sequence[Frame]) -> tuple:
    """Function and file of every frame, caller line numbers too, but not the innermost line:
    a rank blocked in one function moves inside it, a rank at another call site differs."""
    key = []
    for index, frame in enumerate(frames):
        line = 0 if index == 0 else frame.line
        key.append((short_function(frame.function), base_name(frame.file), line))
    return tuple(key)


def describe(frames: Sequence[Frame]) -> str:
    """'load_batch (hang_job.py:45)' or 'all_reduce (distributed_c10d.py:3252) called from
    train (hang_job.py:59)': the innermost frame, and the user's frame when that differs."""
    if not frames:
        return "an empty stack"
    inner = short(frames[0])
    caller = user_frame(frames)
    if caller is None or caller == frames[0]:
        return inner
    return f"{inner} called from {short(caller)}"


def short(frame: Frame) -> str:
    """'train (hang_job.py:59)': the function and the file's base name."""
    where = f"{base_name(frame.file)}:{frame.line}" if frame.line else base_name(frame.file)
    return f"{short_function(frame.function)} ({where})"
