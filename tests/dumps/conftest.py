"""Shared paths for the dump tests, and the `live` marker for the real torchrun capture."""
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"


def pytest_configure(config):
    config.addinivalue_line("markers", "live: runs a real torchrun job (needs torch; ~40 s)")


@pytest.fixture
def sleep_case() -> Path:
    """Real capture: rank 2 stalls in its data loader, ranks 0, 1, 3 wait in all_reduce."""
    return FIXTURES / "gloo_hang_sleep"


@pytest.fixture
def op_case() -> Path:
    """Real capture: rank 2 calls broadcast where ranks 0, 1, 3 call all_reduce."""
    return FIXTURES / "gloo_hang_op"
