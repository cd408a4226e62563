"""The editor server against `firstfault diagnose` on the same 64-rank folder, in one run.

    .venv/bin/python bench/lsp_bench.py            # corpus under bench/data/, made if missing
    .venv/bin/python bench/lsp_bench.py --write    # also write its section of bench/RESULTS.md

Corpus: `bench/make_corpus.py ranks --files 64 --size 8M` (one file per rank, the cascade at each
file's end: rank 517 hits an illegal memory access, the others time out). Measured, alternating,
each `--repeats` times, the fastest counting (the machine is shared):

- `firstfault diagnose --format json FOLDER`: wall time of the command, process start included;
- the editor server (`python -m firstfault.lsp`, a real LSP client over stdio): the time from
  `textDocument/didOpen` of one rank's file (an already initialized server, as in an editor that
  has a log open) to the `publishDiagnostics` of that file; and the same from starting the server
  process (cold: start, initialize, open). Also counted: the `$/progress` reports of the run.

Target (issue 12): warm diagnostics within 2x the command's time.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = BENCH / "data"
PYTHON = sys.executable
TARGET_RATIO = 2.0
TIMEOUT = 600
SECTION_START = "<!-- lsp_bench: written by bench/lsp_bench.py --write -->"
SECTION_END = "<!-- /lsp_bench -->"


def ensure_corpus(files: int, size: str) -> tuple[Path, dict]:
    folder = DATA / f"ranks-{files}x{size.lower()}"
    manifest = folder / "manifest.json"
    if not manifest.exists():
        print(f"generating {folder.name} ...", file=sys.stderr, flush=True)
        subprocess.run([PYTHON, str(BENCH / "make_corpus.py"), "ranks", str(folder), "--files", str(files), "--size", size],
                       check=True, timeout=3600)
    return folder, json.loads(manifest.read_text())


def cli_once(folder: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    result = subprocess.run([PYTHON, "-m", "firstfault.cli", "diagnose", "--format", "json", str(folder)],
                            capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    wall = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"firstfault diagnose failed: {result.stderr.strip()}")
    return wall, json.loads(result.stdout)


async def lsp_once(folder: Path, opened: Path) -> dict:
    client = LanguageClient("lsp-bench", "1")
    published: dict[str, list] = {}
    arrived: dict[str, float] = {}
    progress: list[str] = []

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published[params.uri] = list(params.diagnostics)
        arrived.setdefault(params.uri, time.perf_counter())

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def on_create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def on_progress(params: types.ProgressParams) -> None:
        value = params.value
        progress.append(value.get("kind", "") if isinstance(value, dict) else getattr(value, "kind", ""))

    started = time.perf_counter()
    await client.start_io(PYTHON, "-m", "firstfault.lsp")
    capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    await client.initialize_async(types.InitializeParams(
        capabilities=capabilities, process_id=os.getpid(), initialization_options={"webUrl": ""},
        workspace_folders=[types.WorkspaceFolder(uri=folder.parent.as_uri(), name="data")]))
    client.initialized(types.InitializedParams())
    initialized = time.perf_counter()
    uri = opened.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="log", version=1, text="")))
    deadline = time.monotonic() + TIMEOUT
    while uri not in arrived and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.2)  # the progress report's end follows the diagnostics
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    if uri not in arrived:
        raise SystemExit("the editor server published no diagnostics in time")
    return {"warm": arrived[uri] - initialized, "cold": arrived[uri] - started, "start": initialized - started,
            "published": published, "progress": progress, "uri": uri}


def check(result: dict, contract: dict, folder: Path, manifest: dict) -> bool:
    """The server's first fault is where the command's is, on the planted rank's file."""
    first = contract["primary"]["initiating"]
    errors = [(uri, item) for uri, items in result["published"].items() for item in items if item.severity == 1]
    return (contract["primary"]["failure_id"] == manifest["failure_id"] and first["rank"] == manifest["initiating_rank"]
            and len(errors) == 1 and errors[0][0] == Path(first["source"]).as_uri()
            and errors[0][1].range.start.line == first["line"] - 1 and bool(result["published"].get(result["uri"])))


def report(folder: Path, manifest: dict, cli: list[float], lsp: list[dict], correct: bool) -> str:
    size = sum(path.stat().st_size for path in folder.glob("rank*.log"))
    best_cli, warm, cold = min(cli), min(run["warm"] for run in lsp), min(run["cold"] for run in lsp)
    kinds = lsp[0]["progress"]
    shown = f"begin, {kinds.count('report')} reports, end" if kinds[:1] == ["begin"] and kinds[-1:] == ["end"] else "none"
    rows = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"`{folder.relative_to(ROOT)}`: {len(manifest['files'])} rank files, {size / 1e6:.0f} MB "
        f"(`bench/make_corpus.py ranks --files 64 --size 8M`). Fastest of {len(cli)} alternating runs each.",
        "",
        "| what | wall s | / `firstfault diagnose` |",
        "| --- | ---: | ---: |",
        f"| `firstfault diagnose --format json FOLDER` (process start included) | {best_cli:.2f} | 1.00 |",
        f"| editor server: `didOpen` of `rank0003.log` -> its diagnostics (server running) | {warm:.2f} | {warm / best_cli:.2f} |",
        f"| editor server, cold: start the server, initialize, open -> diagnostics | {cold:.2f} | {cold / best_cli:.2f} |",
        "",
        f"Target: warm <= {TARGET_RATIO:.1f}x: {'met' if warm / best_cli <= TARGET_RATIO else 'NOT met'}. "
        f"Progress shown during the warm run: {shown}. The server's first fault (an error on "
        f"rank{manifest['initiating_rank']:04d}.log) is the command's: {'yes' if correct else 'NO'}.",
    ]
    return "\n".join(rows)


def write_section(text: str) -> None:
    results = BENCH / "RESULTS.md"
    current = results.read_text() if results.exists() else "# Benchmark results\n"
    section = f"{SECTION_START}\n## The editor server (`firstfault lsp`) on a 64-rank folder\n\n{text}\n{SECTION_END}"
    if SECTION_START in current and SECTION_END in current:
        before, rest = current.split(SECTION_START, 1)
        current = before + section + rest.split(SECTION_END, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + section + "\n"
    results.write_text(current)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the section of bench/RESULTS.md")
    args = parser.parse_args(argv)
    folder, manifest = ensure_corpus(64, "8M")
    opened = folder / "rank0003.log"
    cli_times, lsp_runs, contract = [], [], None
    for _ in range(args.repeats):
        wall, contract = cli_once(folder)
        cli_times.append(wall)
        lsp_runs.append(asyncio.run(lsp_once(folder, opened)))
        print(f"cli {wall:.2f} s, lsp warm {lsp_runs[-1]['warm']:.2f} s, cold {lsp_runs[-1]['cold']:.2f} s", file=sys.stderr)
    correct = all(check(run, contract, folder, manifest) for run in lsp_runs)
    text = report(folder, manifest, cli_times, lsp_runs, correct)
    print(text)
    if args.write:
        write_section(text)
    ratio = min(run["warm"] for run in lsp_runs) / min(cli_times)
    return 0 if correct and ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
