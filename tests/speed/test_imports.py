"""Start-up: `firstfault diagnose` loads what a diagnosis uses and nothing else.

Measured with `python -X importtime` in a fresh interpreter, as a user runs it. The budget is
kept as what is imported (deterministic), not as milliseconds (noisy on a shared machine):
the interfaces that are not the CLI (web, fleet, editor, lab, history), their libraries, and
PyYAML (the knowledge base comes from its cache) stay unloaded. `bench/run_bench.py --quick`
prints the import time itself.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nccl-timeouts-after-assert"
# packages a diagnosis must not load (prefixes of module names)
NOT_FOR_DIAGNOSE = (
    "firstfault.web", "firstfault.fleet", "firstfault.lsp", "firstfault.lab", "firstfault.history",
    "firstfault.watch", "yaml", "aiohttp", "starlette", "uvicorn", "dask", "distributed", "duckdb",
    "pyarrow", "pygls", "lsprotocol", "torch", "numpy", "pandas", "sqlite3", "watchdog",
)
# firstfault modules a diagnosis imports: 82 when this was written; 92 with ingest.posts and
# ingest.archives, 93 with ingest.exported (every input passes them), 94 with ingest.rendered (the
# scanner reads rich's and IPython's tracebacks as Python's), 95 with correlate.failure_table (when
# torchrun's failure table tells which rank failed first)
FIRSTFAULT_MODULE_BUDGET = 95


def imported_modules(environment: dict, *args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "firstfault.cli", *args],
                            capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return [line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2 and "imported package" not in line]


@pytest.fixture(scope="module")
def diagnose_modules(tmp_path_factory) -> list[str]:
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}
    # a first run fills the knowledge-base cache, as any user's first run does
    subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(EXAMPLE)], capture_output=True,
                   env=environment, timeout=120)
    return imported_modules(environment, "diagnose", "--format", "json", str(EXAMPLE))


def test_diagnose_leaves_the_other_interfaces_unloaded(diagnose_modules):
    assert "firstfault.pipeline" in diagnose_modules  # the measurement saw the diagnosis
    loaded = sorted({name for name in diagnose_modules if name.startswith(NOT_FOR_DIAGNOSE)})
    assert loaded == []


def test_diagnose_stays_within_its_module_budget(diagnose_modules):
    ours = {name for name in diagnose_modules if name.split(".")[0] == "firstfault"}
    assert len(ours) <= FIRSTFAULT_MODULE_BUDGET, sorted(ours)


def test_a_log_with_no_stack_like_line_leaves_the_dump_reader_unloaded(tmp_path):
    # every input passes the cheap sniff (dumps/sniff.py); the reader loads only for a candidate
    log = tmp_path / "train.log"
    log.write_text("".join(f"2026-03-01 10:00:{s:02d},000 INFO step {s} loss 0.{90 - s}\n" for s in range(30)))
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    modules = imported_modules(environment, "diagnose", "--format", "json", str(log))
    assert "firstfault.dumps.sniff" in modules
    assert [name for name in modules if name.startswith("firstfault.dumps.") and name != "firstfault.dumps.sniff"] == []
    stack = tmp_path / "pyspy_rank0.txt"
    stack.write_text('Process 4242: python train.py\nThread 4242 (idle): "MainThread"\n    wait (threading.py:320)\n'
                     "    barrier (torch/distributed/distributed_c10d.py:3744)\n    <module> (train.py:12)\n")
    assert "firstfault.dumps.stacks" in imported_modules(environment, "diagnose", "--format", "json", str(log), str(stack))
