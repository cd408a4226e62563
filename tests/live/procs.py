"""Bounded subprocesses for the live tests, their output lines time-stamped on arrival."""
from __future__ import annotations

import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

FIRSTFAULT = [sys.executable, "-m", "firstfault.cli"]
JOB = Path(__file__).with_name("job.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch)")


def torchrun() -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run"]


class Proc:
    """A subprocess in its own process group; stdout and stderr lines queued with their arrival time."""

    def __init__(self, command: list[str], *, cwd=None, env=None) -> None:
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        self.command = command
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                        env=full_env, start_new_session=True)
        self.stdout: queue.Queue = queue.Queue()
        self.stdout_lines: list[tuple[float, str]] = []
        self.stderr_lines: list[tuple[float, str]] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self.stdout_lines, self.stdout), daemon=True),
            threading.Thread(target=self._pump, args=(self.process.stderr, self.stderr_lines, None), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _pump(stream, lines, sink) -> None:
        for raw in iter(stream.readline, b""):
            item = (time.time(), raw.decode("utf-8", errors="replace").rstrip("\n"))
            lines.append(item)
            if sink is not None:
                sink.put(item)

    def wait_stderr(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for _, line in self.stderr_lines):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not seen on stderr within {timeout} s:\n{self.stderr_text()}")

    def next_json(self, predicate, timeout: float) -> tuple[float, dict]:
        """The first JSON line on stdout that satisfies `predicate`, with its arrival time."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching alert within {timeout} s; stdout:\n{self.stdout_text()}\n"
                                     f"stderr:\n{self.stderr_text()[-4000:]}")
            try:
                arrived, line = self.stdout.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if predicate(value):
                return arrived, value

    def stdout_text(self) -> str:
        return "\n".join(line for _, line in self.stdout_lines)

    def stderr_text(self) -> str:
        return "\n".join(line for _, line in self.stderr_lines)

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=5)
        return code

    def kill(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                break
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                continue
        try:  # torchrun's workers may outlive the agent for a moment
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


