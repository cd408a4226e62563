"""One snapshot check for every test folder: the text must equal the stored file;
FIRSTFAULT_UPDATE_SNAPSHOTS=1 rewrites it."""
from __future__ import annotations

import os
from pathlib import Path


def check_snapshot(folder: Path, name: str, text: str) -> None:
    path = folder / name
    if os.environ.get("FIRSTFAULT_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}; run with FIRSTFAULT_UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its snapshot (FIRSTFAULT_UPDATE_SNAPSHOTS=1, then read the diff)"
