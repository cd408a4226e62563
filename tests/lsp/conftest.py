"""A real LSP client (pytest-lsp) talking to `python -m firstfault.lsp` over stdio, and run folders
copied from the real torchrun runs in tests/fixtures/real (tests append to them, delete from them).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
import typing
from pathlib import Path

import pytest

if os.environ.get("FIRSTFAULT_REQUIRE_LSP") == "1":  # CI installs the extra: a skip would hide a failure
    import pygls  # noqa: F401
    import pytest_lsp  # noqa: F401
pytest.importorskip("pygls", reason="the editor server needs the lsp extra: pip install -e '.[lsp]'")
pytest.importorskip("pytest_lsp", reason="the editor server tests need pytest-lsp (the test extra)")

import pytest_asyncio  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, client_capabilities  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[2]
REAL_RUNS = REPOSITORY / "tests" / "fixtures" / "real"
POLL_SECONDS = 0.2
WAIT_SECONDS = 60.0


@pytest.fixture
def run_folder(tmp_path):
    """copy(name) -> a writable copy of tests/fixtures/real/<name>/logs."""

    def copy(name: str, into: str = "runs") -> Path:
        target = tmp_path / into / name
        shutil.copytree(REAL_RUNS / name / "logs", target)
        return target

    return copy


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory) -> Path:
    """One cache folder for every server of the session (compiled signatures are kept there,
    entries and reports written there), never the user's own. Filled once here: compiling the
    signatures takes a while on a loaded machine, and no test is about that."""
    cache = tmp_path_factory.mktemp("cache")
    subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", str(REAL_RUNS / "exc-two-ranks-plain-ws4" / "logs")],
                   env={**os.environ, "XDG_CACHE_HOME": str(cache)}, capture_output=True, timeout=600)
    return cache


async def start_client(tmp_path: Path, cache: Path, options: dict | None = None, environment: dict | None = None,
                       capabilities: str = "visual-studio-code"):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "firstfault.lsp"],
                                server_env={**os.environ, "XDG_CACHE_HOME": str(cache), **(environment or {})})
    client = await config.start()
    _read_code_actions_as_the_specification_says(client)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(capabilities),
        initialization_options={"pollSeconds": POLL_SECONDS, "webUrl": "", **(options or {})},
        workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="tmp")],
    ))
    return client


def _read_code_actions_as_the_specification_says(client) -> None:
    """lsprotocol 2025.0.0 reads any object with a `command` key as a Command, but a CodeAction
    has one too (an object, where a Command's is a string): tell them apart by that."""
    converter = client.protocol._converter

    def command_or_code_action(value, _type):
        kind = types.Command if isinstance(value.get("command"), str) else types.CodeAction
        return converter.structure(value, kind)

    converter.register_structure_hook(typing.Union[types.Command, types.CodeAction], command_or_code_action)


@pytest_asyncio.fixture
async def lsp(tmp_path, cache_home):
    client = await start_client(tmp_path, cache_home)
    yield client
    await client.shutdown_session()
    await client.stop()


def open_file(client, path: Path, text: str | None = None) -> str:
    """didOpen as an editor sends it; the text is the editor's copy (the server never uses it)."""
    uri = path.as_uri()
    if text is None:
        text = path.read_text(encoding="utf-8", errors="replace") if path.stat().st_size < 1 << 20 else ""
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="log", version=1, text=text)))
    return uri


async def wait_for(condition, what: str, timeout: float = WAIT_SECONDS):
    """Poll `condition()` until it is true (the server works in its own time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def diagnostics_of(client, path: Path) -> list:
    return list(client.diagnostics.get(path.as_uri(), []))
