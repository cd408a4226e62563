"""The terminal table: fitting, wrapping, and what happens when the terminal is too narrow."""
from __future__ import annotations

from firstfault.render.entry_tables import render_list, render_table
from firstfault.render.entry_terminal import Style

PLAIN = Style(False)
HEADERS = ("id", "summary")
ROWS = [("collective-timeout-hang", "Healthy ranks waited in a collective for a rank that stopped, then died.")]


def test_a_table_that_fits_is_not_wrapped():
    text = render_table(HEADERS, ROWS, width=200, style=PLAIN)
    assert text.splitlines()[2] == "collective-timeout-hang  " + ROWS[0][1]


def test_long_cells_wrap_inside_their_column():
    lines = render_table(HEADERS, ROWS, width=60, style=PLAIN, whole_words=(0,)).splitlines()
    assert all(len(line) <= 60 for line in lines)
    assert lines[2].startswith("collective-timeout-hang  Healthy")
    assert lines[3].startswith(" " * 25)  # continuation stays in the summary column


def test_whole_word_columns_never_break_an_id():
    lines = render_table(HEADERS, ROWS, width=50, style=PLAIN, whole_words=(0,)).splitlines()
    assert lines[2].startswith("collective-timeout-hang  ")


def test_too_narrow_falls_back_to_records():
    text = render_table(HEADERS, ROWS, width=30, style=PLAIN, whole_words=(0,))
    assert text.splitlines()[:3] == ["id:", "  collective-timeout-hang", "summary:"]
    assert all(len(line) <= 30 for line in text.splitlines())


def test_too_narrow_can_overflow_instead():
    text = render_table(HEADERS, ROWS, width=30, style=PLAIN, whole_words=(0,), too_narrow="overflow")
    lines = text.splitlines()
    assert lines[2] == "collective-timeout-hang  " + ROWS[0][1]
    assert len(lines[1]) == 30  # the rule is cut at the terminal edge


def test_bullet_paragraphs_hang_and_rows_can_be_spaced():
    rows = [("a", "• first point that is long enough to wrap\n• second"), ("b", "x")]
    lines = render_table(("k", "points"), rows, width=30, style=PLAIN, spaced=True).splitlines()
    assert lines[2:] == ["a  • first point that is long", "     enough to wrap", "   • second", "", "b  x"]


def test_list_keeps_one_line_per_entry_on_a_narrow_terminal(kb):
    lines = render_list(kb.entries, width=50).splitlines()
    assert len(lines) == 2 + len(kb.entries)
    assert [line.split()[0] for line in lines[2:]] == [entry.id for entry in kb.entries]


def test_list_colours_ids_and_severity(kb):
    text = render_list(kb.entries, width=200, color=True)
    assert "\x1b[33mgpu-oom" in text and "\x1b[31mhigh" in text
