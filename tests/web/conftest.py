"""Shared fixtures of the web tests: a canned diagnosis, an app on a temporary database."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

# starlette's TestClient nags about httpx (it wants `httpx2`); the tests use what the test extra installs
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
pytest.importorskip("fastapi")
pytest.importorskip("jinja2")

from firstfault.model import Because, Diagnosis, Evidence, Finding, InputSummary, StackSeen  # noqa: E402
from snapshot_check import check_snapshot  # noqa: E402

T0 = 1_764_000_000.0
OOM_LINE = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
            "GPU 1 has a total capacity of 79.15 GiB of which 1.06 GiB is free.")
WATCHDOG = ("[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")


def canned_diagnosis() -> Diagnosis:
    """Rank 1 runs out of memory; ranks 0, 2 and 3 time out in the all-reduce ten minutes later."""
    root = Evidence("rank1.log", 812, 1, "gpu-node-07", T0 + 0.5, OOM_LINE, "cuda-oom", "tried-to-allocate", "root")
    retry = Evidence("rank1.log", 790, 1, "gpu-node-07", T0 + 0.2,
                     "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.",
                     "cuda-oom", "tried-to-allocate", "root")
    timeouts = tuple(
        Evidence(f"rank{rank}.log", 900 + rank, rank, "gpu-node-07" if rank < 2 else "gpu-node-08", T0 + 600 + rank * 0.3,
                 WATCHDOG.format(rank=rank), "collective-timeout-peer-crash", "watchdog-timeout", "collateral")
        for rank in (0, 2, 3)
    )
    launcher = Evidence("launcher.log", 40, None, "gpu-node-07", T0 + 603,
                        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
                        "torchelastic-child-failed", "child-failed", "collateral")
    primary = Finding("cuda-oom", 0.93, (root,), (1,), ("gpu-node-07",), 1, "rank 1 tried to allocate 2.00 GiB on a full GPU")
    collateral = (
        Finding("collective-timeout-peer-crash", 0.6, timeouts, (0, 2, 3), ("gpu-node-07", "gpu-node-08"), 3,
                "3 ranks timed out waiting for rank 1"),
        Finding("torchelastic-child-failed", 0.3, (launcher,), (), ("gpu-node-07",), 1, "the launcher stopped the job"),
    )
    return Diagnosis(
        status="failure",
        primary=Finding(primary.failure_id, primary.confidence, (root, retry), primary.ranks, primary.hosts, 2, primary.message),
        initiating=retry,
        collateral=collateral,
        candidates=(primary, Finding("user-code-exception", 0.2)),
        inputs=InputSummary(files=("rank0.log", "rank1.log", "rank2.log", "rank3.log", "launcher.log"), lines=4200,
                            bytes=512_000, ranks=(0, 1, 2, 3), hosts=("gpu-node-07", "gpu-node-08")),
        notes=("the rank was named by the [rankN]: prefix",),
        fix_values={"tried": "2.00 GiB"},
        because=(Because("earliest-strong-root", "cuda-oom on rank 1 is the earliest error that can start a failure",
                         (("rank1.log", 790),)),
                 Because("consequences", "then collective-timeout-peer-crash on ranks 0,2-3: consequences of cuda-oom",
                         (("rank0.log", 900),))),
        action="fix-and-rerun",
        stack=(StackSeen("torchrun", "torchrun", "launcher.log", 3), StackSeen("hf-trainer", "HF Trainer", "rank0.log", 12)),
    )


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient` is deprecated")


@pytest.fixture
def fake_pipeline(monkeypatch):
    """Replace the engine by the canned diagnosis (for tests of the pages, not of the engine)."""
    calls = []

    def diagnose_texts(named_texts, *, mask_hosts=False, observer=None, kb=None, max_input_bytes=None):
        calls.append([(name, bytes(content) if not isinstance(content, str) else content.encode()) for name, content in named_texts])
        return canned_diagnosis()

    monkeypatch.setattr("firstfault.pipeline.diagnose_texts", diagnose_texts)
    return calls


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "history.sqlite3"


@pytest.fixture
def app(db_path):
    from firstfault.web.app import create_app

    return create_app(db_path=db_path)


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as test_client:
        yield test_client


SNAPSHOTS = Path(__file__).parent / "snapshots"


def small_kb():
    """One hand-written entry, so page snapshots do not change when the real knowledge base grows."""
    from firstfault.kb.loader import KnowledgeBase
    from firstfault.model import Entry

    data = {
        "id": "cuda-oom", "title": "CUDA out of memory", "category": "memory", "severity": "critical", "status": "stable",
        "systems": ["pytorch"], "tags": ["oom"], "related": [],
        "summary": "A rank asked for more GPU memory than was left; `torch.OutOfMemoryError` names it.",
        "mechanism": "The caching allocator could not find or reserve a block.",
        "observe": ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."],
        "symptoms": [{"text": "`Tried to allocate X`", "meaning": "the rank that failed"}],
        "confirm": [{"check": "Find the first OOM by time.", "command": "grep -n 'out of memory' logs/*"}],
        "fix": [{"title": "Lower the micro-batch on rank {rank}", "stack": "general", "why": "Activations shrink.",
                 "steps": ["Halve the batch."], "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}],
        "verify": [{"check": "Rerun; the peak stays below capacity.", "command": "python -c 'print(1)'"}],
        "prevention": ["Alert at 90% memory."],
        "references": [{"title": "CUDA semantics", "url": "https://pytorch.org/docs/stable/notes/cuda.html"}],
    }
    return KnowledgeBase([Entry("cuda-oom", data["title"], "memory", "critical", "stable", (), data)])


@pytest.fixture
def snapshot():
    """snapshot(name, text): the text must equal snapshots/<name>; FIRSTFAULT_UPDATE_SNAPSHOTS=1 rewrites it."""
    def check(name: str, text: str) -> None:
        check_snapshot(SNAPSHOTS, name, text)

    return check
