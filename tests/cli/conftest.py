"""The command line as users of ruff, pytest and pip-audit expect it: each test runs the real CLI."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIRST_USER = REPO / "tests" / "fixtures" / "first-user"
OOM_LOG = FIRST_USER / "oom4" / "console.log"


def run_cli(*args, cwd: Path = REPO, env: dict | None = None, stdin: bytes | None = None,
            timeout: int = 120) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "firstfault", *map(str, args)], input=stdin, capture_output=True,
                          cwd=cwd, env=environment, timeout=timeout)
