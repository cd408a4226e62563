"""`firstfault completion bash|zsh|fish`: scripts generated from the parser, run in the real shells."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from .conftest import run_cli

BASH_PROBE = """
source "$1"
complete_words() {{ COMP_WORDS=("$@"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMPREPLY=(); _firstfault; echo "${{COMPREPLY[*]}}"; }}
{calls}
"""


def script(tmp_path, shell: str):
    path = tmp_path / f"firstfault.{shell}"
    result = run_cli("completion", shell, "-o", path)
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.parametrize("words,expected", [
    (["firstfault", "di"], {"diagnose"}),
    (["firstfault", "diagnose", "--fo"], {"--format"}),
    (["firstfault", "diagnose", "--format", ""], {"terminal", "json", "markdown"}),
    (["firstfault", "explain", "cuda-oo"], {"cuda-oom", "cuda-oom-fragmentation"}),
    (["firstfault", "lab", ""], {"list", "run"}),
    (["firstfault", "list", "--category", "nc"], {"nccl"}),
    (["firstfault", "completion", ""], {"bash", "zsh", "fish"}),
])
def test_bash(tmp_path, words, expected):
    path = script(tmp_path, "bash")
    call = "complete_words " + " ".join(f"'{word}'" for word in words)
    result = subprocess.run(["bash", "-c", BASH_PROBE.format(calls=call), "probe", str(path)],
                            capture_output=True, timeout=60)
    assert set(result.stdout.decode().split()) == expected, result.stderr.decode()


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed (apt-get install fish)")
def test_fish(tmp_path):
    path = script(tmp_path, "fish")
    assert subprocess.run(["fish", "--no-execute", str(path)], timeout=60).returncode == 0
    result = subprocess.run(["fish", "-c", f"source {path}; complete -C 'firstfault diagnose --format '; "
                             "complete -C 'firstfault explain cuda-oo'"], capture_output=True, timeout=60)
    offered = {line.split("\t")[0] for line in result.stdout.decode().splitlines()}
    assert {"terminal", "json", "markdown", "cuda-oom", "cuda-oom-fragmentation"} <= offered


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed (apt-get install zsh)")
def test_zsh(tmp_path):
    path = script(tmp_path, "zsh")
    result = subprocess.run(["zsh", "-c", f"source {path} >/dev/null 2>&1; print -r -- $_comps[firstfault]"],
                            capture_output=True, timeout=60)
    assert result.stdout.decode().strip() == "_bash_complete -o default -F _firstfault"
