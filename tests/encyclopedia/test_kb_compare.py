"""compare(kb, category): rows, tool matrix, and its three renderings."""
from __future__ import annotations

import json
import re

import pytest

from firstfault.errors import UsageError
from firstfault.kb.compare import NCCL_TOOLS, compare, first_sentence, tool_names
from firstfault.render.entry_compare import render_comparison

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_nccl_takes_network_entries_that_mention_nccl_or_collective_timeouts(kb):
    ids = [row.id for row in compare(kb, "nccl").entries]
    assert ids == ["collective-timeout-hang", "nccl-bad-interface"]  # not rendezvous-refused


def test_a_category_takes_all_its_entries(kb):
    ids = [row.id for row in compare(kb, "network").entries]
    assert ids == ["collective-timeout-hang", "nccl-bad-interface", "rendezvous-refused"]


def test_rows_say_what_each_entry_indicates(kb):
    row = {row.id: row for row in compare(kb, "nccl").entries}["nccl-bad-interface"]
    assert row.title == "NCCL picked an unroutable interface"
    assert row.indicates == "NCCL on rank {rank} bound to interface {iface}, which the other hosts cannot reach."
    assert row.message == "host-1:11:11 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>"
    assert row.diagnostics[1] == ("`ip -br addr`", "Lists the interfaces and their subnets.")


def test_the_nccl_tools_come_first_then_the_ones_entries_name(kb):
    tools = compare(kb, "nccl").tools
    names = [tool.name for tool in tools]
    assert tuple(names[: len(NCCL_TOOLS)]) == NCCL_TOOLS
    assert names[len(NCCL_TOOLS):] == [
        "TORCH_NCCL_DUMP_ON_TIMEOUT", "ip -br addr", "Watchdog caught collective operation timeout",
    ]


def test_the_matrix_marks_diagnostics_and_fix_env(kb):
    tools = {tool.name: tool for tool in compare(kb, "nccl").tools}
    assert tools["NCCL_DEBUG"].diagnose == ("nccl-bad-interface",)
    assert tools["NCCL_DEBUG"].fix == ("nccl-bad-interface",)
    assert tools["NCCL_SOCKET_IFNAME"].diagnose == () and tools["NCCL_SOCKET_IFNAME"].fix == ("nccl-bad-interface",)
    assert tools["TORCH_NCCL_TRACE_BUFFER_SIZE"].diagnose == ("collective-timeout-hang",)
    assert tools["TORCH_NCCL_DUMP_ON_TIMEOUT"].fix == ("collective-timeout-hang",)
    assert tools["NCCL_IB_GID_INDEX"].diagnose == () and tools["NCCL_IB_GID_INDEX"].fix == ()
    assert tools["ip -br addr"].kind == "other"


def test_other_categories_get_no_fixed_tools(kb):
    assert [tool.name for tool in compare(kb, "memory").tools] == []


@pytest.mark.parametrize("category,message", [
    ("bogus", "nothing to compare called 'bogus'"),
    ("device", "no entries to compare in 'device' yet"),
])
def test_unknown_or_empty_categories_are_usage_errors(kb, category, message):
    with pytest.raises(UsageError) as caught:
        compare(kb, category)
    assert caught.value.message == message
    assert caught.value.hint


@pytest.mark.parametrize("tool,expected", [
    ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET", [("NCCL_DEBUG", "env"), ("NCCL_DEBUG_SUBSYS", "env")]),
    ("`NCCL_SOCKET_IFNAME`", [("NCCL_SOCKET_IFNAME", "env")]),
    ("export CUDA_LAUNCH_BLOCKING=1 && python train.py", [("CUDA_LAUNCH_BLOCKING", "env")]),
    ("`ibv_devinfo`", [("ibv_devinfo", "other")]),
    ("`Assertion `...` failed` line", [("`Assertion `...` failed` line", "other")]),
    ("dmesg | grep -i xid", [("dmesg | grep -i xid", "other")]),
    ("echo $NCCL_DEBUG", [("echo $NCCL_DEBUG", "other")]),
])
def test_tool_names(tool, expected):
    assert tool_names(tool) == expected


@pytest.mark.parametrize("text,expected", [
    ("One rank died. The rest waited.", "One rank died."),
    ("It hangs, e.g. in all-reduce. Then it dies.", "It hangs, e.g. in all-reduce."),
    ("It raised `torch.OutOfMemoryError` on rank 0. Others waited.", "It raised `torch.OutOfMemoryError` on rank 0."),
    ("No full stop at all", "No full stop at all"),
    ("Folded\n  over lines. Next.", "Folded over lines."),
])
def test_first_sentence(text, expected):
    assert first_sentence(text) == expected


@pytest.mark.parametrize("topic", ["nccl", "network"])
@pytest.mark.parametrize("fmt,suffix", [("terminal", "txt"), ("markdown", "md"), ("json", "json")])
def test_compare_snapshots(kb, snapshot, topic, fmt, suffix):
    snapshot(f"compare-{topic}.{suffix}", render_comparison(compare(kb, topic), fmt, width=100))


def test_compare_snapshot_on_a_narrow_terminal(kb, snapshot):
    snapshot("compare-nccl-60.txt", render_comparison(compare(kb, "nccl"), "terminal", width=60))


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_terminal_comparison_fits_the_width(kb, width):
    text = render_comparison(compare(kb, "nccl"), "terminal", width=width, color=True)
    assert "\x1b[" in text
    assert max(len(ANSI.sub("", line)) for line in text.splitlines()) <= width


def test_json_comparison_lists_entries_and_tools(kb):
    data = json.loads(render_comparison(compare(kb, "nccl"), "json"))
    assert data["topic"] == "nccl"
    assert [entry["id"] for entry in data["entries"]] == ["collective-timeout-hang", "nccl-bad-interface"]
    socket = next(tool for tool in data["tools"] if tool["tool"] == "NCCL_SOCKET_IFNAME")
    assert socket == {"tool": "NCCL_SOCKET_IFNAME", "kind": "env", "diagnose": [], "fix": ["nccl-bad-interface"]}


def test_markdown_comparison_escapes_pipes_and_placeholders(kb):
    text = render_comparison(compare(kb, "nccl"), "markdown")
    assert "NCCL on a rank bound to an interface" in text and "&lt;" not in text
    table_rows = [line for line in text.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert [row.count(" | ") for row in table_rows] == [4, 4]  # five cells each, no stray pipe


def test_an_entry_without_diagnostics_shows_a_dash(kb):
    text = render_comparison(compare(kb, "network"), "terminal", width=200)
    rendezvous = next(line for line in text.splitlines() if line.startswith("3  rendezvous-refused"))
    assert rendezvous.rstrip().endswith("—")
