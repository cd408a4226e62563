"""Start a training script in N processes with torch.multiprocessing.spawn, as many repositories do.

    python spawn_launch.py NPROCS MASTER_PORT SCRIPT [SCRIPT ARGS...]

Process i gets RANK=LOCAL_RANK=i, WORLD_SIZE=NPROCS and MASTER_ADDR/MASTER_PORT, and runs SCRIPT as
`__main__`. When a process dies, spawn stops the others and raises in the parent
(`ProcessExitedException: process i terminated with signal ...`, or `ProcessRaisedException` with
the worker's traceback): the console then holds what a user of `mp.spawn` sees.
"""
from __future__ import annotations

import os
import runpy
import sys


def _worker(index: int, nprocs: int, port: str, script: str, argv: list[str]) -> None:
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index), WORLD_SIZE=str(nprocs),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python SCRIPT` would
    runpy.run_path(script, run_name="__main__")


def main() -> None:
    import torch.multiprocessing as mp

    if os.environ.get("LAB_TRACEBACKS") == "rich":
        # a script that installs rich's handler at its top does so in the parent that spawns too
        from rich.traceback import install

        install()
    nprocs, port, script, *argv = sys.argv[1:]
    mp.spawn(_worker, args=(int(nprocs), port, script, argv), nprocs=int(nprocs))


if __name__ == "__main__":
    main()
