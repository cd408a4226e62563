"""A post's Markdown code blocks, read as the texts they hold.

    pieces = post_pieces(data, is_file_name)   # [] when the text is no post

An issue, a forum post or a chat message hands over logs in fenced code blocks (```` ``` ```` or
`~~~` lines, CommonMark's fences; a Jira ticket's `{noformat}` and `{code}`), among the template's prose: a sentence, the code that ran, the
environment report (`python -m torch.utils.collect_env`, `transformers-cli env`), and often several
files, each in a block of its own after a line naming it (`` `rank1.log`: ``, `**node0.log**`,
`<summary>rank1.log</summary>`). Read as one text, the blocks run together: the lines after one
log (an older run's tail, the environment report) read as that log going on, and what each file's
name says (rank, node, host) is lost. Each block becomes a text of its own, named by the file its
name line gives, and the prose around them one more (its blocks' lines left empty, so every
piece keeps the line numbers of the post).

A post without fences (Stack Overflow's, a mailing list's) indents its code blocks by four
spaces after a blank line, and a reply quotes what it answers with `> ` before each line: those
blocks are read the same way, when they hold most of the post's lines and its prose is a few lines.
Inside a block (or in a plain text), several files pasted one after the other, each after a line
of its name alone (`rank0.log:`), are those files.

Only a post's size is looked at (a body on GitHub holds at most 65,536 characters; MAX_POST_BYTES
allows more), with a fence among its first lines or a Markdown heading or `<details>` there (or an
indented line after a blank one), and a block that is closed: a job's log that prints a fence line
(a model's generated answer) is read as it is.
"""
from __future__ import annotations

import re

MAX_POST_BYTES = 1024 * 1024
HEAD_BYTES = 64 * 1024  # where a post's first complete block must be
MAX_PROSE_LINES = 40  # a post without fences: its lines outside the indented blocks, at most

# CommonMark: up to 3 spaces, then 3 or more backticks (an info string without one) or tildes
_FENCE = re.compile(rb"^[ ]{0,3}(`{3,}(?=[^`\r\n]*\r?$)|~{3,})[^\r\n]*\r?$", re.MULTILINE)
# (each written to start with the newline before its line, so that the engine jumps from line to
# line: a head is checked for every input, 4 us a head where `^` at every position took 60)
_MARKDOWN_MARK = re.compile(rb"\n(?:#{1,6} \S|<details>|[ ]{0,3}(?:`{3,}|~{3,}|>|\{noformat\}|\{code[:}])|h[1-6]\. \S"
                            rb"|\r?\n(?: {4}|\t)\S)")
_NAME_LINE_END = re.compile(rb"\.(?:log|out|err|txt)[`*]*:?\r?$", re.MULTILINE)
_NAME_LINE = re.compile(rb"[`*#]*[\w./@+-]{1,256}\.(?:log|out|err|txt)[`*]*:?\r?")
_INDENTED = re.compile(rb"^(?: {4}|\t)")
_JIRA_FENCE = re.compile(rb"^[ ]{0,3}\{(noformat|code)(:[^}\r\n]*)?\}[ \t]*\r?$", re.MULTILINE)
_QUOTED = re.compile(rb"^[ ]{0,3}> ?")
# the decoration around a name line: `name`:, **name**, ### name, <summary>name</summary>, name:, and
# Jira's *name* and h3. name
_DECORATION = re.compile(rb"^(?:#{1,6}[ \t]+|h[1-6]\.[ \t]+|[-*][ \t]+)?(?:<summary>|<b>|\*\*?|__|`)*"
                         rb"|(?:</summary>|</b>|\*\*?|__|`)*[ \t]*:?[ \t]*$")
_FILE_NAME = re.compile(rb"[\w.@+-]{0,128}(?:/[\w.@+-]{1,128}){0,16}")


def looks_like_a_post(head: bytes) -> bool:
    """Whether a text whose first bytes are `head` may be a post with code blocks (cheap: most
    logs have none of its marks at a line's start)."""
    if _MARKDOWN_MARK.search(b"\n" + head) is not None:
        return True
    for end in _NAME_LINE_END.finditer(head):  # a line of a file's name alone
        if _NAME_LINE.fullmatch(head, head.rfind(b"\n", 0, end.start()) + 1, end.end()):
            return True
    return False


def post_pieces(data: bytes, is_file_name) -> list[tuple[bytes | None, int, bytes]]:
    """(the file a block's name line gives, or None; its first line; its lines) for each code
    block of `data`, and (None, 1, the prose with every block's lines left empty) first; [] when
    `data` is no post: no closed fenced block among its first HEAD_BYTES, no indented blocks or
    quoted runs that are most of it, no two files each after a line of its name alone.
    `is_file_name(name)`: whether a name line's text names a log file."""
    if len(data) > MAX_POST_BYTES:
        return []
    lines = data.split(b"\n")
    blocks = _fenced_blocks(data, lines) or _indented_blocks(lines) or _quoted_blocks(lines)
    named = {}
    if not blocks:
        blocks, named = _named_sections(lines, is_file_name)
    prose = list(lines)
    pieces: list[tuple[bytes | None, int, bytes]] = []
    for covered, first, content in blocks:
        for number in covered:
            prose[number] = b""
        if content.strip():
            name = named.get(covered.start) or _name_before(lines, covered.start, is_file_name)
            pieces.append((name, first + 1, content))
    if not pieces:
        return []
    prose_text = b"\n".join(prose)
    return [(None, 1, prose_text), *pieces] if prose_text.strip() else pieces


def _fenced_blocks(data: bytes, lines: list[bytes]) -> list[tuple[range, int, bytes]]:
    """(the lines a fenced block covers, fences included; its first line inside; its text) of
    each, when the first closes among the first HEAD_BYTES (Markdown's fences, else Jira's)."""
    blocks = _blocks(data) or _jira_blocks(data)
    if not blocks or blocks[0][2] is None or blocks[0][2] > HEAD_BYTES:
        return []
    spans = []
    for opening, closing, _end in blocks:
        first = _line_of(data, opening) + 1
        last = _line_of(data, closing) if closing is not None else len(lines)
        spans.append((range(first - 1, min(last + 1, len(lines))), first, b"\n".join(lines[first:last])))
    return spans


def _indented_blocks(lines: list[bytes]) -> list[tuple[range, int, bytes]]:
    """(the lines, their first, their text without the indent) of each indented code block
    (CommonMark: lines indented by four spaces or a tab, after a blank line or the start, up to
    the first line indented less), when they hold most of the text's non-blank lines and the rest,
    the prose, is a few lines (MAX_PROSE_LINES): a log with an indented part after a blank line
    (a configuration dump) stays one log."""
    def opens(number: int) -> bool:
        return bool(_INDENTED.match(lines[number])) and (number == 0 or not lines[number - 1].strip())

    spans, prose = _runs(lines, opens, lambda line: bool(_INDENTED.match(line)) or not line.strip(), _INDENTED)
    return spans if _most_of_it(spans, prose, more=True) else []


def _quoted_blocks(lines: list[bytes]) -> list[tuple[range, int, bytes]]:
    """(the lines, their first, their text one quote level down) of each run of quoted lines (a
    mail's or a forum's reply: `> ` before each), when they hold as many of the text's non-blank
    lines as the reply does, which is a few lines (the `... wrote:` line before a quote and a
    signature after `-- ` aside). A text quoted whole is ingest.margin's."""
    signature = next((index for index, line in enumerate(lines) if line.rstrip(b"\r") in (b"-- ", b"--")), len(lines))
    spans, prose = _runs(lines[:signature], lambda number: bool(_QUOTED.match(lines[number])),
                         lambda line: bool(_QUOTED.match(line)), _QUOTED,
                         aside=lambda line: line.rstrip().endswith(b"wrote:"))  # `On <date>, <name> wrote:`
    return spans if _most_of_it(spans, prose, more=False) else []


def _runs(lines: list[bytes], opens, goes_on, mark: re.Pattern, aside=lambda line: False) -> tuple[list, int]:
    """(the lines, their first, their text with `mark` taken off each) of each run of lines that
    `opens` at a line and `goes_on` over the next ones (blank lines at its end are not its); and
    how many non-blank lines are outside the runs (not counting those `aside` says to leave)."""
    spans, number, prose = [], 0, 0
    while number < len(lines):
        if opens(number):
            end = number + 1
            while end < len(lines) and goes_on(lines[end]):
                end += 1
            while end > number + 1 and not lines[end - 1].strip():
                end -= 1
            spans.append((range(number, end), number, b"\n".join(mark.sub(b"", line, 1) for line in lines[number:end])))
            number = end
            continue
        prose += bool(lines[number].strip()) and not aside(lines[number])
        number += 1
    return spans, prose


def _most_of_it(spans: list, prose: int, more: bool) -> bool:
    """Whether runs of code are a post's: some prose, at most MAX_PROSE_LINES of it, and more
    (`more`) or at least as many non-blank lines in the runs."""
    code = sum(1 for _covered, _first, text in spans for line in text.split(b"\n") if line.strip())
    return bool(spans) and 0 < prose <= MAX_PROSE_LINES and (code > prose if more else code >= prose)


def _blocks(data: bytes) -> list[tuple[int, int | None, int | None]]:
    """(opening fence's offset, closing fence's offset or None, where the closing fence ends)
    of each block: a block closes at the first fence of its character at least as long, with no
    info string; one never closed runs to the end."""
    def closes(opening: re.Match, fence: re.Match) -> bool:
        mark = opening.group(1)
        return fence.group(1).startswith(mark[:1] * len(mark)) and not fence.group(0).strip()[len(fence.group(1)):].strip()

    return _pairs(_FENCE.finditer(data), closes)


def _jira_blocks(data: bytes) -> list[tuple[int, int | None, int | None]]:
    """The same for Jira's wiki markup: `{noformat}` or `{code}` (`{code:python}`) alone on a line
    opens a block, the next of its kind without parameters closes it."""
    return _pairs(_JIRA_FENCE.finditer(data), lambda opening, marker: marker.group(1) == opening.group(1) and not marker.group(2))


def _pairs(markers, closes) -> list[tuple[int, int | None, int | None]]:
    """Blocks from a text's fence lines in order: each opens at a marker and closes at the next one
    that `closes(opening, marker)` says ends it; one never closed runs to the end."""
    blocks = []
    markers = iter(markers)
    for opening in markers:
        closing = next((marker for marker in markers if closes(opening, marker)), None)
        blocks.append((opening.start(), closing.start() if closing else None, closing.end() if closing else None))
        if closing is None:
            break
    return blocks


def _line_of(data: bytes, offset: int) -> int:
    """The 0-based number of the line `offset` is on."""
    return data.count(b"\n", 0, offset)


def _named_sections(lines: list[bytes], is_file_name) -> tuple[list[tuple[range, int, bytes]], dict[int, bytes]]:
    """Several files pasted one after the other, each after a line of its name alone (`rank0.log:`,
    `**rank1.log**`): (the lines of each, their first, their text) and {a section's name line:
    the name}, when at least two lines name files; else nothing."""
    names = {number: name for number, line in enumerate(lines) if (name := _named(line, is_file_name, marked=True))}
    if len(names) < 2:
        return [], {}
    starts = sorted(names)
    sections = [(range(start, stop), start + 1, b"\n".join(lines[start + 1:stop]))
                for start, stop in zip(starts, starts[1:] + [len(lines)])]
    return sections, names


def _named(line: bytes, is_file_name, marked: bool = False) -> bytes | None:
    """The file name a line holds alone, its decoration taken off (`marked`: it must have some, a
    colon after it or Markdown's emphasis, code or heading around it, as a name line alone has)."""
    line = line.strip()
    name = _DECORATION.sub(b"", line)
    if not name or (marked and name == line) or not _FILE_NAME.fullmatch(name) or not is_file_name(name):
        return None
    return name


def _name_before(lines: list[bytes], fence: int, is_file_name) -> bytes | None:
    """The file the last non-empty line before a block's fence names (a blank line may come
    between them), or None."""
    for number in range(fence - 1, max(fence - 3, -1), -1):
        if lines[number].strip():
            return _named(lines[number], is_file_name)
    return None
