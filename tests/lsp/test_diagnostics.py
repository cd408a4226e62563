"""Diagnostics from a real LSP client: the right files, lines and severities on multi-rank folders
(the first fault where `firstfault diagnose` puts it), links back and forth, a healthy run: none."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import diagnostics_of, open_file, wait_for

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]
ERROR, WARNING, INFORMATION = (types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning,
                               types.DiagnosticSeverity.Information)


def cli_contract(folder: Path) -> dict:
    """What `firstfault diagnose --format json` says of the same folder."""
    result = subprocess.run([sys.executable, "-m", "firstfault.cli", "diagnose", "--format", "json", str(folder)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def by_severity(client, severity) -> list[tuple[str, object]]:
    return [(uri, item) for uri, items in client.diagnostics.items() for item in items if item.severity == severity]


async def test_multi_rank_folder_marks_every_rank_file(lsp, run_folder):
    folder = run_folder("exc-two-ranks-plain-ws4")
    open_file(lsp, folder / "rank0.log")
    await wait_for(lambda: len(lsp.diagnostics) == 4, "diagnostics on the four rank files")
    contract = cli_contract(folder)
    first = contract["primary"]["initiating"]
    errors = by_severity(lsp, ERROR)
    assert len(errors) == 1
    uri, error = errors[0]
    assert uri == Path(first["source"]).as_uri() == (folder / "rank1.log").as_uri()
    assert error.range.start.line == first["line"] - 1 == 15
    assert error.code == contract["primary"]["entry_id"] == "user-code-exception"
    assert error.source == "firstfault"
    assert "Unhandled Python exception" in error.message and "rank 1" in error.message and "IndexError" in error.message
    assert error.code_description.href.endswith("/entries/user-code-exception.md")
    assert Path(error.code_description.href.removeprefix("file://")).read_text().startswith("## Unhandled Python exception")
    # rank 3 raised KeyError on its own: the same failure, not collateral
    [(uri3, same)] = by_severity(lsp, WARNING)
    assert uri3 == (folder / "rank3.log").as_uri() and same.range.start.line == 27
    # ranks 0 and 2 lost their peer: collateral, each on its own file, linked to the first fault
    collateral = {uri: item for uri, item in by_severity(lsp, INFORMATION)}
    assert set(collateral) == {(folder / "rank0.log").as_uri(), (folder / "rank2.log").as_uri()}
    assert set(contract["primary"]["initiating"].keys()) >= {"source", "line"}
    assert collateral[(folder / "rank2.log").as_uri()].range.start.line == contract["collateral"][0]["first"]["line"] - 1
    for item in collateral.values():
        assert item.code == "collective-timeout-peer-crash"
        assert item.message.startswith("Collateral, not the cause")
        [back] = item.related_information
        assert back.location.uri == uri and back.location.range.start.line == 15
    linked = {(info.location.uri, info.location.range.start.line) for info in error.related_information}
    assert linked == {(uri3, 27)} | {(uri, item.range.start.line) for uri, item in collateral.items()}


async def test_combined_console_marks_lines_in_the_one_file(lsp, tmp_path):
    folder = tmp_path / "console-run"
    folder.mkdir()
    example = Path(__file__).resolve().parents[2] / "examples" / "nccl-timeouts-after-assert" / "console.log"
    (folder / "console.log").write_bytes(example.read_bytes())
    open_file(lsp, folder / "console.log")
    items = await wait_for(lambda: diagnostics_of(lsp, folder / "console.log"), "diagnostics on console.log")
    [error] = [item for item in items if item.severity == ERROR]
    assert error.range.start.line == cli_contract(folder)["primary"]["initiating"]["line"] - 1 == 28
    assert error.code == "cuda-device-side-assert"
    assert "rank 2" in error.message and "gpu-node-03" in error.message
    assert any(item.severity == INFORMATION and item.code == "collective-timeout-peer-crash" for item in items)


async def test_torchrun_log_dir_is_one_job(lsp, run_folder):
    logs = run_folder("exc-missing-key-logdir-ws3")
    attempt = next(logs.glob("torchelastic/*/attempt_0"))
    open_file(lsp, attempt / "1" / "stderr.log")
    contract = cli_contract(logs)
    first = contract["primary"]["initiating"]
    await wait_for(lambda: by_severity(lsp, ERROR), "the first fault")
    [(uri, error)] = by_severity(lsp, ERROR)
    assert uri == Path(first["source"]).as_uri()
    assert error.range.start.line == first["line"] - 1


async def test_a_healthy_run_gets_no_diagnostics(lsp, run_folder):
    folder = run_folder("healthy-noisy-tee-ws2")
    open_file(lsp, folder / "console.log")
    await wait_for(lambda: any("healthy" in item.message for item in lsp.log_messages), "the diagnosis to finish")
    assert lsp.diagnostics == {} or all(not items for items in lsp.diagnostics.values())


async def test_codes_link_the_web_apps_entry_page_while_it_runs(tmp_path, cache_home, run_folder):
    pytest.importorskip("fastapi", reason="the web extra is not installed")
    import socket
    import urllib.request

    from .conftest import start_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    web = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--port", str(port), "--no-history"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        def up() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/entries", timeout=1):
                    return True
            except OSError:
                return False

        await wait_for(up, "firstfault serve to answer", timeout=120)
        client = await start_client(tmp_path, cache_home, options={"webUrl": f"http://127.0.0.1:{port}"})
        folder = run_folder("exc-two-ranks-plain-ws4")
        open_file(client, folder / "rank0.log")
        await wait_for(lambda: len(client.diagnostics) == 4, "the diagnostics of the run")
        [(_uri, error)] = by_severity(client, ERROR)
        assert error.code_description.href == f"http://127.0.0.1:{port}/entries/user-code-exception"
        with urllib.request.urlopen(error.code_description.href, timeout=10) as page:
            assert page.status == 200 and b"Unhandled Python exception" in page.read()
    finally:
        if client is not None:
            await client.shutdown_session()
            await client.stop()
        web.terminate()
        web.wait(timeout=30)


async def test_a_failure_every_rank_raised_alike_is_marked_as_started_on_every_rank(lsp, run_folder):
    """Every rank refused the nccl backend (a real run): the first-fault marker says every rank
    alike, not a rank it does not know."""
    logs = run_folder("nccl-on-cpu-build-tee-ws2-r1")
    open_file(lsp, logs / "console.log")
    items = await wait_for(lambda: diagnostics_of(lsp, logs / "console.log"), "diagnostics on console.log")
    [error] = [item for item in items if item.severity == ERROR]
    assert error.code == "cuda-unavailable"
    assert "every rank alike" in error.message and "rank unknown" not in error.message
