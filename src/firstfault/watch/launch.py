"""`firstfault run`: start a launcher command and tee each rank's output into a log folder.

The command's stdout and stderr are copied, line by line, to the console (so the job looks as it
always did) and into `<log dir>`, each line without a time of its own stamped with when it arrived: lines with a torchrun `[defaultN]:` prefix into `rank<N>.log`
(`node<M>-local<N>.log` on node M > 0 of a multi-node job), every other line into `console.log`.
The watcher follows that folder like any other. For torchrun the environment asks for the prefixes
(`PET_TEE=3`, torchrun's own environment form of `--tee 3`) unless the command chose its own
`--tee`/`--redirects`; Python output is unbuffered (`PYTHONUNBUFFERED=1`) unless set otherwise;
`FIRSTFAULT_ERROR_DIR` points `firstfault.install()` at `<log dir>/errors`.
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path

from ..hook import ERROR_DIR_ENV
from ..ingest.attribution import parse_prefix
from ..ingest.timestamps import Clock

_TEE_PREFIX = re.compile(rb"^\[([A-Za-z_-]*?)(\d{1,5})\]:")
_CLOCK = Clock()
# lines of a traceback (frames, the header, the exception line): stamped, they would lose the shape
# the engine reads them by; they inherit the time of the stamped line before them
_TRACEBACK_PART = re.compile(r"\s|Traceback\b|[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b")
_TORCHRUN_OUTPUT_FLAGS = ("--tee", "-t", "--redirects", "-r")


def is_torchrun(command: list[str]) -> bool:
    if not command:
        return False
    if os.path.basename(command[0]) == "torchrun":
        return True
    return any(command[index] == "-m" and command[index + 1] in ("torch.distributed.run", "torch.distributed.launch")
               for index in range(len(command) - 1))


def _option(command: list[str], names: tuple[str, ...]) -> str | None:
    for index, argument in enumerate(command):
        for name in names:
            if argument == name and index + 1 < len(command):
                return command[index + 1]
            if argument.startswith(name + "="):
                return argument.split("=", 1)[1]
    return None


def _launcher_part(command: list[str]) -> list[str]:
    """The launcher's own arguments: those before the training script (whose flags are its own)."""
    for index, argument in enumerate(command[1:], start=1):
        if argument.endswith(".py") or argument == "--":
            return command[:index]
    return command


def child_environment(command: list[str], log_dir: Path, base: dict | None = None) -> dict:
    env = dict(os.environ if base is None else base)
    launcher = _launcher_part(command)
    if is_torchrun(command) and not any(_option(launcher, (flag,)) is not None for flag in _TORCHRUN_OUTPUT_FLAGS) \
            and "PET_TEE" not in env and "PET_REDIRECTS" not in env:
        env["PET_TEE"] = "3"
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault(ERROR_DIR_ENV, str(log_dir / "errors"))
    return env


def node_rank(command: list[str], env: dict) -> int:
    """This launcher's node rank when the job spans several nodes, else 0."""
    command = _launcher_part(command)
    nnodes = _option(command, ("--nnodes",)) or env.get("PET_NNODES") or "1"
    if nnodes.split(":")[-1] in ("", "1"):
        return 0
    value = _option(command, ("--node-rank", "--node_rank")) or env.get("PET_NODE_RANK") or env.get("NODE_RANK") or "0"
    return int(value) if value.isascii() and value.isdigit() else 0


def stamped(line: bytes, arrived: float) -> bytes:
    """The line as the log folder keeps it: a line that carries no time of its own gets the time
    it arrived (local time, as Python's logging writes it) after its launcher prefixes, so every
    file `run` writes orders against the others. The console shows the line unchanged."""
    text = line.decode("utf-8", "replace")
    prefix = parse_prefix(text)
    message = text[prefix.offset:]
    if not message.strip() or _TRACEBACK_PART.match(message) or _CLOCK.parse(message) is not None:
        return line  # a traceback's lines keep their shape: they take the time of the line before them
    at = len(text[:prefix.offset].encode("utf-8"))
    moment = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(arrived)) + f",{int(arrived * 1000) % 1000:03d} "
    return line[:at] + moment.encode() + line[at:]


class Tee:
    """Copies the child's streams to the console and to per-rank files; one lock per file."""

    def __init__(self, log_dir: Path, node: int = 0) -> None:
        self.log_dir = log_dir
        self.node = node
        self._files: dict[str, object] = {}
        self._lock = threading.Lock()

    def _file_for(self, line: bytes):
        match = _TEE_PREFIX.match(line)
        if match and match.group(1) != b"rank":
            local = int(match.group(2))
            name = f"rank{local}.log" if self.node == 0 else f"node{self.node}-local{local}.log"
        else:
            name = "console.log"
        handle = self._files.get(name)
        if handle is None:
            handle = self._files[name] = open(self.log_dir / name, "ab")
        return handle

    def copy(self, stream, console) -> None:
        for line in iter(stream.readline, b""):
            arrived = time.time()
            try:
                console.write(line)
                console.flush()
            except (OSError, ValueError):
                pass  # a closed console must not stop the log files
            with self._lock:
                handle = self._file_for(line)
                handle.write(stamped(line, arrived))
                handle.flush()

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()


class Launched:
    """The running command, its tee threads, and its exit status."""

    def __init__(self, command: list[str], log_dir: Path, stdout, stderr) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        env = child_environment(command, log_dir)
        self.tee = Tee(log_dir, node_rank(command, env))
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.threads = [
            threading.Thread(target=self.tee.copy, args=(self.process.stdout, stdout), daemon=True, name="tee-stdout"),
            threading.Thread(target=self.tee.copy, args=(self.process.stderr, stderr), daemon=True, name="tee-stderr"),
        ]
        for thread in self.threads:
            thread.start()

    def forward(self, signum: int) -> None:
        if self.process.poll() is None:
            try:
                self.process.send_signal(signum)
            except OSError:
                pass

    def wait(self, grace_seconds: float = 5.0) -> int:
        code = self.process.wait()
        for thread in self.threads:
            thread.join(timeout=grace_seconds)  # a grandchild may still hold the pipe open
        self.tee.close()
        return exit_status(code)


def exit_status(code: int) -> int:
    """The command's own status, as a shell reports it (128 + N for a signal)."""
    return 128 - code if code < 0 else code


__all__ = ["Launched", "Tee", "child_environment", "exit_status", "is_torchrun", "node_rank"]
