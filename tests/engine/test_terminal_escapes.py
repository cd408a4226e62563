"""Control characters from logs are shown escaped, never written raw: an OSC 52 clipboard write,
a screen clear, a fake hyperlink, a C1 CSI or a bidirectional override in a log line (or in a
file name) reaches the terminal and the Markdown report as visible escapes."""
from __future__ import annotations

import json

from firstfault.render.printable import printable

from .conftest import run_cli

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
C1_CSI = "\x9b31m"
BIDI = "\u202etxt.exe"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _log(tmp_path, name="rank1.log"):
    path = tmp_path / name
    path.write_text(f"[rank1]: RuntimeError: CUDA error: device-side assert triggered {OSC52}{CLEAR}{LINK}{C1_CSI}{BIDI}\n",
                    encoding="utf-8")
    return path


def test_terminal_and_markdown_show_escapes(tmp_path):
    path = _log(tmp_path)
    for output_format in ("terminal", "markdown"):
        result = run_cli("diagnose", str(path), "--format", output_format)
        output = result.stdout.decode("utf-8")
        assert result.returncode == 1 and "device-side assert" in output
        for raw in RAW:
            assert raw not in output, (output_format, raw)
        assert "\\x1b]52;c;" in output and "\\x9b31m" in output and "\\u202e" in output


def test_json_keeps_the_text_as_escaped_json(tmp_path):
    output = run_cli("diagnose", str(_log(tmp_path)), "--format", "json").stdout.decode("utf-8")
    assert "\x1b" not in output and "\x07" not in output
    assert OSC52 in json.loads(output)["primary"]["evidence"][0]["text"]  # the contract keeps the text as it was


def test_a_file_name_with_escapes_is_printed_escaped(tmp_path):
    (tmp_path / "good.log").write_text("[rank1]: RuntimeError: CUDA error: device-side assert triggered\n")
    (tmp_path / "empty\x1b[2J.log").write_text("")
    result = run_cli("diagnose", str(tmp_path))
    for stream in (result.stdout, result.stderr):
        assert b"\x1b" not in stream
    assert b"empty\\x1b[2J.log" in result.stderr


def test_printable_keeps_tabs_newlines_and_text():
    assert printable("a\tb\nc é 中") == "a\tb\nc é 中"
    assert printable("\x1b[31mred\x1b[0m\r") == "\\x1b[31mred\\x1b[0m\\x0d"
