"""Stack dumps: real py-spy and faulthandler captures of a hung torchrun job, and the formats."""
import pytest
from fr_builder import files

from firstfault.dumps.results import Frame
from firstfault.dumps.stack_frames import grouping_key
from firstfault.dumps.stacks import group_stacks, load_stacks, looks_like_stacks, parse_stack_text


def _load(paths):
    return [stack for path in paths for stack in load_stacks(path)]


def test_real_pyspy_dumps_name_the_stalled_rank(sleep_case):
    stacks = _load(files(sleep_case, "pyspy_rank*.txt"))
    assert [(s.rank, s.fmt, s.main.name) for s in stacks] == [
        (rank, "py-spy", "MainThread") for rank in range(4)]
    result = group_stacks(stacks)
    assert result.odd_ranks == (2,)
    assert [group.ranks for group in result.groups] == [(0, 1, 3), (2,)]
    waiting, stalled = result.groups
    assert waiting.in_collective and not stalled.in_collective
    assert stalled.frames[0] == Frame("load_batch", "hang_job.py", 50)
    assert result.explanation == (
        "Rank 2 is in load_batch (hang_job.py:50), outside any collective, while ranks 0, 1, 3 "
        "wait in all_reduce (distributed_c10d.py:3252) called from sync (hang_job.py:60).",)
    assert result.named_by == "stack dumps"


def test_real_faulthandler_dumps_give_the_same_answer(sleep_case):
    stacks = _load(files(sleep_case, "faulthandler_rank*.txt"))
    assert {s.fmt for s in stacks} == {"faulthandler"}
    assert all(len(s.threads) == 2 for s in stacks)  # main + the dump thread
    assert all(s.main.current and s.main.frames[-1].function == "<module>" for s in stacks)
    result = group_stacks(stacks)
    assert result.odd_ranks == (2,)
    assert "Rank 2 is in load_batch (hang_job.py:50)" in result.explanation[0]


def test_real_wrong_collective_is_the_odd_one_out(op_case):
    result = group_stacks(_load(files(op_case, "pyspy_rank*.txt")))
    assert result.odd_ranks == (2,)
    assert all(group.in_collective for group in result.groups)
    assert result.explanation[0].startswith(
        "Rank 2 is in broadcast (distributed_c10d.py:3151) called from sync (hang_job.py:58), "
        "while ranks 0, 1, 3 wait in all_reduce")


def test_mixed_formats_group_together(sleep_case):
    """py-spy writes qualified names and relative paths; faulthandler does not."""
    paths = files(sleep_case, "pyspy_rank[01].txt") + files(sleep_case, "faulthandler_rank[23].txt")
    result = group_stacks(_load(paths))
    assert result.odd_ranks == (2,)
    assert [group.ranks for group in result.groups] == [(0, 1, 3), (2,)]


def test_rank_prefixed_lines_in_one_file(sleep_case, tmp_path):
    combined = []
    for rank in range(4):
        text = (sleep_case / f"faulthandler_rank{rank}.txt").read_text()
        combined += [f"[rank{rank}]:{line}" for line in text.splitlines()]
    path = tmp_path / "stacks.txt"
    path.write_text("\n".join(combined) + "\n")
    stacks = load_stacks(str(path))
    assert sorted(s.rank for s in stacks) == [0, 1, 2, 3]
    assert group_stacks(stacks).odd_ranks == (2,)


TORCH_TRACEBACK = """\
[rank1]:[E1118 20:32:23.957 ProcessGroupNCCL.cpp:1234] Stack trace of the failed collective:
[rank1]:#0 all_reduce from /opt/torch/distributed/distributed_c10d.py:2696
[rank1]:#1 wrapper from /opt/torch/distributed/c10d_logger.py:83
[rank1]:#2 bar from /home/user/repro.py:15
[rank1]:#3 <module> from /home/user/repro.py:40
"""


def test_pytorch_traceback_format():
    stacks = parse_stack_text(TORCH_TRACEBACK, "log")
    assert len(stacks) == 1 and stacks[0].rank == 1 and stacks[0].fmt == "torch"
    assert stacks[0].main.frames[2] == Frame("bar", "/home/user/repro.py", 15)


def test_fatal_error_faulthandler_block():
    text = ("Fatal Python error: Segmentation fault\n\n"
            "Current thread 0x00007f1 (most recent call first):\n"
            '  File "/w/train.py", line 9 in step\n'
            '  File "/w/train.py", line 20 in <module>\n')
    (stack,) = parse_stack_text(text, "crash_rank5.txt", 5)
    assert stack.main.frames == (Frame("step", "/w/train.py", 9),
                                 Frame("<module>", "/w/train.py", 20))


def _stack(rank, *frames):
    text = "".join(f'  File "{file}", line {line} in {name}\n' for name, file, line in frames)
    return parse_stack_text("Current thread 0x1 (most recent call first):\n" + text, "x", rank)[0]


COLLECTIVE = ("all_reduce", "/v/torch/distributed/distributed_c10d.py", 3252)


def test_innermost_line_is_ignored_caller_lines_are_not():
    moved = [_stack(0, ("spin", "/w/a.py", 10), ("main", "/w/a.py", 5)),
             _stack(1, ("spin", "/w/a.py", 12), ("main", "/w/a.py", 5))]
    assert grouping_key(moved[0].main.frames) == grouping_key(moved[1].main.frames)
    other_site = _stack(2, ("spin", "/w/a.py", 10), ("main", "/w/a.py", 7))
    assert grouping_key(other_site.main.frames) != grouping_key(moved[0].main.frames)


def test_equal_split_names_nobody():
    stacks = [_stack(0, COLLECTIVE, ("main", "/w/a.py", 5)),
              _stack(1, COLLECTIVE, ("main", "/w/a.py", 9))]
    result = group_stacks(stacks)
    assert result.odd_ranks == ()
    assert result.explanation[0].startswith("The stacks split into equal groups")


def test_two_ranks_one_outside_a_collective():
    stacks = [_stack(0, COLLECTIVE, ("main", "/w/a.py", 5)),
              _stack(1, ("load", "/w/data.py", 30), ("main", "/w/a.py", 4))]
    assert group_stacks(stacks).odd_ranks == (1,)


def test_all_in_the_same_place_names_nobody():
    stacks = [_stack(rank, COLLECTIVE, ("main", "/w/a.py", 5)) for rank in range(3)]
    result = group_stacks(stacks)
    assert result.odd_ranks == () and len(result.groups) == 1
    assert "single out no rank" in result.explanation[0]


def test_stack_without_rank_is_left_out():
    stacks = [_stack(None, COLLECTIVE), _stack(0, COLLECTIVE)]
    result = group_stacks(stacks)
    assert result.groups[0].ranks == (0,)
    assert "no rank in its name or lines" in result.explanation[0]


def test_looks_like_stacks(sleep_case):
    assert looks_like_stacks((sleep_case / "pyspy_rank0.txt").read_bytes())
    assert looks_like_stacks((sleep_case / "faulthandler_rank0.txt").read_bytes())
    assert not looks_like_stacks((sleep_case / "torchrun.log").read_bytes())
    assert not looks_like_stacks(b"epoch 1 loss 0.3\nepoch 2 loss 0.2\n")


# Real `py-spy dump --locals` and `--native` output (py-spy 0.4.3) of a sleeping process.
PYSPY_LOCALS = """\
Process 19516: /root/.pyenv/versions/3.11.7/bin/python3 /tmp/sl.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 19516 (idle): "MainThread"
    load (sl.py:4)
        Arguments:
            batch: {"a": 1}
            size: (3)
        Locals:
            items: [1, (2, 3)]
    <module> (sl.py:5)
"""
PYSPY_NATIVE = """\
Thread 19516 (idle): "MainThread"
    clock_nanosleep (libc.so.6)
    time_sleep (libpython3.11.so.1.0)
    load (sl.py:4)
    <module> (sl.py:5)
    0x7f1d7784524a (libc.so.6)
"""


def test_pyspy_locals_are_not_frames():
    (stack,) = parse_stack_text(PYSPY_LOCALS, "pyspy_rank0.txt", 0)
    assert stack.main.frames == (Frame("load", "sl.py", 4), Frame("<module>", "sl.py", 5))


def test_pyspy_native_frames_are_library_code():
    from firstfault.dumps.stack_frames import describe

    (stack,) = parse_stack_text(PYSPY_NATIVE, "pyspy_rank0.txt", 0)
    assert stack.main.frames[0] == Frame("clock_nanosleep", "libc.so.6", 0)
    assert describe(stack.main.frames) == "clock_nanosleep (libc.so.6) called from load (sl.py:4)"


def test_quick_check_never_rejects_a_stack_line(sleep_case, op_case):
    """The byte-level pre-check of looks_like_stacks is a necessary condition: every line the
    header and frame patterns accept (real captures, prefixed or not, and the odd shapes) passes it."""
    from firstfault.dumps.sniff import may_hold_stack_lines
    from firstfault.dumps.stacks import _frame, _is_header, _strip_prefix

    lines = [line for case in (sleep_case, op_case) for path in files(case, "*.txt")
             for line in open(path, encoding="utf-8").read().splitlines()]
    lines += ['Thread 0x00007f3a [pt_main] (most recent call first):', 'Stack (most recent call first):',
              '    forward (x) (model.py:3)', '    <module> (<string>)', '  #0 all_reduce from c10d.py:12',
              'Process 4242: python train.py', '[rank3]:   File "a \\"b\\".py", line 9 in step']
    accepted = [line for line in lines if _is_header(_strip_prefix(line)[1]) or _frame(_strip_prefix(line)[1])]
    assert len(accepted) > 50
    for line in accepted:
        for ending in ("", "\n", "\r\n", "  \n"):
            assert may_hold_stack_lines((line + ending).encode()), line
    assert not may_hold_stack_lines(b"2026-12-02 INFO step 3 loss 0.5\n[rank0]: epoch 1 done\n")


def test_one_pass_hint_check_answers_as_the_searches_do():
    """Which inputs may hold stack lines is asked of every input: Hyperscan answers for all the
    hints in one pass, and says no exactly where the `re` searches find nothing (every fixture's
    head, and stack lines in a log's middle, its end without a line end, a CRLF log)."""
    pytest.importorskip("hyperscan")
    from pathlib import Path

    from firstfault.dumps import sniff

    fast = sniff._fast_hints()
    assert fast is not None
    heads = [path.read_bytes()[:sniff.HEAD_BYTES] for path in sorted(Path(__file__).parents[1].glob("fixtures/**/*"))
             if path.is_file() and path.suffix != ".gz"]
    heads += [b"step 1\n  File \"t.py\", line 3 in run\nstep 2\n", b"Thread 12 (idle)", b"x\r\n    run (t.py:9)\r\n",
              b"#0 all_reduce from c10d.py:12", b"    loss 0.3 (12 samples/s)\xc2\x85next", b"Process 7 started"]
    answers = [(fast.search(head), any(pattern.search(head) for _, pattern in sniff._STACK_LINE_HINTS)) for head in heads]
    assert len(heads) > 2000 and sum(python for _, python in answers) > 100
    assert [fast_answer for fast_answer, _ in answers] == [python for _, python in answers]
