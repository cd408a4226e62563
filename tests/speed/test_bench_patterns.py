"""The benchmark hands ripgrep the knowledge base's signatures: they must stay patterns ripgrep
takes (`--no-unicode`: ASCII only, a character outside it written as its UTF-8 bytes), or the
benchmark compares firstfault with an error."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run_bench.py"


def _bench():
    spec = importlib.util.spec_from_file_location("run_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_signatures_given_to_ripgrep_are_ascii_and_say_the_same_bytes():
    bench = _bench()
    text = bench.ripgrep_patterns(bench.signatures())
    assert text.isascii()
    assert bench.ripgrep_patterns(["段错误 +x"]) == "\\xE6\\xAE\\xB5\\xE9\\x94\\x99\\xE8\\xAF\\xAF +x\n"


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_ripgrep_takes_them_and_finds_a_zh_cn_shells_report(tmp_path):
    bench = _bench()
    patterns = tmp_path / "signatures.rg"
    patterns.write_text(bench.ripgrep_patterns(bench.signatures()))
    log = tmp_path / "run.log"
    log.write_text("step 1 loss 2.0\n段错误 (核心已转储)\n", encoding="utf-8")
    found = subprocess.run(["rg", "--no-unicode", "-n", "-f", str(patterns), str(log)], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines() == ["2:段错误 (核心已转储)"]
