"""A real editor as the client: Debian's Neovim, headless, configured with the README's own lines,
opens a log of a 4-rank run; `vim.diagnostic.get()` must show the first fault as an error on the
initiating rank's line. Without nvim this skips, unless FIRSTFAULT_REQUIRE_NEOVIM=1 (CI, where
.ci/run installs it) makes that a failure."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REAL_RUNS, REPOSITORY

REQUIRED = os.environ.get("FIRSTFAULT_REQUIRE_NEOVIM") == "1"
NVIM = shutil.which("nvim")
if NVIM is None:
    if REQUIRED:
        raise RuntimeError("nvim is not installed (apt-get install neovim)")
    pytest.skip("nvim is not installed (apt-get install neovim)", allow_module_level=True)

pytestmark = pytest.mark.timeout(120)

# Neovim 0.7 (Debian 12) has no vim.lsp.start: the same in the 0.7 API, for the README's lines.
SHIM = """
if vim.lsp.start == nil then
  vim.lsp.start = function(config)
    local id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(0, id)
    return id
  end
end
"""
PROBE = """
vim.cmd("edit " .. vim.fn.fnameescape(vim.env.FIRSTFAULT_TEST_LOG))
local function has_error()
  for _, item in ipairs(vim.diagnostic.get()) do
    if item.severity == vim.diagnostic.severity.ERROR then return true end
  end
  return false
end
local found = vim.wait(60000, has_error, 100)
vim.wait(500)  -- the rest of the run's files are published in the same breath
local seen = {}
for _, item in ipairs(vim.diagnostic.get()) do
  table.insert(seen, { file = vim.api.nvim_buf_get_name(item.bufnr), line = item.lnum, severity = item.severity,
                       message = item.message, source = item.source })
end
vim.fn.writefile({ vim.fn.json_encode({ found = found, diagnostics = seen, nvim = vim.version() }) }, vim.env.FIRSTFAULT_TEST_OUT)
vim.cmd("qa!")
"""


def readme_neovim_lines() -> str:
    readme = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## In the editor"):]
    return re.search(r"```lua\n(.*?)```", section, re.S).group(1)


def test_neovim_shows_the_first_fault_as_an_error(tmp_path, cache_home):
    folder = tmp_path / "run"
    shutil.copytree(REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs", folder)
    init = tmp_path / "init.lua"
    init.write_text(SHIM + readme_neovim_lines() + PROBE, encoding="utf-8")
    out = tmp_path / "diagnostics.json"
    env = {**os.environ, "FIRSTFAULT_TEST_LOG": str(folder / "rank0.log"), "FIRSTFAULT_TEST_OUT": str(out),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "XDG_CACHE_HOME": str(cache_home), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = subprocess.run([NVIM, "--headless", "-n", "-i", "NONE", "-u", str(init)], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=100)
    assert out.exists(), f"nvim wrote nothing (exit {result.returncode}): {result.stderr[-2000:]}"
    report = json.loads(out.read_text())
    assert report["found"], report
    errors = [item for item in report["diagnostics"] if item["severity"] == 1]
    assert [(Path(item["file"]).name, item["line"]) for item in errors] == [("rank1.log", 15)]
    assert errors[0]["source"] == "firstfault" and "rank 1" in errors[0]["message"]
    opened = [item for item in report["diagnostics"] if Path(item["file"]).name == "rank0.log"]
    assert [(item["severity"], item["line"]) for item in opened] == [(3, 18)]  # rank 0: collateral
    assert opened[0]["message"].startswith("Collateral, not the cause")
