"""One entry -> terminal, Markdown, JSON; placeholders; colour."""
from __future__ import annotations

import io
import json

import pytest

from firstfault.render.entry import (
    ENTRY_FORMATS, REQUIRED_SECTIONS, entry_to_dict, fill_placeholders, render_entry, use_color,
)

ANSI_ESCAPE = "\x1b["


@pytest.mark.parametrize("entry_id", ["nccl-bad-interface", "gpu-oom"])
@pytest.mark.parametrize("fmt,suffix", [("terminal", "txt"), ("markdown", "md"), ("json", "json")])
def test_explain_snapshots(kb, snapshot, entry_id, fmt, suffix):
    titles = {entry.id: entry.title for entry in kb.entries}
    text = render_entry(kb.get(entry_id), fmt, width=80, related_titles=titles)
    snapshot(f"explain-{entry_id}.{suffix}", text)


def test_sections_come_in_the_documented_order(kb):
    text = render_entry(kb.get("nccl-bad-interface"), "terminal", width=80)
    headings = ["Summary", "What you'll observe", "Symptoms", "Mechanism", "How to confirm", "Fix",
                "Verification", "Prevention", "FAQ", "Diagnostics", "Related", "References"]
    positions = [text.index(f"\n{heading}\n") for heading in headings]
    assert positions == sorted(positions)


def test_optional_sections_are_left_out_when_empty(kb):
    text = render_entry(kb.get("gpu-oom"), "markdown")
    for heading in REQUIRED_SECTIONS:
        assert f"\n### {heading}\n" in text
    for heading in ("FAQ", "Diagnostics", "Related"):
        assert f"### {heading}" not in text


def test_terminal_prose_is_wrapped_but_log_lines_are_not(kb):
    entry = kb.get("gpu-oom")
    text = render_entry(entry, "terminal", width=60)
    observed = entry.get("observe")[0]
    assert "    " + observed in text.splitlines()
    prose = [line for line in text.splitlines() if observed not in line and not line.startswith("      ")]
    assert max(len(line) for line in prose if not line.startswith("    ")) <= 60


def test_values_fill_the_prose_and_env_but_not_code(kb):
    entry = kb.get("nccl-bad-interface")
    values = {"rank": 3, "iface": "docker0", "iface_wanted": "ens5"}
    text = render_entry(entry, "terminal", width=200, values=values)
    assert "NCCL on rank 3 bound to interface docker0" in text
    assert "export NCCL_SOCKET_IFNAME=ens5" in text
    blank = render_entry(entry, "terminal", width=200)
    # no value known: the sentence leaves it out, a command gets a shell variable to set
    assert "NCCL on a rank bound to an interface, which the other hosts cannot reach" in blank
    assert "export NCCL_SOCKET_IFNAME=$IFACE_WANTED" in blank
    assert "<rank>" not in blank and "{rank}" not in blank


def test_json_is_the_raw_data_in_documented_key_order(kb):
    entry = kb.get("nccl-bad-interface")
    data = json.loads(render_entry(entry, "json"))
    assert list(data)[:5] == ["id", "title", "category", "severity", "status"]
    assert list(data["fix"][1]) == ["title", "stack", "why", "steps", "command", "config"]
    assert list(data["signatures"][0]) == ["name", "role", "weight", "pattern", "message", "examples", "near_misses"]
    assert data["summary"] == entry.get("summary")  # placeholders untouched
    assert data == entry_to_dict(entry)


def test_unknown_format_is_refused(kb):
    with pytest.raises(ValueError, match="unknown entry format"):
        render_entry(kb.get("gpu-oom"), "html")
    assert ENTRY_FORMATS == ("terminal", "markdown", "json")


@pytest.mark.parametrize("text,values,expected", [
    ("rank {rank} on {host}", {"rank": 3, "host": "node-1"}, "rank 3 on node-1"),
    ("rank {rank} on {host}", {"rank": 0}, "rank 0"),
    ("rank {rank} raised {exc_type}", {"rank": None, "exc_type": "KeyError"}, "a rank raised KeyError"),
    ("torchrun on {host} is stopping worker {pid} ({signal}) after another worker failed", {"pid": 71210},
     "torchrun is stopping worker 71210 after another worker failed"),
    ("rank {rank}: tensors on different devices ({dev_a} {dev_b}{arg_dev} {other_dev})",
     {"rank": 0, "dev_a": "cuda:0", "dev_b": "cpu"}, "rank 0: tensors on different devices (cuda:0 cpu)"),
    ("rank {rank}: Dynamo could not trace the model ({exc_type}): {detail}", {"rank": 2},
     "rank 2: Dynamo could not trace the model"),
    ("tried {tried}", {"tried": "2.00 GiB"}, "tried 2.00 GiB"),
    ("keep ${HOME} and {{rank}}", {"rank": 1, "HOME": "x"}, "keep ${HOME} and {{rank}}"),
    ('{"stage": 3} and { rank }', {"rank": 1}, '{"stage": 3} and { rank }'),
    ("no placeholders", None, "no placeholders"),
])
def test_fill_placeholders(text, values, expected):
    assert fill_placeholders(text, values) == expected


class FakeStream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty,environ,expected", [
    (True, {}, True),
    (True, {"NO_COLOR": "1"}, False),
    (True, {"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value disables
    (False, {}, False),
])
def test_use_color(tty, environ, expected):
    assert use_color(FakeStream(tty), environ) is expected
    assert use_color(io.StringIO(), {}) is False


def test_colour_only_when_asked(kb):
    entry = kb.get("gpu-oom")
    assert ANSI_ESCAPE not in render_entry(entry, "terminal", color=False)
    coloured = render_entry(entry, "terminal", color=True)
    assert "\x1b[1;36mSummary\x1b[0m" in coloured
    assert "\x1b[1;31mcritical\x1b[0m" in coloured
