"""The web app under hostile load (issue 21's "done when"), against a real `firstfault serve`.

    .venv/bin/python bench/web_bench.py            # prints the figures
    .venv/bin/python bench/web_bench.py --write    # also writes its section of bench/RESULTS.md

Measured, each in the same run so that the figures are ratios and bounds, not absolute times:
- an adversarial 64 MiB upload (a 65 KB line of `password=` repeated, over and over; and the
  same with an error on every line, so that every line is a candidate and masked) against a
  normal 64 MiB console of the same size: seconds, and the ratio;
- a normal 15 KB diagnosis while 2 adversarial uploads run and 250 slow clients hold
  connections: its latency (target: within 2 s);
- 32 uploads of a .gz of 243 MiB of log (about 30 MiB compressed) sent at once: the server's
  peak resident memory (target: under 1 GB), and how many were answered 200 / 503 (busy: come
  back later).
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = BENCH / "data" / "web"
PYTHON = sys.executable
MiB = 1 << 20
SECTION_START = "<!-- web_bench: written by bench/web_bench.py --write -->"
SECTION_END = "<!-- /web_bench -->"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self) -> None:
        self.port = free_port()
        self.log = open(DATA / "serve.log", "wb")
        self.process = subprocess.Popen([PYTHON, "-m", "firstfault.cli", "serve", "--port", str(self.port), "--no-history"],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/entries", timeout=5).read()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server did not start: {(DATA / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.2)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def post(url: str, body: bytes, content_type: str = "text/plain", timeout: float = 900) -> tuple[int | str, float]:
    """(HTTP status, or "closed" when the server closed the connection before the body was sent:
    a busy server answers 503 at once and does not read a body it will not take), seconds."""
    request = urllib.request.Request(f"{url}/api/diagnose", data=body, method="POST", headers={"content-type": content_type})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status, time.monotonic() - started
    except urllib.error.HTTPError as error:
        return error.code, time.monotonic() - started
    except (urllib.error.URLError, ConnectionError):
        return "closed", time.monotonic() - started


def normal_console(size: int) -> bytes:
    rng = random.Random(21)
    lines, total, step = [], 0, 0
    while total < size - 200:
        step += 1
        line = (f"[rank{step % 8}]:2026-12-04 10:{step // 6000 % 60:02d}:{step // 100 % 60:02d},{step % 1000:03d} INFO "
                f"train: step {step} loss {rng.random() * 3:.4f} lr 3.0e-04 tokens/s {rng.randint(40000, 60000)} "
                f"grad_norm {rng.random():.4f} mem_alloc_gb {rng.random() * 70:.2f} data_time {rng.random():.3f}\n")
        lines.append(line)
        total += len(line)
    lines.append("[rank3]: RuntimeError: CUDA error: device-side assert triggered\n")
    return "".join(lines).encode()


def adversarial(size: int, with_error: bool) -> bytes:
    line = ("[rank3]: RuntimeError: CUDA error: device-side assert triggered " if with_error else "") + "password=" * 7200
    body = (line + "\n").encode()
    return body * (size // len(body))


def slow_clients(url: str, count: int, stop: threading.Event) -> list[socket.socket]:
    """Connections that send a request head a byte at a time (each is cut off by the server's
    head timeout and opened again until `stop`)."""
    host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
    held: list[socket.socket] = []

    def keep(index: int) -> None:
        while not stop.is_set():
            try:
                connection = socket.create_connection((host, port), timeout=5)
            except OSError:
                time.sleep(0.5)
                continue
            held.append(connection)
            try:
                for byte in b"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                    if stop.is_set():
                        break
                    connection.send(bytes([byte]))
                    time.sleep(1.0)
            except OSError:
                pass
            finally:
                connection.close()

    for index in range(count):
        threading.Thread(target=keep, args=(index,), daemon=True).start()
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write this bench's section of bench/RESULTS.md")
    args = parser.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    size = 64 * MiB - 4096
    normal, hostile, hostile_hits = normal_console(size), adversarial(size, False), adversarial(size, True)
    small = normal_console(15_000)
    rows = []
    server = Server()
    try:
        post(server.url, small)  # warm: knowledge base, masker, compiled patterns
        times = {}
        for name, body in (("normal 64 MiB console", normal), ("64 MiB of 65 KB `password=` lines", hostile),
                           ("the same, an error on every line", hostile_hits)):
            status, seconds = post(server.url, body)
            times[name] = seconds
            rows.append((name, f"{seconds:.1f} s (HTTP {status})", f"{seconds / times['normal 64 MiB console']:.2f}x the normal upload"))
        # a normal diagnosis while 2 adversarial uploads run and 250 slow clients hold connections
        stop = threading.Event()
        slow_clients(server.url, 250, stop)
        heavy = [threading.Thread(target=post, args=(server.url, hostile_hits), daemon=True) for _ in range(2)]
        for thread in heavy:
            thread.start()
        time.sleep(2.0)
        latencies = [post(server.url, small, timeout=120) for _ in range(3)]
        stop.set()
        for thread in heavy:
            thread.join(timeout=900)
        worst = max(seconds for _, seconds in latencies)
        rows.append(("a 15 KB diagnosis during 2 adversarial uploads and 250 slow clients",
                     f"{worst:.2f} s worst of 3 (HTTP {', '.join(str(status) for status, _ in latencies)})",
                     "target <= 2 s: " + ("met" if worst <= 2.0 and all(status == 200 for status, _ in latencies) else "NOT MET")))
    finally:
        server.close()
    # memory: 32 parallel uploads of a 32 MiB .gz (243 MiB expanded), on a fresh server
    archive = gzip.compress(normal_console(243 * MiB), compresslevel=6)
    server = Server()
    try:
        results: list[tuple[int, float]] = []
        threads = [threading.Thread(target=lambda: results.append(post(server.url, archive)), daemon=True)
                   for _ in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=1800)
        peak = server.peak_rss_mib()
    finally:
        server.close()
    counts = {status: sum(1 for code, _ in results if str(code) == status) for status in sorted({str(code) for code, _ in results})}
    rows.append((f"32 parallel uploads of a {len(archive) / MiB:.0f} MiB .gz", f"peak RSS {peak:.0f} MiB",
                 f"target < 1024 MiB: {'met' if peak < 1024 else 'NOT MET'}; answers {counts}"))
    text = report(rows)
    print(text)
    if args.write:
        write_section(text)
    return 0


def report(rows) -> str:
    lines = [SECTION_START, "## The web app under hostile load", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs "
             f"(`bench/web_bench.py`, a real `firstfault serve` on loopback).", "",
             "| what | measured | against |", "| --- | --- | --- |"]
    lines += [f"| {name} | {measured} | {against} |" for name, measured, against in rows]
    return "\n".join(lines + ["", SECTION_END])


def write_section(text: str) -> None:
    path = BENCH / "RESULTS.md"
    old = path.read_text() if path.exists() else ""
    if SECTION_START in old and SECTION_END in old:
        before, rest = old.split(SECTION_START, 1)
        after = rest.split(SECTION_END, 1)[1]
        path.write_text(before + text + after)
    else:
        path.write_text(old.rstrip() + "\n\n" + text + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
