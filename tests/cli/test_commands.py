"""What a first user hit on the way in: messages instead of silence, tracebacks or raw errors."""
from __future__ import annotations

import json
import os
import pty
import re
import socket
import subprocess
import sys
import time

import pytest

from .conftest import FIRST_USER, OOM_LOG, REPO, run_cli


def on_a_terminal(args: list[str], wait: float = 3.0) -> str:
    """Run the CLI with a terminal as standard input and error; what it printed in `wait` seconds."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI, reading the terminal
        os.execv(sys.executable, [sys.executable, "-m", "firstfault", *args])
    output = b""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            import select

            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                output += os.read(fd, 65536)
        except OSError:
            break
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return output.decode(errors="replace")


def test_diagnose_stdin_on_a_terminal_says_it_reads_stdin():
    assert "reading logs from standard input" in on_a_terminal(["diagnose", "-"])


def test_diagnose_stdin_from_a_pipe_says_nothing_extra():
    result = run_cli("diagnose", "-", stdin=b"KeyError: 'x'\n")
    assert "standard input" not in result.stderr.decode()


def test_watch_says_what_it_waits_for(tmp_path):
    missing = tmp_path / "nosuchdir"
    text = on_a_terminal(["watch", str(missing), "--duration", "1"], wait=6)
    assert f"{missing} does not exist yet; waiting for it to appear" in text
    glob_text = on_a_terminal(["watch", str(tmp_path / "rank*.log"), "--duration", "1"], wait=6)
    assert "nothing matches" in glob_text


def test_an_empty_folder_is_named_with_the_reason(tmp_path):
    result = run_cli("diagnose", tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path}: empty folder: no files in it" in result.stderr.decode()
    assert "nothing given" not in result.stderr.decode()


def test_serve_on_a_busy_port_is_one_line_and_a_hint():
    pytest.importorskip("uvicorn")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--port", port, "--no-history", timeout=60)
    err = result.stderr.decode()
    assert result.returncode == 2
    assert "serving on" not in err and "Traceback" not in err and "uvicorn" not in err.lower()
    assert err.splitlines() == [f"firstfault: error: cannot listen on 127.0.0.1:{port}: address already in use",
                                f"hint: another program may use that port; choose another with --port (e.g. --port {port + 1})"]


def test_eval_names_cases_it_cannot_score():
    result = run_cli("eval", FIRST_USER / "eval-bad")
    err = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in err
    assert "'cuda-oomm' is not a known class (did you mean cuda-oom?)" in err
    assert "case.yaml must be a mapping" in err
    data = json.loads(run_cli("eval", FIRST_USER / "eval-bad", "--format", "json").stdout)
    assert data["cases"] == 0 and len(data["invalid"]) == 2


def test_eval_misses_say_no_rank_instead_of_none(tmp_path):
    case = tmp_path / "unranked"
    (case / "logs").mkdir(parents=True)
    (case / "logs" / "train.log").write_text("2024-11-04 10:11:12,207 INFO step 1\n")
    (case / "case.yaml").write_text("id: unranked\nexpect:\n  class: cuda-oom\n  initiating_rank: 2\n")
    out = run_cli("eval", tmp_path).stdout.decode()
    assert "MISS unranked: expected cuda-oom (rank 2), got healthy" in out and "None" not in out
    (case / "logs" / "train.log").write_text('Traceback (most recent call last):\n  File "t.py", line 1\nKeyError: 1\n')
    (case / "case.yaml").write_text("id: unranked\nexpect:\n  class: cuda-oom\n  initiating_rank: null\n")
    out = run_cli("eval", tmp_path).stdout.decode()
    assert "got user-code-exception (rank 0)" in out and "None" not in out


def test_the_pure_python_matcher_says_how_much_slower_it_is(tmp_path):
    """A Python without Hyperscan (its import fails, as where no wheel exists): one warning line,
    the same answer."""
    log = FIRST_USER / "oom4" / "console.log"
    code = ("import sys; sys.modules['hyperscan'] = None; from firstfault.cli import main; "
            f"sys.exit(main(['diagnose', {str(log)!r}, '--format', 'json']))")
    slow = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO, timeout=300)
    warnings = [line for line in slow.stderr.decode().splitlines() if "warning" in line]
    assert len(warnings) == 1 and re.search(r"about \d+x slower", warnings[0]) and "pip install hyperscan" in warnings[0]
    fast = run_cli("diagnose", log, "--format", "json")
    assert "Hyperscan" not in fast.stderr.decode()
    assert json.loads(slow.stdout)["primary"] == json.loads(fast.stdout)["primary"]


def test_a_bug_of_ours_is_said_plainly_without_a_traceback(tmp_path):
    """An exception the engine did not expect (here: its correlation made to raise) is one line
    that says it is a bug of firstfault's and how to see where; FIRSTFAULT_TRACEBACK=1 shows it."""
    log = FIRST_USER / "oom4" / "console.log"
    code = ("import sys; import firstfault.correlate.verdict as verdict; "
            "verdict.decide = lambda facts: (_ for _ in ()).throw(TypeError('planted')); "
            "from firstfault.cli import main; "
            f"sys.exit(main(['diagnose', {str(log)!r}]))")
    env = {key: value for key, value in os.environ.items() if key != "FIRSTFAULT_TRACEBACK"}
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO, timeout=300, env=env)
    assert said.returncode == 2
    assert "Traceback" not in said.stderr.decode()
    assert "internal error: TypeError: planted" in said.stderr.decode() and "FIRSTFAULT_TRACEBACK=1" in said.stderr.decode()
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO, timeout=300,
                           env={**env, "FIRSTFAULT_TRACEBACK": "1"})
    assert "Traceback (most recent call last)" in shown.stderr.decode() and "planted" in shown.stderr.decode()


def test_diagnose_ends_without_teardown_and_loses_no_output(tmp_path, capsys):
    """`firstfault diagnose` ends its process once its output is flushed (cli.console): what a
    pipe and an -o file receive is all of what the command wrote."""
    from firstfault.cli import main

    assert main(["diagnose", str(OOM_LOG), "--format", "json"]) == 1
    written = capsys.readouterr().out
    piped = run_cli("diagnose", OOM_LOG, "--format", "json")
    assert piped.returncode == 1
    assert piped.stdout.decode() == written
    report = tmp_path / "report.json"
    assert run_cli("diagnose", OOM_LOG, "--format", "json", "-o", report).returncode == 1
    assert report.read_text() == written
    # the exit handlers of a teardown do not run after diagnose; they do after other commands
    code = ("import atexit, sys; atexit.register(print, 'teardown ran', file=sys.stderr); "
            "from firstfault.cli import console; sys.argv = ['firstfault', *sys.argv[1:]]; console()")
    for args, teardown in ((["diagnose", str(OOM_LOG)], False), (["explain", "cuda-oom"], True)):
        result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, cwd=REPO)
        assert ("teardown ran" in result.stderr.decode()) is teardown, (args, result.stderr.decode()[-500:])


def test_a_thread_left_running_keeps_the_usual_exit():
    import threading

    from firstfault.cli import _nothing_left_running

    assert _nothing_left_running()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not _nothing_left_running()
    finally:
        stop.set()
        worker.join()
