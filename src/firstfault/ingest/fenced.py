"""A post's Markdown code blocks, read as the texts they hold.

    pieces = fenced_pieces(data)   # [] when the text holds no code block

An issue, a forum post or a chat message hands over logs in fenced code blocks (```` ``` ```` or
`~~~` lines, CommonMark's fences), among the template's prose: a sentence, the code that ran, the
environment report (`python -m torch.utils.collect_env`, `transformers-cli env`), and often several
files, each in a block of its own after a line naming it (`` `rank1.log`: ``, `**node0.log**`,
`<summary>rank1.log</summary>`). Read as one text, the blocks run together: the lines after one
log (an older run's tail, the environment report) read as that log going on, and what each file's
name says (rank, node, host) is lost. Each block becomes a text of its own, named by the file its
name line gives, and the prose around them one more (its blocks' lines left empty, so every
piece keeps the line numbers of the post).

Only a post's size is looked at (a body on GitHub holds at most 65,536 characters; MAX_POST_BYTES
allows more), with a fence among its first lines or a Markdown heading or `<details>` there, and a
block that is closed: a job's log that prints a fence line (a model's generated answer) is read
as it is.
"""
from __future__ import annotations

import re

MAX_POST_BYTES = 1024 * 1024
HEAD_BYTES = 64 * 1024  # where a post's first complete block must be

# CommonMark: up to 3 spaces, then 3 or more backticks (an info string without one) or tildes
_FENCE = re.compile(rb"^[ ]{0,3}(`{3,}(?=[^`\r\n]*\r?$)|~{3,})[^\r\n]*\r?$", re.MULTILINE)
_MARKDOWN_MARK = re.compile(rb"^(?:#{1,6} \S|<details>|[ ]{0,3}(?:`{3,}|~{3,}))", re.MULTILINE)
# the decoration around a name line: `name`:, **name**, ### name, <summary>name</summary>, name:
_DECORATION = re.compile(rb"^(?:#{1,6}[ \t]+|[-*][ \t]+)?(?:<summary>|<b>|\*\*|__|`)*|(?:</summary>|</b>|\*\*|__|`)*[ \t]*:?[ \t]*$")
_FILE_NAME = re.compile(rb"[\w.@+-]{0,128}(?:/[\w.@+-]{1,128}){0,16}")


def looks_like_a_post(head: bytes) -> bool:
    """Whether a text whose first bytes are `head` may be a post with code blocks (cheap: most
    logs have none of its marks at a line's start)."""
    return _MARKDOWN_MARK.search(head) is not None


def fenced_pieces(data: bytes, is_file_name) -> list[tuple[bytes | None, int, bytes]]:
    """(the file a block's name line gives, or None; its first line; its lines) for each code
    block of `data`, and (None, 1, the prose with every block's lines left empty) first; [] when
    `data` is no post or holds no closed block among its first HEAD_BYTES. `is_file_name(name)`:
    whether a name line's text names a log file."""
    if len(data) > MAX_POST_BYTES:
        return []
    blocks = _blocks(data)
    if not blocks or blocks[0][2] is None or blocks[0][2] > HEAD_BYTES:
        return []
    lines = data.split(b"\n")
    prose = list(lines)
    pieces: list[tuple[bytes | None, int, bytes]] = []
    for opening, closing, _end in blocks:
        first = _line_of(data, opening) + 1  # the block's first line (1-based: the fence's is `first`)
        last = _line_of(data, closing) if closing is not None else len(lines)
        content = b"\n".join(lines[first:last])
        for number in range(first - 1, min(last + 1, len(lines))):
            prose[number] = b""
        if content.strip():
            pieces.append((_name_before(lines, first - 1, is_file_name), first + 1, content))
    if not pieces:
        return []
    prose_text = b"\n".join(prose)
    return [(None, 1, prose_text), *pieces] if prose_text.strip() else pieces


def _blocks(data: bytes) -> list[tuple[int, int | None, int | None]]:
    """(opening fence's offset, closing fence's offset or None, where the closing fence ends)
    of each block: a block closes at the first fence of its character at least as long, with no
    info string; one never closed runs to the end."""
    blocks = []
    fences = iter(_FENCE.finditer(data))
    for opening in fences:
        mark = opening.group(1)
        closing = next((fence for fence in fences if fence.group(1).startswith(mark[:1] * len(mark))
                        and not fence.group(0).strip()[len(fence.group(1)):].strip()), None)
        blocks.append((opening.start(), closing.start() if closing else None, closing.end() if closing else None))
        if closing is None:
            break
    return blocks


def _line_of(data: bytes, offset: int) -> int:
    """The 0-based number of the line `offset` is on."""
    return data.count(b"\n", 0, offset)


def _name_before(lines: list[bytes], fence: int, is_file_name) -> bytes | None:
    """The file the last non-empty line before a block's fence names (a blank line may come
    between them), or None."""
    for number in range(fence - 1, max(fence - 3, -1), -1):
        line = lines[number].strip()
        if not line:
            continue
        name = _DECORATION.sub(b"", line)
        found = _FILE_NAME.fullmatch(name)
        return name if found and name and is_file_name(name) else None
    return None
