"""The `live_torch` marker and the `spawn` fixture (every process it starts is killed at teardown)."""
from __future__ import annotations

import pytest

from .procs import Proc


def pytest_configure(config):
    config.addinivalue_line("markers", "live_torch: runs a real torchrun job on CPU (needs torch)")


@pytest.fixture
def spawn():
    started: list[Proc] = []

    def start(command, **options) -> Proc:
        proc = Proc([str(part) for part in command], **options)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
