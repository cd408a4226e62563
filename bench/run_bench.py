"""firstfault against ripgrep and a plain Python `re` loop, on the same signatures, in one go.

    .venv/bin/python bench/run_bench.py            # corpora under bench/data/, made if missing
    .venv/bin/python bench/run_bench.py --write    # also write bench/RESULTS.md
    .venv/bin/python bench/run_bench.py --quick    # under a minute: ratios to ripgrep, before landing
                                                   # any change to ingest, match or correlate

Corpora (bench/make_corpus.py): one 1 GiB Slurm output, 1,024 rank files of 1 MiB, and the
1 GiB output gzipped. For each: firstfault end to end (`firstfault diagnose --format json`,
diagnosis included), ripgrep (`rg --no-unicode -n -f signatures`, `-z` for gzip) and a Python
loop (`for line in file: combined.search(line)`). Reported: wall time, CPU time (user+sys of
the process tree), throughput, firstfault/ripgrep ratios, peak memory (the largest process's
RSS, and the whole process tree's PSS, sampled every 50 ms) and whether each found the planted
failure (firstfault: the diagnosis names the failure and rank 517; ripgrep and the loop: the
planted line is among their matches). The Python loop runs at well under 1 MB/s, so it is
timed on the first 8 MiB and checked for the failure on 4 MiB around it (both stated).
Every run is bounded in time; each tool runs twice, alternating, and the faster run counts (the
machine is shared).
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = BENCH / "data"
PYTHON = sys.executable
RUN_TIMEOUT = 600
LOOP_SAMPLE = 8 << 20
LOOP_WINDOW = 4 << 20

CORPORA = {
    "64 files x 3.2 MiB": ("ranks-64x3m", ["ranks", "--files", "64", "--size", "3.2M"]),
    "1 file x 1 GiB": ("single-1g", ["single", "--size", "1G"]),
    "1,024 files x 1 MiB": ("ranks-1024x1m", ["ranks", "--files", "1024", "--size", "1M"]),
    "1 GiB gzipped": ("single-1g-gz", ["single", "--size", "1G", "--gzip"]),
}


# -- measuring ------------------------------------------------------------------------------

def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stream:
                fields = stream.read().rsplit(b")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in bytes of one process."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as stream:
            for line in stream:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


class Run:
    def __init__(self, command: list[str], timeout: int = RUN_TIMEOUT, env: dict | None = None) -> None:
        self.command = command
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        self.peak_rss = self.peak_pss = 0
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                   env={**os.environ, **(env or {})})
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                total_pss = 0
                for pid in _tree(process.pid):
                    rss, pss = _memory(pid)
                    self.peak_rss = max(self.peak_rss, rss)
                    total_pss += pss
                self.peak_pss = max(self.peak_pss, total_pss)
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            self.stdout, self.stderr = process.communicate(timeout=timeout)
            self.timed_out = False
        except subprocess.TimeoutExpired:
            process.kill()
            self.stdout, self.stderr = process.communicate()
            self.timed_out = True
        done.set()
        sampler.join()
        self.wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.returncode = process.returncode


def best(runs: list[Run]) -> Run:
    return min(runs, key=lambda run: run.wall)


# -- the three tools --------------------------------------------------------------------------

def signatures() -> list[str]:
    sys.path.insert(0, str(ROOT / "src"))
    from firstfault.kb import load_knowledge_base
    from firstfault.match.context import CONTEXT_SIGNATURES

    kb = load_knowledge_base()
    return [signature.pattern for signature in list(kb.signatures) + list(CONTEXT_SIGNATURES)]


def _without_lookarounds(pattern: str) -> str:
    """ripgrep's default engine has no look-around: drop each `(?=..)`, `(?!..)`, `(?<=..)`,
    `(?<!..)` group (ripgrep then matches a few more lines than firstfault's signature, never
    fewer, and does no more work for them)."""
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), index) and (index == 0 or pattern[index - 1] != "\\"):
            depth, index = 0, index
            while index < len(pattern):
                char = pattern[index]
                if char == "\\":
                    index += 2
                    continue
                depth += char == "("
                depth -= char == ")"
                index += 1
                if depth == 0:
                    break
            continue
        out.append(pattern[index])
        index += 1
    return "".join(out)


def ripgrep_patterns(patterns: list[str]) -> str:
    """The same patterns in ripgrep's syntax: one alternation needs unnamed groups, a leading
    (?i) becomes a scoped group, look-arounds go, and a character outside ASCII (a zh_CN shell's
    `段错误`) is written as its UTF-8 bytes, which is what `--no-unicode` matches."""
    lines = []
    for pattern in patterns:
        pattern = _without_lookarounds(re.sub(r"\(\?P<\w+>", "(?:", pattern))
        if pattern.startswith("(?i)"):
            pattern = "(?i:" + pattern[4:] + ")"
        lines.append("".join(char if char.isascii() else "".join(f"\\x{byte:02X}" for byte in char.encode("utf-8"))
                             for char in pattern))
    return "\n".join(lines) + "\n"


LOOP = r'''
import re, sys, time
patterns = [line.rstrip("\n") for line in open(sys.argv[1], encoding="utf-8")]
combined = re.compile("|".join("(?:%s)" % p for p in patterns))
path, start, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import gzip
opener = gzip.open if path.endswith(".gz") else open
found = []
with opener(path, "rb") as raw:
    raw.seek(start) if not path.endswith(".gz") else raw.read(start)
    if start:
        raw.readline()
    done = 0
    for number, line in enumerate(raw):
        done += len(line)
        text = line.decode("utf-8", "replace")
        if combined.search(text):
            found.append(text.rstrip("\n"))
        if done >= size:
            break
print(done)
print("\n".join(found))
'''


def firstfault_command(path: Path) -> list[str]:
    return [PYTHON, str(BENCH / "firstfault_cli.py"), "diagnose", "--format", "json", str(path)]


def check_firstfault(run: Run, manifest: dict) -> bool:
    try:
        diagnosis = json.loads(run.stdout)
    except ValueError:
        return False
    primary = diagnosis.get("primary") or {}
    initiating = primary.get("initiating") or {}
    return primary.get("failure_id") == manifest["failure_id"] and initiating.get("rank") == manifest["initiating_rank"]


def check_lines(lines: list[str], manifest: dict, single: bool, in_planted_file: bool = False) -> bool:
    """The planted line is among `lines` (ripgrep prefixes a file name and line number)."""
    rank = manifest["initiating_rank"]
    for line in lines:
        if manifest["planted_text"] not in line:
            continue
        if single and re.match(rf"^(?:\S*:)?(?:\d+:)?\s*{rank}: ", line):
            return True
        if not single and (in_planted_file or manifest["planted_file"] in line):
            return True
    return False


# -- corpora ----------------------------------------------------------------------------------

def ensure_corpus(name: str, arguments: list[str]) -> tuple[Path, dict]:
    folder = DATA / name
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        print(f"generating {name} ...", file=sys.stderr, flush=True)
        subprocess.run([PYTHON, str(BENCH / "make_corpus.py"), arguments[0], str(folder), *arguments[1:]],
                       check=True, timeout=3600)
    manifest = json.loads(manifest_path.read_text())
    files = manifest["files"]
    target = folder / files[0] if len(files) == 1 else folder
    return target, manifest


def planted_offset(path: Path, manifest: dict) -> int:
    if manifest.get("planted_offset"):
        return int(manifest["planted_offset"])
    if path.suffix == ".gz":
        import gzip

        needle, offset, tail = manifest["planted_text"].encode(), 0, b""
        with gzip.open(path, "rb") as stream:
            while True:
                piece = stream.read(16 << 20)
                if not piece:
                    return 0
                found = (tail + piece).find(needle)
                if found >= 0:
                    return offset - len(tail) + found
                tail = piece[-len(needle):]
                offset += len(piece)
    with open(path, "rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        return max(0, mapped.find(manifest["planted_text"].encode()))


def corpus_bytes(target: Path) -> int:
    if target.is_dir():
        return sum(path.stat().st_size for path in target.iterdir() if path.name != "manifest.json")
    return target.stat().st_size


def decoded_bytes(target: Path, manifest: dict) -> int:
    """Bytes of log text (a gzip's uncompressed size, from its trailer when under 4 GiB)."""
    if target.suffix == ".gz":
        with open(target, "rb") as stream:
            stream.seek(-4, 2)
            return int.from_bytes(stream.read(4), "little")
    return corpus_bytes(target)


# -- the benchmark ----------------------------------------------------------------------------

def bench_corpus(label: str, target: Path, manifest: dict, patterns_file: Path, repeats: int) -> dict:
    single = manifest["layout"] == "single"
    size = decoded_bytes(target, manifest)
    firstfault_runs, ripgrep_runs = [], []
    rg = ["rg", "--no-unicode", "-n", "-f", str(patterns_file)] + (["-z"] if target.suffix == ".gz" else []) + [str(target)]
    for _ in range(repeats):
        ripgrep_runs.append(Run(rg))
        firstfault_runs.append(Run(firstfault_command(target)))
    ff, rgrun = best(firstfault_runs), best(ripgrep_runs)
    no_dumps = None
    if not single:
        no_dumps = best([Run(firstfault_command(target), env={"FIRSTFAULT_BENCH_NO_DUMP_DISCOVERY": "1"})
                         for _ in range(repeats)])
    # the Python loop: throughput on a sample, detection around the planted failure
    loop_target = target if single else target / manifest["planted_file"]
    sample = Run([PYTHON, "-c", LOOP, str(patterns_file), str(loop_target), "0", str(LOOP_SAMPLE)], timeout=RUN_TIMEOUT)
    offset = planted_offset(loop_target, manifest) if single else 0
    window_start = max(0, offset - LOOP_WINDOW // 2)
    window = Run([PYTHON, "-c", LOOP, str(patterns_file), str(loop_target), str(window_start), str(LOOP_WINDOW)],
                 timeout=RUN_TIMEOUT)
    sample_bytes = int((sample.stdout.decode().splitlines() or ["0"])[0] or 0)
    window_lines = window.stdout.decode("utf-8", "replace").splitlines()[1:]
    rg_lines = rgrun.stdout.decode("utf-8", "replace").splitlines()
    if not single:
        rg_lines = [line for line in rg_lines if manifest["planted_file"] in line]
    return {
        "label": label, "bytes": size, "files": len(manifest["files"]),
        "firstfault": {"wall": ff.wall, "cpu": ff.cpu, "rss": ff.peak_rss, "pss": ff.peak_pss,
                        "found": check_firstfault(ff, manifest) and not ff.timed_out,
                        "walls": [run.wall for run in firstfault_runs], "stderr": ff.stderr.decode()[-500:]},
        "ripgrep": {"wall": rgrun.wall, "cpu": rgrun.cpu, "rss": rgrun.peak_rss, "pss": rgrun.peak_pss,
                     "found": check_lines(rg_lines, manifest, single) and not rgrun.timed_out,
                     "walls": [run.wall for run in ripgrep_runs], "matches": len(rgrun.stdout.splitlines())},
        "no_dumps": None if no_dumps is None else {
            "wall": no_dumps.wall, "cpu": no_dumps.cpu, "rss": no_dumps.peak_rss, "pss": no_dumps.peak_pss,
            "found": check_firstfault(no_dumps, manifest)},
        "python": {"wall": sample.wall, "cpu": sample.cpu, "rss": sample.peak_rss, "pss": sample.peak_pss,
                    "sample_bytes": sample_bytes, "found": check_lines(window_lines, manifest, single, in_planted_file=True)},
    }


def tiny_log(repeats: int = 7, env: dict | None = None) -> dict:
    path = DATA / "tiny.log"
    lines = [f"[rank1]: 2026-12-02 10:00:{second:02d},000 - INFO - step {second} loss=2.{second:02d}" for second in range(8)]
    lines.append("[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered")
    text = ("\n".join(lines) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    command = [str(Path(PYTHON).parent / "firstfault"), "diagnose", str(path)]
    Run(command, env=env)  # warm the caches (knowledge base, compiled database), as on any second run
    runs = [Run(command, env=env) for _ in range(repeats)]
    return {"bytes": len(text.encode()), "walls": [run.wall for run in runs], "cpus": [run.cpu for run in runs],
            "median": statistics.median(run.wall for run in runs), "min": min(run.wall for run in runs),
            "cpu_median": statistics.median(run.cpu for run in runs)}


def _mb(count: float) -> str:
    return f"{count / 1e6:.0f} MB"


def report(results: list[dict], tiny: dict, environment: str) -> str:
    rows = ["| corpus | tool | wall s | CPU s | MB/s (wall) | MB/s (CPU) | peak RSS (largest process) | peak PSS (process tree) | found planted failure |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    ratios = ["| corpus | firstfault / ripgrep, wall throughput | firstfault / ripgrep, CPU throughput | firstfault / Python loop, CPU throughput |",
              "| --- | ---: | ---: | ---: |"]
    for result in results:
        size = result["bytes"]
        for tool in ("firstfault", "ripgrep", "python"):
            item = result[tool]
            measured = item.get("sample_bytes", size)
            wall_rate = measured / item["wall"] / 1e6
            cpu_rate = measured / max(item["cpu"], 1e-9) / 1e6
            name = {"firstfault": "firstfault (diagnosis included)", "ripgrep": "ripgrep 13 `--no-unicode`",
                    "python": f"Python `re` loop (first {LOOP_SAMPLE >> 20} MiB)"}[tool]
            rates = f"{wall_rate:.0f} | {cpu_rate:.0f}" if wall_rate >= 10 else f"{wall_rate:.2f} | {cpu_rate:.2f}"
            rows.append(f"| {result['label']} | {name} | {item['wall']:.2f} | {item['cpu']:.2f} | {rates} | "
                        f"{_mb(item['rss'])} | {_mb(item['pss'])} | {'yes' if item['found'] else 'NO'} |")
        if result.get("no_dumps"):
            item = result["no_dumps"]
            rows.append(f"| {result['label']} | firstfault without dump discovery (diagnostic) | {item['wall']:.2f} | "
                        f"{item['cpu']:.2f} | {size / item['wall'] / 1e6:.0f} | {size / max(item['cpu'], 1e-9) / 1e6:.0f} | "
                        f"{_mb(item['rss'])} | {_mb(item['pss'])} | {'yes' if item['found'] else 'NO'} |")
        ff, rg, py = result["firstfault"], result["ripgrep"], result["python"]
        py_cpu_rate = py["sample_bytes"] / max(py["cpu"], 1e-9)
        ratios.append(f"| {result['label']} | {rg['wall'] / ff['wall']:.2f} | {rg['cpu'] / max(ff['cpu'], 1e-9):.2f} | "
                      f"{(size / max(ff['cpu'], 1e-9)) / py_cpu_rate:.0f}x |")
        if result.get("no_dumps"):
            item = result["no_dumps"]
            ratios.append(f"| {result['label']}, without dump discovery (diagnostic) | {rg['wall'] / item['wall']:.2f} | "
                          f"{rg['cpu'] / max(item['cpu'], 1e-9):.2f} | |")
    lines = [
        "# Benchmark results", "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {environment}.", "",
        "Commands:", "",
        "```",
        "apt-get install -y ripgrep                     # bench only",
        ".venv/bin/pip install -e '.[fast]'             # hyperscan + isal",
        ".venv/bin/python bench/make_corpus.py single bench/data/single-1g --size 1G",
        ".venv/bin/python bench/make_corpus.py ranks bench/data/ranks-1024x1m --files 1024 --size 1M",
        ".venv/bin/python bench/make_corpus.py single bench/data/single-1g-gz --size 1G --gzip",
        ".venv/bin/python bench/run_bench.py --write    # makes missing corpora itself",
        "```", "",
        "firstfault runs as `python bench/firstfault_cli.py diagnose --format json PATH` (the CLI, with",
        "many-file inputs scanned across processes by `firstfault.match.parallel.scan_files`).",
        "ripgrep gets the same signatures (`rg --no-unicode -n -f signatures.rg`; named groups unnamed, a",
        "leading `(?i)` scoped). The Python loop is `for line in file: combined.search(line)` over one",
        "alternation of the signatures; it is timed on the first 8 MiB and checked for the failure on",
        "4 MiB around the planted lines (at its speed the whole corpus would take most of an hour).",
        "For the many-file set a diagnostic row shows firstfault with `pipeline._dump_report` (the search",
        "for flight-recorder and stack dumps among the inputs, run before the scan) switched off.",
        "Each of firstfault and ripgrep ran twice, alternating; the faster run is shown. The machine",
        "is shared with other work, so wall times carry noise; CPU times are steadier.", "",
        "## Throughput and memory", "", *rows, "",
        "## Ratios (targets, wall: 64 files >= 0.70, 1 GiB >= 1.20, 1 GiB gzipped >= 1.00; see QUICK)", "", *ratios, "",
        "## A 1 KB log", "",
        f"`firstfault diagnose tiny.log` ({tiny['bytes']} bytes, caches warm): median wall {tiny['median']:.3f} s, "
        f"best {tiny['min']:.3f} s, median CPU {tiny['cpu_median']:.3f} s over {len(tiny['walls'])} runs "
        f"({', '.join(f'{w:.2f}' for w in tiny['walls'])}).", "",
        f"Without byte-code caches (every module compiled from source, as with PYTHONDONTWRITEBYTECODE=1 and a fresh "
        f"checkout): median wall {tiny['no_bytecode']['median']:.3f} s, best {tiny['no_bytecode']['min']:.3f} s.", "",
    ]
    return "\n".join(lines)


# The quick guard: these corpora, their targets (firstfault's throughput over ripgrep's, wall
# time, diagnosis included, in the same run), and a 1 KB log's wall time.
QUICK = {
    "64 files x 3.2 MiB": 0.70,
    "1 file x 1 GiB": 1.20,
    "1 GiB gzipped": 1.00,
}
TINY_LIMIT = 0.2
QUICK_MEMORY_LIMIT = 200 << 20  # the 1 GiB file's peak (largest process)


def quick(patterns_file: Path, repeats: int) -> int:
    """firstfault and ripgrep on the same files, alternating, best of `repeats` each: the
    throughput ratio per corpus against its target, and the 1 KB log's wall time."""
    failed = []
    for label, target_ratio in QUICK.items():
        name, arguments = CORPORA[label]
        target, manifest = ensure_corpus(name, arguments)
        rg = ["rg", "--no-unicode", "-n", "-f", str(patterns_file)] + (["-z"] if target.suffix == ".gz" else []) + [str(target)]
        ff_runs, rg_runs = [], []
        for _ in range(repeats):
            rg_runs.append(Run(rg))
            ff_runs.append(Run(firstfault_command(target)))
        ff, rgrun = best(ff_runs), best(rg_runs)
        ratio = rgrun.wall / ff.wall
        found = check_firstfault(ff, manifest) and not ff.timed_out
        memory_ok = label != "1 file x 1 GiB" or ff.peak_rss < QUICK_MEMORY_LIMIT
        ok = ratio >= target_ratio and found and memory_ok
        print(f"{label:22} firstfault {ff.wall:6.2f} s (CPU {ff.cpu:5.2f}, peak {ff.peak_rss / 1e6:4.0f} MB)  "
              f"ripgrep {rgrun.wall:6.2f} s  ratio {ratio:4.2f} (target {target_ratio:.2f})"
              f"{'' if found else '  MISSED THE PLANTED FAILURE'}  {'ok' if ok else 'BELOW TARGET'}", flush=True)
        if not ok:
            failed.append(label)
    tiny = tiny_log(repeats=5)
    ok = tiny["median"] < TINY_LIMIT
    print(f"{'1 KB log':22} firstfault {tiny['median']:6.3f} s median of 5 (target < {TINY_LIMIT} s)  "
          f"{'ok' if ok else 'ABOVE TARGET'}")
    if not ok:
        failed.append("1 KB log")
    imports, modules = import_time()
    print(f"{'imports (diagnose)':22} {imports * 1000:6.0f} ms, {modules} firstfault modules "
          f"(python -X importtime; tests/speed/test_imports.py keeps what is loaded)")
    return 1 if failed else 0


def import_time() -> tuple[float, int]:
    """Seconds `firstfault diagnose` spends importing (median of 5), and its firstfault modules."""
    example = ROOT / "examples" / "nccl-timeouts-after-assert"
    totals, modules = [], 0
    for _ in range(5):
        done = subprocess.run([PYTHON, "-X", "importtime", "-m", "firstfault.cli", "diagnose", str(example)],
                              capture_output=True, text=True, timeout=120)
        rows = [line.split("|") for line in done.stderr.splitlines()
                if line.startswith("import time:") and "imported package" not in line]
        totals.append(sum(int(row[0].split(":")[1]) for row in rows) / 1e6)
        modules = sum(1 for row in rows if row[2].strip().split(".")[0] == "firstfault")
    return statistics.median(totals), modules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write bench/RESULTS.md")
    parser.add_argument("--quick", action="store_true",
                        help="ratios to ripgrep only (the 64-rank set, 1 GiB, 1 GiB gzipped, a 1 KB log): under a minute")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", choices=sorted(CORPORA), action="append", help="run only this corpus")
    args = parser.parse_args(argv)
    patterns_file = DATA / "signatures.rg"
    DATA.mkdir(parents=True, exist_ok=True)
    # as installed: byte-code compiled once (this environment sets PYTHONDONTWRITEBYTECODE)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(ROOT / "src" / "firstfault")], check=False,
                   stdout=subprocess.DEVNULL, timeout=300)
    patterns = signatures()
    patterns_file.write_text(ripgrep_patterns(patterns))
    if args.quick:
        return quick(patterns_file, args.repeats)
    results = []
    for label, (name, arguments) in CORPORA.items():
        if args.only and label not in args.only:
            continue
        target, manifest = ensure_corpus(name, arguments)
        print(f"benchmarking {label} ...", file=sys.stderr, flush=True)
        results.append(bench_corpus(label, target, manifest, patterns_file, args.repeats))
        print(json.dumps(results[-1], indent=1, default=str)[:3000], file=sys.stderr, flush=True)
    tiny = tiny_log()
    tiny["no_bytecode"] = tiny_log(env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(DATA / "no-pycache")})
    environment = f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {len(patterns)} signatures"
    text = report(results, tiny, environment)
    print(text)
    if args.write:
        write_results(text)
    return 0


def write_results(text: str) -> None:
    """This bench's part of RESULTS.md; what follows it is kept (the notes on what changed, which
    a person writes after a run, and the sections of lsp_bench.py and fleet_bench.py)."""
    path = BENCH / "RESULTS.md"
    old = path.read_text() if path.exists() else ""
    kept = old.find("\n## What changed")
    if kept < 0:
        kept = old.find("\n<!-- ")
    path.write_text(text.rstrip() + "\n" + (old[kept:] if kept >= 0 else ""))


if __name__ == "__main__":
    raise SystemExit(main())
