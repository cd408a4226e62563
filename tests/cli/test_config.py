"""The configuration file: every key does what docs/configuration.md says; mistakes are one line
with file:line."""
from __future__ import annotations

import json
import re

import pytest

from firstfault.config import KEYS

from .conftest import OOM_LOG, REPO, run_cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CUSTOM_ENTRY = """\
id: widget-jammed
title: The widget jammed
category: framework
severity: high
status: stable
systems: [pytorch]
tags: [widget]
summary: >
  The training script's widget jammed and the step could not finish.
observe:
  - "WidgetJammedError: widget 7 jammed at step 12"
symptoms:
  - text: "`WidgetJammedError`"
    meaning: The widget stopped.
mechanism: >
  A widget holds a lock that the step needs.
confirm:
  - check: Look for the widget error.
    command: grep -n WidgetJammedError train.log
fix:
  - title: Unjam the widget
    stack: general
    why: A free widget lets the step finish.
    steps:
      - Restart the widget service.
verify:
  - check: The step finishes.
prevention:
  - Keep widgets oiled.
references:
  - title: Widget manual
    url: https://example.org/widgets
signatures:
  - name: widget-jammed
    role: root
    weight: 0.9
    pattern: "WidgetJammedError: widget (?P<widget>\\\\d+) jammed"
    message: "widget {widget} jammed on rank {rank}"
    examples:
      - "WidgetJammedError: widget 7 jammed at step 12"
    near_misses:
      - "widget 7 is fine"
"""


def project(tmp_path, text: str, name: str = "firstfault.toml"):
    (tmp_path / name).write_text(text)
    return tmp_path


def test_every_key_is_documented():
    documented = (REPO / "docs" / "configuration.md").read_text()
    for key in KEYS:
        assert f"`{key}`" in documented, key


def test_format_sets_the_default_and_the_command_line_wins(tmp_path):
    folder = project(tmp_path, 'format = "json"\n')
    assert json.loads(run_cli("diagnose", OOM_LOG, cwd=folder).stdout)["status"] == "failure"
    assert run_cli("diagnose", OOM_LOG, "--format", "markdown", cwd=folder).stdout.startswith(b"## firstfault diagnosis")
    # watch and run stream alerts: there `json` means JSON lines
    assert json.loads(run_cli("list", cwd=folder).stdout)[0]["id"]


def test_color_sets_the_default(tmp_path):
    folder = project(tmp_path, 'color = "always"\n')
    assert ANSI.search(run_cli("explain", "cuda-oom", cwd=folder).stdout.decode())
    assert not ANSI.search(run_cli("explain", "cuda-oom", "--color", "never", cwd=folder).stdout.decode())


def test_mask_hosts_sets_the_default_and_no_mask_hosts_overrides(tmp_path):
    folder = project(tmp_path, "mask-hosts = true\n")
    masked = run_cli("diagnose", OOM_LOG, cwd=folder).stdout.decode()
    assert "gpu-a100-07" not in masked
    assert "gpu-a100-07" in run_cli("diagnose", OOM_LOG, "--no-mask-hosts", cwd=folder).stdout.decode()


def test_signature_folders_add_entries(tmp_path):
    entries = tmp_path / "ops" / "firstfault" / "framework"
    entries.mkdir(parents=True)
    (entries / "widget-jammed.yaml").write_text(CUSTOM_ENTRY)
    folder = project(tmp_path, 'signature-folders = ["ops/firstfault"]\n')
    log = tmp_path / "rank3.log"
    log.write_text("step 11 ok\nWidgetJammedError: widget 7 jammed at step 12\n")
    contract = json.loads(run_cli("diagnose", log, "--format", "json", cwd=folder).stdout)
    assert contract["primary"]["failure_id"] == "widget-jammed"
    assert contract["primary"]["summary"] == "widget 7 jammed on rank 3"
    assert run_cli("explain", "widget-jammed", cwd=folder).stdout.startswith(b"The widget jammed")
    assert run_cli("kb", "check", cwd=folder).returncode == 0
    assert run_cli("explain", "widget-jammed", cwd=tmp_path.parent).returncode == 2  # not outside the project


def test_pyproject_table_and_search_upward(tmp_path):
    project(tmp_path, '[project]\nname = "x"\n\n[tool.firstfault]\nformat = "markdown"\n', "pyproject.toml")
    deeper = tmp_path / "runs" / "job-17"
    deeper.mkdir(parents=True)
    assert run_cli("diagnose", OOM_LOG, cwd=deeper).stdout.startswith(b"## firstfault diagnosis")


def test_a_pyproject_without_the_table_is_no_configuration(tmp_path):
    project(tmp_path, '[project]\nname = "x"\n', "pyproject.toml")
    assert run_cli("diagnose", OOM_LOG, cwd=tmp_path).stdout.startswith("✖".encode())


@pytest.mark.parametrize("text,name,line,words", [
    ('format = "json"\nmask_hosts = true\n', "firstfault.toml", 2, "unknown setting 'mask_hosts'"),
    ('[project]\nname = "x"\n\n[tool.firstfault]\ncolor = "never"\nformats = "json"\n', "pyproject.toml", 6,
     "unknown setting 'formats'"),
    ('format = "yaml"\n', "firstfault.toml", 1, "format must be one of terminal, json, markdown"),
    ('mask-hosts = "yes"\n', "firstfault.toml", 1, "mask-hosts must be true or false"),
    ('signature-folders = ["nowhere"]\n', "firstfault.toml", 1, "signature folder 'nowhere' is not a folder"),
    ('format = \n', "firstfault.toml", 1, "not valid TOML"),
])
def test_mistakes_are_one_line_with_file_and_line(tmp_path, text, name, line, words):
    project(tmp_path, text, name)
    result = run_cli("explain", "cuda-oom", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert f"{tmp_path / name}:{line}: " in err and words in err and "Traceback" not in err
    assert err.count("\n") == 2  # the error and its hint
