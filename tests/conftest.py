"""What the test files share: one diagnosis of each fixture case per test session."""
from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def corpus_diagnosis(tmp_path_factory):
    """`diagnose(logs_dir)`: the pipeline's diagnosis of a fixture case's logs, made once per test
    session. Several test files read every case of the fixture sets (the verdicts, the claims of
    the Why section, the real runs' judgement, follow-up answers); xdist's workers share what one
    of them diagnosed through files in the session's temporary folder. For the unchanged fixture
    folders only: a case is known by its path."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # (each worker's folder is under the session's)
    folder = shared / "corpus-diagnoses"
    folder.mkdir(exist_ok=True)
    made: dict[str, object] = {}
    from firstfault.pipeline import diagnose_paths

    def diagnose(logs_dir):
        key = hashlib.sha1(str(Path(logs_dir).resolve()).encode()).hexdigest()
        if key not in made:
            kept = folder / f"{key}.pickle"
            try:
                made[key] = pickle.loads(kept.read_bytes())
            except FileNotFoundError:
                made[key] = diagnose_paths([str(logs_dir)])
                partial = kept.with_name(f"{key}.{os.getpid()}.partial")
                partial.write_bytes(pickle.dumps(made[key]))
                os.replace(partial, kept)  # (whole or absent: another worker may read it at once)
        return made[key]

    return diagnose
