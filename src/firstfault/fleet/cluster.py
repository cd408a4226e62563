"""The Dask cluster a scan runs on: a LocalCluster by default, or an existing scheduler.

    with open_client(workers=2) as client: ...
    with open_client(scheduler="tcp://10.0.0.5:8786") as client: ...
    with open_client(scheduler_file="~/dask-scheduler.json") as client: ...   # Slurm: see docs/fleet.md

The local cluster runs one process per worker with one thread each (the engine is CPU-bound
Python: threads would share one interpreter lock) and a memory limit per worker, so one huge job
cannot take the machine: Dask restarts a worker that goes over it and the job is recorded as an
error. The scheduler's HTTP endpoint (and dashboard, when bokeh is installed) takes a free port:
the default 8787 is often taken by another cluster on a shared machine.
"""
from __future__ import annotations

import contextlib
import logging
import os

from ..errors import FirstfaultError, UsageError

FLEET_MODULES = ("dask", "distributed", "pyarrow", "duckdb")
LOCAL_HTTP_ADDRESS = ":0"
INSTALL_HINT = "pip install -e '.[fleet]' in a checkout, or pip install 'firstfault[fleet]'"


def missing_requirements(modules: tuple[str, ...] = FLEET_MODULES) -> list[str]:
    import importlib.util

    return [name for name in modules if importlib.util.find_spec(name) is None]


def require(modules: tuple[str, ...] = FLEET_MODULES) -> None:
    """Raise the one-line error with the install command when the fleet extra is missing."""
    missing = missing_requirements(modules)
    if missing:
        raise FirstfaultError(f"fleet mode needs {', '.join(missing)}", INSTALL_HINT)


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def open_client(scheduler: str | None = None, scheduler_file: str | None = None, workers: int | None = None,
                memory_limit: str = "4GiB"):
    """A connected `distributed.Client`; a LocalCluster it started is closed on exit."""
    require(("dask", "distributed"))
    from distributed import Client, LocalCluster

    if scheduler and scheduler_file:
        raise UsageError("give --scheduler or --scheduler-file, not both")
    if scheduler or scheduler_file:
        target = scheduler or os.path.expanduser(scheduler_file)
        try:
            client = Client(scheduler_file=target, timeout="30s") if scheduler_file else Client(target, timeout="30s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise FirstfaultError(f"cannot reach the Dask scheduler at {target} ({type(exc).__name__})",
                                  "check the address (tcp://HOST:8786) and that `dask scheduler` is running") from None
        try:
            yield client
        finally:
            client.close()
        return
    count = workers if workers is not None else default_workers()
    if count < 1:
        raise UsageError(f"--workers {count}: need at least one worker")
    from dask.utils import parse_bytes

    try:
        parse_bytes(memory_limit)
    except (ValueError, TypeError):
        raise UsageError(f"--memory-limit {memory_limit!r} is not a size", "e.g. 4GiB or 2000MB") from None
    cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True, memory_limit=memory_limit,
                           dashboard_address=LOCAL_HTTP_ADDRESS, silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def worker_count(client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))
