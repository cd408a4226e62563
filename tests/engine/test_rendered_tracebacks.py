"""A traceback as rich or IPython prints it (a box of 80 columns with the exception word-wrapped
after it; a notebook cell's numbered source) is read as Python prints it, line for line: the same
frames, the line that ran in each, the exception whole on one line. The renderers are the real
ones (rich's handler, the `ipython` command), run on a real script that raises."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firstfault.ingest.rendered import as_python_tracebacks, may_hold_rendered
from firstfault.pipeline import diagnose_texts

pytest.importorskip("rich")

GLOO = ("[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv "
        "operation to complete")
# a bracketed word exactly as long as the line: rich ends the line there, with no blank to show it
EXACT = "[/opt/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129]"  # 80 characters
SCRIPT = '''\
import sys
if sys.argv[1] == "rich":
    from rich.traceback import install
    install()


def wait_for_peer(message):
    raise RuntimeError(message)


def all_reduce_metrics(message):
    values = [1.0, 2.0]
    wait_for_peer(message)


def train_one_epoch_with_a_rather_long_function_name_for_the_box(message):
    all_reduce_metrics(message)


train_one_epoch_with_a_rather_long_function_name_for_the_box(sys.argv[2])
'''


def raised(tmp_path: Path, renderer: str, message: str = GLOO) -> bytes:
    """What a script that raises prints on stderr, through `renderer` (python, rich or ipython)."""
    folder = tmp_path / ("deep/" * 8)  # a long path: rich folds it at the box's edge
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "train_script.py"
    script.write_text(SCRIPT)
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    if renderer == "ipython":
        ipython = Path(sys.executable).with_name("ipython")
        if not ipython.exists():
            pytest.skip("IPython is not installed")
        command = [str(ipython), "--colors=nocolor", "--no-banner", str(script), "python", message]
    else:
        command = [sys.executable, str(script), renderer, message]
    result = subprocess.run(command, capture_output=True, env=env, timeout=120, cwd=tmp_path)
    return result.stderr if renderer != "ipython" else result.stdout + result.stderr


def python_lines(text: bytes) -> list[str]:
    """The traceback's lines as Python says them (empty lines and carets left out)."""
    return [line for line in text.decode().split("\n") if line.strip() and set(line.strip()) - set("^~")]


def assert_same_traceback(read: list[str], python: list[str]) -> None:
    """The same lines, but a source line may be cut short (rich crops it at the box's edge)."""
    assert len(read) == len(python), (read, python)
    for ours, theirs in zip(read, python):
        assert theirs.startswith(ours) if ours.startswith("    ") else ours == theirs, (ours, theirs)


def test_rich_traceback_reads_as_pythons_own(tmp_path):
    rich = raised(tmp_path, "rich")
    assert "╭" in rich.decode() and GLOO not in rich.decode()  # boxed, and the message wrapped
    rewritten = as_python_tracebacks(rich)
    assert rewritten.count(b"\n") == rich.count(b"\n")  # line numbers stay the file's
    assert_same_traceback(python_lines(rewritten), python_lines(raised(tmp_path, "python")))


def test_rich_joins_a_word_as_long_as_the_line_with_a_blank(tmp_path):
    message = f"{EXACT} Timed out waiting 5000ms for send operation to complete"
    rich = raised(tmp_path, "rich", message)
    assert f"\n{EXACT}\n" in rich.decode()  # the word filled the line
    assert python_lines(as_python_tracebacks(rich))[-1] == f"RuntimeError: {message}"


def test_rich_traceback_of_a_rank_among_others_in_a_console(tmp_path):
    """torchrun --tee: each line behind its rank's prefix, another rank's lines between them."""
    rich = raised(tmp_path, "rich").decode().rstrip("\n").split("\n")
    other = "[default1]:[rank1]: 2026-12-05 12:00:01 INFO step 3 loss 0.25"
    console = []
    for number, line in enumerate(rich):
        console.append(f"[default0]:[rank0]: {line}")
        if number % 7 == 3:
            console.append(other)
    rewritten = as_python_tracebacks("\n".join(console).encode()).decode().split("\n")
    assert len(rewritten) == len(console)
    assert rewritten.count(other) == console.count(other)  # the other rank's lines are left alone
    own = [line.removeprefix("[default0]:[rank0]: ") for line in rewritten if line.startswith("[default0]")]
    assert_same_traceback(python_lines("\n".join(own).encode()), python_lines(raised(tmp_path, "python")))


def test_ipython_traceback_reads_as_pythons_own(tmp_path):
    pytest.importorskip("IPython")
    ipython = raised(tmp_path, "ipython")
    assert b"----> " in ipython and b"Traceback (most recent call last)\n" in ipython
    rewritten = as_python_tracebacks(ipython)
    assert rewritten.count(b"\n") == ipython.count(b"\n")
    expected = python_lines(raised(tmp_path, "python"))
    # IPython shows the script's frames only, as `%run` does: the same frames from the script on
    assert_same_traceback(python_lines(rewritten)[-len(expected) + 1:], expected[1:])
    assert python_lines(rewritten)[0] == "Traceback (most recent call last):"


def test_the_diagnosis_of_a_rich_traceback_is_that_of_pythons(tmp_path):
    said = {}
    for renderer in ("python", "rich"):
        diagnosis = diagnose_texts([("rank0.log", b"[rank0]: step 3 loss 0.25\n" + raised(tmp_path, renderer))])
        said[renderer] = (diagnosis.primary.failure_id, [(item.signature, item.text) for item in diagnosis.primary.evidence])
    assert said["rich"] == said["python"]
    assert said["python"][0] == "collective-timeout-straggler"  # the gloo timeout read from its message


def test_the_fast_engine_reports_rendered_headers_in_its_pass():
    from firstfault.match.hyperscan_engine import HyperscanEngine

    engine = HyperscanEngine(["never matches this"], use_cache=False)
    rich = "╭──── Traceback (most recent call last) ────╮\n│ x │\n".encode()
    ipython = b"-" * 75 + b"\nRuntimeError        Traceback (most recent call last)\nFile /a.py:1\n"
    python = b"Traceback (most recent call last):\n  File \"/a.py\", line 1, in <module>\n"
    group = b"  + Exception Group Traceback (most recent call last):\n  |   File \"/a.py\", line 1, in <module>\n"
    assert engine.scan(rich)[3][2] and engine.scan(ipython)[3][2] and engine.scan(group)[3][2]
    assert not engine.scan(python)[3][2]
    assert all(map(may_hold_rendered, (rich, ipython, group))) and not may_hold_rendered(python)


def test_text_without_a_rendered_traceback_is_returned_as_it_is():
    python = b"Traceback (most recent call last):\n  File \"/a.py\", line 1, in <module>\nKeyError: 'x'\n"
    assert as_python_tracebacks(python) is python
    # a header with no box or rule under it is left as it is
    lone = b"RuntimeError        Traceback (most recent call last)\nsomething else\n"
    assert as_python_tracebacks(lone) == lone


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "╭──── Traceback (most recent call last) ────╮", "│ /a/b.py:3 in f                             │",
    "│ ❱ 3 │   x()                                 │", "│                                            │", "╰────╯",
    "RuntimeError: boom", "-" * 75, "KeyError            Traceback (most recent call last)", "File /a.py:3, in f()",
    "----> 3 x()", "      2 y = 1", "", "[rank0]: ", "plain text", "│", "╰", "╭── Traceback (most recent call last) ──╮",
    "Epoch 1/9 ━━╸ 3/8 0:00:01 • 0:00:02 9.50it/s loss:", "                                             1.25",
    "                                             v_num:", "loss: nan",
]), max_size=40), st.sampled_from(["", "[default0]:[rank0]: ", "3: "]))
def test_any_text_keeps_its_line_count_and_never_raises(pieces, prefix):
    text = "\n".join(prefix + piece for piece in pieces).encode()
    assert as_python_tracebacks(text).count(b"\n") == text.count(b"\n")


# IPython 7's Context mode, as notebook threads of 2020-2022 quote it: a frame as `path in f(args)`,
# its line number only at the `-->` of the line that ran
IPYTHON7 = """\
---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
<ipython-input-3-7b1f4d0a8a44> in <module>
      1 x = torch.randn(3).cuda()
----> 2 y = model(x)

/opt/conda/lib/python3.8/site-packages/torch/nn/modules/module.py in _call_impl(self, *input, **kwargs)
   1049         if not (self._backward_hooks or self._forward_hooks):
   1050             pass
-> 1051             return forward_call(*input, **kwargs)
   1052         # Do not call functions when jit is used

RuntimeError: CUDA error: device-side assert triggered
"""


def test_ipython_7_frames_take_their_line_from_the_line_that_ran():
    rewritten = as_python_tracebacks(IPYTHON7.encode()).decode()
    assert rewritten.count("\n") == IPYTHON7.count("\n")
    assert python_lines(rewritten.encode()) == [
        "Traceback (most recent call last):",
        '  File "<ipython-input-3-7b1f4d0a8a44>", line 2, in <module>',
        "    y = model(x)",
        '  File "/opt/conda/lib/python3.8/site-packages/torch/nn/modules/module.py", line 1051, in _call_impl',
        "    return forward_call(*input, **kwargs)",
        "RuntimeError: CUDA error: device-side assert triggered",
    ]


GROUP_SCRIPT = '''\
import asyncio


async def all_reduce_metrics():
    raise RuntimeError("%s")


async def main():
    async with asyncio.TaskGroup() as group:
        group.create_task(all_reduce_metrics())


asyncio.run(main())
''' % GLOO


def test_a_traceback_inside_an_exception_group_reads_as_pythons_own(tmp_path):
    """Python 3.11's exception group (asyncio's TaskGroup): the margins are taken off, the worker's
    traceback and its exception read as Python prints a traceback; the launcher prefix kept."""
    script = tmp_path / "serve.py"
    script.write_text(GROUP_SCRIPT)
    printed = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=120).stderr
    assert b"+ Exception Group Traceback" in printed and b"    | RuntimeError: " in printed
    console = b"".join(b"[default0]:[rank0]: " + line + b"\n" for line in printed.rstrip(b"\n").split(b"\n"))
    rewritten = as_python_tracebacks(console).decode()
    assert rewritten.count("\n") == console.count(b"\n")
    lines = [line.removeprefix("[default0]:[rank0]: ") for line in rewritten.split("\n") if line.strip()]
    assert lines[0] == "Traceback (most recent call last):"
    assert f"RuntimeError: {GLOO}" in lines and "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)" in lines
    assert any(line.startswith('  File "') and line.endswith("in all_reduce_metrics") for line in lines)
    assert not any(line.lstrip().startswith(("|", "+")) for line in lines)


def test_rich_joins_each_line_of_a_message_that_quotes_a_traceback(tmp_path):
    """`mp.spawn`'s ProcessRaisedException quotes the worker's traceback in its message: rich wraps
    each of its long lines at 80 columns, and each is read whole again."""
    frame = ('  File "/opt/conda/envs/train/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", '
             "line 87, in _wrap")
    message = f"\n\n-- Process 1 terminated with the following error:\nTraceback (most recent call last):\n{frame}\n" \
              f"    fn(i, *args)\nRuntimeError: {GLOO}\n"
    rich = raised(tmp_path, "rich", message)
    assert frame not in rich.decode() and f"RuntimeError: {GLOO}" not in rich.decode()  # both were wrapped
    lines = python_lines(as_python_tracebacks(rich))
    assert lines[-4:] == ["Traceback (most recent call last):", frame, "    fn(i, *args)", f"RuntimeError: {GLOO}"]
    assert lines[-6:-4] == ["RuntimeError:", "-- Process 1 terminated with the following error:"]


# Colab's notebook traceback as it is copied from the page: IPython 7's frames, a cell's frame named
# `<cell line: 1>`, and the library frames it folded (`9 frames`)
COLAB = """\
---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
<ipython-input-5-2f4a8c1d9e7b> in <cell line: 1>()
----> 1 trainer.train()

9 frames
/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py in cross_entropy(input, target, weight)
   3027     if size_average is not None or reduce is not None:
-> 3029     return torch._C._nn.cross_entropy_loss(input, target, weight)
   3030 

RuntimeError: CUDA error: device-side assert triggered
"""


def test_a_colab_traceback_with_folded_frames_reads_as_pythons_own():
    lines = python_lines(as_python_tracebacks(COLAB.encode()))
    assert lines == [
        "Traceback (most recent call last):",
        '  File "<ipython-input-5-2f4a8c1d9e7b>", line 1, in <cell line: 1>',
        "    trainer.train()",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", line 3029, in cross_entropy',
        "    return torch._C._nn.cross_entropy_loss(input, target, weight)",
        "RuntimeError: CUDA error: device-side assert triggered",
    ]


PACKAGE_EXCEPTION = '''\
import sys
sys.path.insert(0, sys.argv[1])
from rich.traceback import install
install()
from %s import trace
trace()
'''


def test_the_module_rich_leaves_out_is_put_back_where_the_frames_are_its_package(tmp_path):
    """rich prints `UserError:` where Python prints `torch._dynamo.exc.UserError:`: the knowledge
    base's signature needs the module, which is put back because a frame is in `torch/_dynamo/`;
    a class of that name raised elsewhere is left as rich printed it."""
    from firstfault.kb.loader import load_knowledge_base
    from firstfault.pipeline import scanner_for

    modules = scanner_for(load_knowledge_base()).matcher.exception_modules
    assert modules["UserError"] == "torch._dynamo.exc"
    message = "Could not guard on data-dependent expression u0 > 10000 (unhinted: u0 > 10000)"
    printed_by = {}
    for package, qualified in (("torch._dynamo", True), ("mylib.tools", False)):
        root = tmp_path / package.replace(".", "_")
        folder = root.joinpath(*package.split("."))
        folder.mkdir(parents=True)
        for level in range(len(package.split("."))):
            root.joinpath(*package.split(".")[:level + 1], "__init__.py").touch()
        (folder / "exc.py").write_text("class UserError(Exception):\n    pass\n")
        (folder / "tracer.py").write_text(f"from .exc import UserError\n\n\ndef trace():\n    raise UserError({message!r})\n")
        script = root / "train_step.py"
        script.write_text(PACKAGE_EXCEPTION % f"{package}.tracer")
        printed = subprocess.run([sys.executable, str(script), str(root)], capture_output=True, timeout=120,
                                 env={k: v for k, v in os.environ.items() if k != "COLUMNS"}).stderr
        assert b"\nUserError: " in printed  # as rich prints it
        lines = python_lines(as_python_tracebacks(printed, modules))
        exception = next(line for line in lines if "UserError: " in line)
        assert exception.startswith("torch._dynamo.exc.UserError: ") == qualified, exception
        printed_by[package] = printed
    diagnosis = diagnose_texts([("rank0.log", printed_by["torch._dynamo"])])
    assert diagnosis.primary.failure_id == "torch-compile-failure"


def test_a_long_line_before_an_ipython_header_is_read_once():
    """A header is found by its literal and read back to its class name: a 64 KiB line of word
    characters (a minified JSON config, a base64 blob) before it is not searched from every start,
    which took half a minute."""
    blob = b"A" * 65536
    text = blob + b"\n" + b"-" * 75 + b"\nRuntimeError    Traceback (most recent call last)\nFile /a.py:3, in f()\n" \
           + blob + b" Traceback (most recent call last)\n"
    rewritten = as_python_tracebacks(text)
    assert rewritten.count(b"\n") == text.count(b"\n") and rewritten.startswith(blob + b"\n")
    assert b'  File "/a.py", line 3, in f' in rewritten


# Lightning's rich progress bar, as a real Lightning 2.6 run printed it to a file (the real fixture
# lit-sub-nan-ws2): the metrics column, each value on the line under its name
LIGHTNING_RUN = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "lit-sub-nan-ws2" / "logs" / "console.log"


def _bar_region(prefix: str = "") -> bytes:
    lines = LIGHTNING_RUN.read_text(encoding="utf-8").split("\n")
    start = next(index for index, line in enumerate(lines) if line.startswith("Epoch 0/2"))
    return "\n".join(prefix + line for line in lines[start:start + 6]).encode()


@pytest.mark.parametrize("prefix", ["", "[default0]:"])
def test_a_rich_progress_bars_metrics_are_joined_onto_its_line(prefix):
    region = _bar_region(prefix)
    joined = as_python_tracebacks(region).decode().split("\n")
    assert joined[0].startswith(prefix + "Epoch 0/2")
    assert joined[0].endswith("it/s train_loss_step: nan train_loss_epoch: nan")
    assert joined[1:4] == ["", "", ""] and joined[4].endswith("training finished")
    assert len(joined) == region.count(b"\n") + 1


def test_a_line_under_the_bar_at_another_column_is_not_a_cell():
    region = _bar_region().decode().split("\n")
    region[1] = "nan"  # not under the name: some other line
    text = "\n".join(region).encode()
    assert as_python_tracebacks(text) == text


def test_a_bars_wrapped_time_column_does_not_stop_the_join():
    """The bar ran out of width and rich wrapped its time-left column under itself: that line
    holds the first value too (a real Lightning run, lit-spawn-sigterm-after-fit-ws2)."""
    run = LIGHTNING_RUN.parent.parent.parent / "lit-spawn-sigterm-after-fit-ws2" / "logs" / "console.log"
    joined = as_python_tracebacks(run.read_bytes()).decode().split("\n")
    bar = next(line for line in joined if line.startswith("Epoch 199/199"))
    assert bar.endswith("it/s train_loss_step: 0.004 train_loss_epoch: 0.005")
