"""What users read of a diagnosis: terminal, Markdown, JSON and the web page, from real engine runs.

The first-user fixtures (tests/fixtures/first-user) are logs a new user wrote by hand in real
formats; each test here checks a general rule of the reports, not those files' particular text.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIRST_USER = REPO / "tests" / "fixtures" / "first-user"


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path = REPO, timeout: int = 120,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI as a user runs it, in a fresh process."""
    import os

    environment = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "firstfault", *args], input=stdin, capture_output=True,
                          timeout=timeout, cwd=cwd, env=environment)


@pytest.fixture(scope="session")
def kb():
    from firstfault.kb import load_knowledge_base

    return load_knowledge_base()
