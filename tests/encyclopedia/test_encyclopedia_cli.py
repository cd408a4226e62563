"""explain / list / search / compare through firstfault.cli.main and a real subprocess."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from firstfault.cli import main

from .conftest import FIXTURE_ENTRIES

ENTRIES = ["--entries", str(FIXTURE_ENTRIES)]
OOM_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB"
EXECUTABLE = Path(sys.executable).with_name("firstfault")


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("NO_COLOR", raising=False)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, *ENTRIES])
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_prints_the_entry(capsys, snapshot):
    code, out, err = run(capsys, "explain", "gpu-oom")
    assert (code, err) == (0, "")
    snapshot("cli-explain-gpu-oom.txt", out)


def test_explain_follows_a_redirect_and_says_so(capsys):
    code, out, err = run(capsys, "explain", "nccl-iface", "--format", "json")
    assert code == 0
    assert json.loads(out)["id"] == "nccl-bad-interface"
    assert "'nccl-iface' was renamed to 'nccl-bad-interface'" in err


def test_explain_unknown_id_names_close_ids(capsys):
    code, out, err = run(capsys, "explain", "gpu-om")
    assert (code, out) == (2, "")
    assert err == (
        "firstfault: error: no knowledge-base entry 'gpu-om'\n"
        "hint: did you mean gpu-oom? `firstfault list` shows every id\n"
    )


def test_explain_unknown_id_without_close_ids_keeps_the_general_hint(capsys):
    code, _, err = run(capsys, "explain", "zzzz")
    assert code == 2
    assert "hint: `firstfault list` shows every id" in err


def test_list_snapshot_and_json(capsys, snapshot):
    code, out, _ = run(capsys, "list")
    assert code == 0
    snapshot("cli-list.txt", out)
    code, out, _ = run(capsys, "list", "--category", "network", "--format", "json")
    assert code == 0
    assert [row["id"] for row in json.loads(out)] == ["collective-timeout-hang", "nccl-bad-interface", "rendezvous-refused"]
    assert list(json.loads(out)[0]) == ["id", "category", "severity", "status", "title"]


def test_list_bad_and_empty_categories(capsys):
    code, _, err = run(capsys, "list", "--category", "bogus")
    assert code == 2 and "no category or topic called 'bogus'" in err and "hint: choose from nccl, network" in err
    code, out, err = run(capsys, "list", "--category", "device")
    assert (code, out) == (0, "") and "no entries in category 'device' yet" in err
    code, out, _ = run(capsys, "list", "--category", "device", "--format", "json")
    assert (code, json.loads(out)) == (0, [])


def test_list_takes_the_topics_compare_takes(capsys):
    code, out, _ = run(capsys, "list", "--category", "nccl", "--format", "json")
    assert code == 0 and [row["id"] for row in json.loads(out)] == ["collective-timeout-hang", "nccl-bad-interface"]


def test_explain_ignores_case_and_suggests_close_ids(capsys):
    code, out, _ = run(capsys, "explain", "GPU-OOM")
    assert code == 0 and out.startswith("GPU out of memory")
    code, _, err = run(capsys, "explain", "gpu_om")
    assert code == 2 and "did you mean gpu-oom?" in err


def test_search_a_pasted_line(capsys, snapshot):
    code, out, _ = run(capsys, "search", OOM_LINE)
    assert code == 0
    snapshot("cli-search-oom.txt", out)
    assert out.startswith(" 1. gpu-oom  GPU out of memory")


def test_search_reads_stdin_for_dash(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("ValueError: bad shape\n" + OOM_LINE + "\n"))
    code, out, _ = run(capsys, "search", "-", "--format", "json", "--limit", "2")
    hits = json.loads(out)
    assert code == 0
    assert [(hit["id"], hit["signature"]) for hit in hits] == [("gpu-oom", "tried-to-allocate"), ("python-error", "exception-line")]
    assert hits[0]["message"] == "a rank tried to allocate 2.00 GiB"


@pytest.mark.parametrize("argv,message", [
    (["search", "-"], "empty search query"),
    (["search", "oom", "--limit", "-1"], "--limit must be 0 or more"),
    (["compare", "bogus"], "nothing to compare called 'bogus'"),
    (["compare", "device"], "no entries to compare in 'device' yet"),
])
def test_usage_errors_exit_2_with_a_hint(capsys, monkeypatch, argv, message):
    monkeypatch.setattr(sys, "stdin", io.StringIO("  \n"))
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    first, hint = err.splitlines()
    assert first.startswith(f"firstfault: error: {message}")
    assert hint.startswith("hint: ")


def test_search_without_matches_says_so_on_stderr(capsys):
    code, out, err = run(capsys, "search", "zebra")
    assert (code, out) == (0, "")
    assert "no entry matches" in err


def test_compare_formats(capsys, snapshot):
    code, out, _ = run(capsys, "compare", "nccl", "--format", "markdown")
    assert code == 0
    snapshot("compare-nccl.md", out)  # the same text the renderer test pins
    code, out, _ = run(capsys, "compare", "network", "--format", "json")
    assert [row["id"] for row in json.loads(out)["entries"]] == ["collective-timeout-hang", "nccl-bad-interface", "rendezvous-refused"]


def test_a_broken_entries_dir_is_a_tool_error(capsys, tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "bad.yaml").write_text("id: bad\n")
    code = main(["list", "--entries", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2 and "problem(s) in the knowledge base" in err


def test_unknown_format_is_an_argparse_error():
    with pytest.raises(SystemExit) as caught:
        main(["explain", "gpu-oom", "--format", "html", *ENTRIES])
    assert caught.value.code == 2


def cli(*argv: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "COLUMNS": "100", **(env or {})}
    environ.pop("NO_COLOR", None)
    return subprocess.run(
        [str(EXECUTABLE), *argv, *ENTRIES], input=stdin, capture_output=True, text=True, env=environ, timeout=60,
    )


@pytest.mark.skipif(not EXECUTABLE.exists(), reason="the firstfault script is not installed beside this python")
class TestSubprocess:
    def test_explain_exit_0_and_no_colour_when_piped(self, snapshot):
        result = cli("explain", "gpu-oom")
        assert (result.returncode, result.stderr) == (0, "")
        assert "\x1b[" not in result.stdout
        snapshot("cli-explain-gpu-oom.txt", result.stdout)

    def test_unknown_id_exit_2_one_line_and_hint_no_traceback(self):
        result = cli("explain", "nccl-bad-interfac")
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.splitlines() == [
            "firstfault: error: no knowledge-base entry 'nccl-bad-interfac'",
            "hint: did you mean nccl-bad-interface? `firstfault list` shows every id",
        ]

    def test_search_from_stdin(self):
        result = cli("search", "-", "--limit", "1", stdin=OOM_LINE + "\n")
        assert result.returncode == 0
        assert result.stdout.splitlines()[0] == " 1. gpu-oom  GPU out of memory  (memory, critical)"

    def test_compare_json(self):
        result = cli("compare", "nccl", "--format", "json")
        assert result.returncode == 0
        assert json.loads(result.stdout)["topic"] == "nccl"
