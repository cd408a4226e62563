"""--version, python -m firstfault, -o/--output, -q/--quiet, --color and NO_COLOR, --format choices."""
from __future__ import annotations

import argparse
import json
import re

import pytest

from firstfault import __version__
from firstfault.cli import build_parser
from firstfault.commands.options import FORMATS, STREAM_FORMATS

from .conftest import FIRST_USER, OOM_LOG, run_cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")

# every command that prints a result, with arguments that make it print one
PRINTING = {
    "diagnose": ["diagnose", OOM_LOG],
    "explain": ["explain", "cuda-oom"],
    "list": ["list"],
    "search": ["search", "CUDA out of memory"],
    "compare": ["compare", "nccl"],
    "kb check": ["kb", "check"],
    "eval": ["eval", FIRST_USER.parent / "real" / "exc-missing-key-logdir-ws3"],
    "lab list": ["lab", "list"],
}


def _subcommands(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield path + (name,), child
                yield from _subcommands(child, path + (name,))


def test_version_and_python_m():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.decode().strip() == f"firstfault {__version__}"
    assert run_cli("explain", "cuda-oom").stdout.decode().startswith("CUDA out of memory")


def test_every_format_option_offers_the_same_choices():
    seen = {}
    for path, parser in _subcommands(build_parser()):
        for action in parser._actions:
            if "--format" in action.option_strings:
                seen[" ".join(path)] = tuple(action.choices)
    assert set(seen) >= {"diagnose", "explain", "list", "search", "compare", "kb check", "eval", "lab list", "lab run",
                         "watch", "run"}
    streaming = {"watch", "run"}  # alerts as they happen: terminal lines or JSON lines
    tables = {"fleet sql"}  # a query's rows: also CSV
    assert {name: choices for name, choices in seen.items() if name not in streaming | tables} == \
        {name: FORMATS for name in seen if name not in streaming | tables}
    assert seen["fleet sql"] == (*FORMATS, "csv")
    assert all(seen[name] == STREAM_FORMATS for name in streaming)


@pytest.mark.parametrize("name", sorted(PRINTING))
def test_every_printing_command_takes_every_format_and_color_option(name, tmp_path):
    for fmt in FORMATS:
        result = run_cli(*PRINTING[name], "--format", fmt, "--color", "never")
        assert result.returncode in (0, 1), (fmt, result.stderr.decode())
        out = result.stdout.decode()
        assert out.strip() and not ANSI.search(out)
        if fmt == "json":
            json.loads(out)
    colored = run_cli(*PRINTING[name], "--color", "always").stdout.decode()
    plain = run_cli(*PRINTING[name], "--color", "auto").stdout.decode()  # not a terminal: no colour
    assert ANSI.search(colored) or name == "eval", name  # eval colours its misses only
    assert not ANSI.search(plain)
    assert ANSI.sub("", colored) == plain


def test_no_color_wins_over_auto_but_not_over_always(tmp_path):
    script = ("import sys, pty, os\n"
              "pid, fd = pty.fork()\n"
              "if pid == 0:\n"
              "    os.execv(sys.executable, [sys.executable, '-m', 'firstfault', 'explain', 'cuda-oom', *sys.argv[1:]])\n"
              "out = b''\n"
              "while True:\n"
              "    try:\n"
              "        chunk = os.read(fd, 65536)\n"
              "    except OSError:\n"
              "        break\n"
              "    if not chunk:\n"
              "        break\n"
              "    out += chunk\n"
              "os.waitpid(pid, 0)\n"
              "sys.stdout.write(repr(b'\\x1b[' in out))\n")
    import subprocess
    import sys

    def on_a_terminal(*args, no_color=False):
        env = {"NO_COLOR": "1"} if no_color else {}
        import os

        environment = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
        environment.update(env)
        return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, env=environment,
                              timeout=120).stdout.decode()

    assert on_a_terminal() == "True"  # auto on a terminal: colour
    assert on_a_terminal(no_color=True) == "False"  # https://no-color.org
    assert on_a_terminal("--color", "always", no_color=True) == "True"
    assert on_a_terminal("--color", "never") == "False"


def test_output_writes_the_file_and_keeps_stdout_clean(tmp_path):
    target = tmp_path / "report.json"
    result = run_cli("diagnose", OOM_LOG, "--format", "json", "-o", target)
    assert result.returncode == 1 and result.stdout == b""
    assert json.loads(target.read_text()) == json.loads(run_cli("diagnose", OOM_LOG, "--format", "json").stdout)
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".firstfault-")]


def test_output_is_left_alone_after_a_tool_error(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("the previous report\n")
    result = run_cli("diagnose", tmp_path / "missing.log", "-o", target)
    assert result.returncode == 2
    assert target.read_text() == "the previous report\n"
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".firstfault-")]


def test_output_to_a_folder_that_does_not_exist_is_one_line(tmp_path):
    result = run_cli("explain", "cuda-oom", "-o", tmp_path / "no" / "such" / "file.txt")
    err = result.stderr.decode()
    assert result.returncode == 2 and "cannot write" in err and "Traceback" not in err


def test_quiet_keeps_errors_only(tmp_path):
    (tmp_path / "train.log").write_text(OOM_LOG.read_text())
    (tmp_path / "empty.log").write_text("")
    loud = run_cli("diagnose", tmp_path)
    assert "skipped" in loud.stderr.decode()
    quiet = run_cli("diagnose", tmp_path, "-q")
    assert quiet.stderr == b"" and quiet.stdout == loud.stdout and quiet.returncode == 1
    error = run_cli("diagnose", tmp_path / "nothing-here", "-q")
    assert error.returncode == 2 and error.stderr.decode().startswith("firstfault: error:")
    assert "hint:" in error.stderr.decode()
