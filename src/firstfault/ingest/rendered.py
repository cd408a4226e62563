"""Tracebacks as a renderer prints them (rich, IPython, an exception group), read as Python prints them.

    data = as_python_tracebacks(data)   # the same bytes when no line shows such a traceback

Python prints an uncaught exception as `Traceback (most recent call last):`, a line
`  File "p", line N, in f` for each frame with the source line under it, and `Type: message`. A
training script that installs rich's handler (`rich.traceback.install()`, any typer CLI) or runs in
a notebook says the same things in another shape:

- rich (`rich.traceback`): a box from `╭── Traceback (most recent call last) ──╮` to `╰──╯`; in it
  each frame as `path:N in f` (`in f:N` when the file was not found), folded at the box's edge when
  long, then the source around it with the line that ran marked `❱ N`; after the box the exception,
  word-wrapped at the console's width (80 columns when the output is not a terminal), so the
  message a signature looks for is cut into lines.
- IPython (a notebook cell's output, `%xmode Context`): a rule of dashes, then
  `Type    Traceback (most recent call last)`, each frame as `File p:N, in f(args)` or
  `Cell In[5], line N` (IPython 7 and Colab: `p in f(args)`, `<ipython-input-5-…> in <cell line: 1>()`,
  Colab's `9 frames` where it folded some), numbered source lines with `-->` at the line that ran;
  the exception last, unwrapped.
- Python itself, for an exception group (3.11+: asyncio's `TaskGroup`, anyio, trio): the group's
  traceback behind a margin, `  + Exception Group Traceback (most recent call last):`, `  | ` before
  its lines, then each sub-exception's whole traceback behind `    | `, between `+-+---- 1 ----`
  rules; the margins are taken off.

Signatures, the frames that tell which collective a rank waited in (`distributed_c10d.py", line N,
in barrier`) and the tails that keep what each rank did last read Python's shape. So each such
traceback is written again in it, in place: one line for each line it had, a line Python's shape
has no place for left empty (a box's border, the source around the line that ran, the pieces of a
wrapped message joined on its first line), so line numbers stay those of the file. A launcher's
prefix before each line (`[default3]:`, `[rank3]: `) is kept. Renderers' references: rich's
`rich/traceback.py` (Traceback._render_stack, the exception after the box), IPython's
`IPython/core/ultratb.py` (VerboseTB).

The same is done for the metrics column of rich's progress bar (Lightning's default bar), whose
values sit on the lines under their names: they are put back on the bar's line.

Blocks without a rendered traceback pay nothing: the fast engine reports the headers with the
signatures (`hyperscan_engine.RENDERED_ID`), and `may_hold_rendered` is the same test without it.
"""
from __future__ import annotations

import re
from bisect import bisect_right

RICH_HEADER = re.compile(rb"^(.*?)\xe2\x95\xad(?:\xe2\x94\x80)+ Traceback \(most recent call last\) (?:\xe2\x94\x80)+\xe2\x95\xae\r?$",
                         re.MULTILINE)
# IPython's header, `<prefix>RuntimeError      Traceback (most recent call last)`: found by its
# literal, the class name and the prefix read back from there (a pattern that led with them would
# try every start in a long line, quadratic in it)
IPYTHON_HEADER = re.compile(rb"Traceback \(most recent call last\)\r?$", re.MULTILINE)
_CLASS_NAME = re.compile(rb"[A-Za-z_][\w.]{0,200}$")
GROUP_HEADER = re.compile(rb"\+ Exception Group Traceback \(most recent call last\):\r?$", re.MULTILINE)
# what the fast engine looks for (a superset: the headers' common part with what follows it)
# (and the metrics column of a rich progress bar: a bar's line ends in a metric's name, below)
HEADER_HINT = rb"Traceback \(most recent call last\)(?: \xe2\x94\x80|\r?\n)|Exception Group Traceback|it/s [\w./-]+: *\r?\n"
_HINT = re.compile(HEADER_HINT)

PYTHON_HEADER = "Traceback (most recent call last):"
MAX_TRACEBACK_LINES = 5000  # a traceback longer than this is not read as one
MAX_MESSAGE_LINES = 400  # an exception's message after rich's box is read this far at most
MAX_HEADER_PREFIX = 400  # a header's launcher prefix and class name are shorter than this

_RICH_CODE = re.compile(r"^(?:❱|\s)\s*(\d+) ?(.*)$")  # `  60 code`, `❱ 63 code`
_RICH_FRAME = re.compile(r"^(?P<path>.+?):(?P<line>\d+) ?in ?(?P<name>\S+)$|^in (?P<name2>\S+):(?P<line2>\d+)$")
_INDENT_GUIDES = re.compile(r"^(?:│ {0,3})+")  # rich's indent guides before a source line
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?::(?: |$)|$)")
_RECORD_START = re.compile(r"^(?:\d{4}-\d\d-\d\d|[IWEF]\d{4} \d\d:|\[\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d)")
_IPYTHON_FRAME = re.compile(r"^File (?P<path>.+?):(?P<line>\d+)(?:, in (?P<name>[^\s(]+)(?:\(.*\))?)?$")
_IPYTHON_CELL = re.compile(r"^Cell (?P<cell>In ?\[\d*\]), line (?P<line>\d+)$")
_IPYTHON7_FRAME = re.compile(r"^(?P<path>\S+\.py|<ipython-input-[^>]*>) in (?P<name><[^>]*>|[^\s(]+)(?:\(.*\))?$")
_COLLAPSED = re.compile(r"^\d+ frames?$")  # Colab folds a notebook traceback's library frames: `9 frames`
_IPYTHON_CODE = re.compile(r"^(?:-+>|\s+)\s*(\d+)(?: (.*))?$")  # `--> 434 main()`, `    431 x = 1`


def may_hold_rendered(data: bytes) -> bool:
    """Whether `data` may hold a rendered traceback or progress bar (the test the fast engine
    makes in its pass)."""
    return (b"call last)" in data or b"Exception Group" in data or b"it/s " in data) and _HINT.search(data) is not None


def as_python_tracebacks(data: bytes, modules: dict[str, str] | None = None) -> bytes:
    """`data` with every rich, IPython or exception-group traceback written as Python prints a
    traceback, line for line, and a rich progress bar's metrics joined onto its line (`_progress`).
    `modules`: class name -> the module Python names it with (the
    knowledge base's, `Matcher.exception_modules`): rich and IPython print `UserError:` where
    Python prints `torch._dynamo.exc.UserError:`, and the module is put back when a frame of the
    traceback is in that module's package (`.../torch/_dynamo/...`)."""
    starts = [(found.start(), found.group(1), _rich) for found in RICH_HEADER.finditer(data)]
    starts += list(_ipython_headers(data))
    starts += list(_group_headers(data))
    if b"it/s " in data:
        starts += [(found.start(), found.group(1), _progress) for found in PROGRESS_BAR.finditer(data)]
    if not starts:
        return data
    lines = data.split(b"\n")
    offsets = _line_offsets(lines)
    done: dict[bytes, int] = {}  # prefix -> the last line of its last traceback read
    for start, prefix, rewrite in sorted(starts):
        index = _line_at(offsets, start)
        if index > done.get(prefix, -1):
            done[prefix] = rewrite(_Stream(lines, prefix, modules or {}), index)
    return b"\n".join(lines)


def _ipython_headers(data: bytes):
    """(where the line starts, its prefix, _ipython) of each line that ends as IPython's header does:
    a class name, blanks (none when the name is long), `Traceback (most recent call last)`."""
    for found in IPYTHON_HEADER.finditer(data):
        line_start = data.rfind(b"\n", 0, found.start()) + 1
        if found.start() - line_start > MAX_HEADER_PREFIX:
            continue
        name = _CLASS_NAME.search(data[line_start:found.start()].rstrip(b" "))
        if name is not None:
            yield line_start, data[line_start:line_start + name.start()], _ipython


def _group_headers(data: bytes):
    """(where the line starts, its prefix, _group) of each exception group's header line; a
    launcher prefix keeps the blank after it (`[rank0]: ` + `  + Exception Group ...`)."""
    for found in GROUP_HEADER.finditer(data):
        line_start = data.rfind(b"\n", 0, found.start()) + 1
        head = data[line_start:found.start()]
        prefix = head.rstrip(b" ")
        if len(head) <= MAX_HEADER_PREFIX:
            yield line_start, prefix + (b" " if prefix and prefix != head else b""), _group


def _line_offsets(lines: list[bytes]) -> list[int]:
    offsets, position = [], 0
    for line in lines:
        offsets.append(position)
        position += len(line) + 1
    return offsets


def _line_at(offsets: list[int], position: int) -> int:
    return bisect_right(offsets, position) - 1


class _Stream:
    """The lines of one process: those behind its launcher prefix (all lines when it has none).
    In a console the ranks' lines interleave (torchrun's `--tee`, srun): a traceback is read in
    its own rank's lines, past the others'."""

    def __init__(self, lines: list[bytes], prefix: bytes, modules: dict[str, str]) -> None:
        self.lines, self.prefix, self.modules = lines, prefix, modules

    def named(self, exception: str, said: list[str]) -> str:
        """The exception line with its class's module put back (see as_python_tracebacks), when
        one of the traceback's frames `said` is in that module's package; else as it is."""
        name = exception.split(":", 1)[0]
        module = self.modules.get(name)
        if module is None:
            return exception
        package = "/" + module.rpartition(".")[0].replace(".", "/") + "/"
        framed = any(line.startswith('  File "') and package in line for line in said)
        return f"{module}.{exception}" if framed else exception

    def body(self, index: int) -> str | None:
        """The line after the prefix, decoded, or None when it does not carry the prefix."""
        line, prefix = self.lines[index], self.prefix
        if not line.startswith(prefix):
            # an empty line behind the prefix loses the prefix's trailing blank (`[rank0]:`)
            return "" if prefix and line.rstrip(b"\r") == prefix.rstrip() else None
        return line[len(prefix):].rstrip(b"\r").decode("utf-8", "replace")

    def following(self, index: int):
        """(index, body) of this stream's lines after `index`, at most MAX_TRACEBACK_LINES of them
        and past at most MAX_TRACEBACK_LINES of other streams' lines at a time; a line of no
        launcher prefix ends it (a console's own line: the launcher's report)."""
        mine = others = 0
        index += 1
        while index < len(self.lines) and mine < MAX_TRACEBACK_LINES and others < MAX_TRACEBACK_LINES:
            body = self.body(index)
            if body is not None:
                mine, others = mine + 1, 0
                yield index, body
            elif not self.prefix:
                return
            else:
                others += 1
            index += 1

    def put(self, index: int, text: str) -> None:
        self.lines[index] = self.prefix + text.encode("utf-8") if text else b""

    def write(self, indices: list[int], said: list[str]) -> None:
        """This stream's lines `indices` become `said`, at their end (empty lines before it): the
        frames stay as close together as Python prints them, the exception right below them."""
        said = said[-len(indices):] if len(said) > len(indices) else said
        for index in indices:
            self.put(index, "")
        for index, text in zip(indices[len(indices) - len(said):], said):
            self.put(index, text)


# -- rich's progress bar -------------------------------------------------------------------------

# Lightning's RichProgressBar (its default bar when rich is installed) prints the metrics as a
# column of cells: the bar's line ends in the first metric's name, each value is on the line under
# its name, at the name's column, then the next name, and so on:
#     Epoch 0/2  ━━━━━━━━━ 8/8 0:00:00 • 0:00:00 148.22it/s train_loss_step:
#                                                           nan
#                                                           train_loss_epoch:
#                                                           nan
# The names and values are put back on the bar's line (`train_loss_step: nan train_loss_epoch: nan`),
# where the signatures and the progress rules read a metric.
PROGRESS_BAR = re.compile(rb"^((?:\[[\w.:-]{1,40}\]: ?|\d{1,5}: )*).*?it/s [\w./-]+: *\r?$", re.MULTILINE)
MAX_CELLS = 64  # a bar's metrics, names and values


def _progress(stream: _Stream, bar_index: int) -> int:
    """Join the metrics column under the bar at `bar_index`; the index of its last cell."""
    bar = (stream.body(bar_index) or "").rstrip()
    column = len(bar) - len(bar.rsplit(" ", 1)[-1])  # where the first metric's name starts
    said, last, value_next = [bar], bar_index, True
    for index, body in stream.following(bar_index):
        cell = _cell(body, column)
        if cell is None or cell.endswith(":") == value_next or len(said) > MAX_CELLS:
            break
        said.append(cell)
        stream.put(index, "")
        last, value_next = index, not value_next
    if last != bar_index:
        stream.put(bar_index, " ".join(said))
    return last


def _cell(body: str, column: int) -> str | None:
    """The one word a line has at the metrics' column; what is left of it may only be blanks or
    another column's wrapped numbers (the time left, `0:00:00`, when the bar ran out of width)."""
    head, word = body[:column], body[column:].rstrip()
    if not word or " " in word or word[0] == " " or (head and head[-1] != " ") or any(char.isalpha() for char in head):
        return None
    return word


# -- rich ---------------------------------------------------------------------------------------

def _rich(stream: _Stream, header: int) -> int:
    """Rewrite the rich traceback whose box starts at line `header`; the index of its last line."""
    width = len(stream.body(header))
    inner = width - 4  # `│ ` + content + ` │`
    said = [PYTHON_HEADER]  # the traceback as Python says it
    frame: list[str] = []  # the pieces of a frame's `path:N in f`, folded at the box's edge
    region = [header]
    for index, body in stream.following(header):
        if not body.startswith(("│", "╰")):
            break
        region.append(index)
        if body.startswith("╰"):
            said += _rich_frame(frame, inner)
            stream.write(region, said)
            return _join_rich_message(stream, index, width, said)
        content = body[2:-2] if body.endswith("│") else body[2:]
        code = _RICH_CODE.match(content)
        if not content.strip() or code or content.lstrip().startswith(("╭", "│", "╰", "[... ")):
            said += _rich_frame(frame, inner)
            frame = []
            if code is not None and content.startswith("❱"):
                said.append("    " + _INDENT_GUIDES.sub("", code.group(2)).strip())  # the line that ran
        else:
            frame.append(content.rstrip())
    said += _rich_frame(frame, inner)  # a box cut short (the block or the paste ends)
    stream.write(region, said)
    return region[-1]


def _rich_frame(pieces: list[str], inner: int) -> list[str]:
    """A frame's `path:N in f` (`in f:N`), its pieces joined, as Python's frame line."""
    if not pieces:
        return []
    text = pieces[0]
    for previous, piece in zip(pieces, pieces[1:]):
        text += piece if len(previous) >= inner else " " + piece  # a fold, or a word wrap
    found = _RICH_FRAME.match(text.strip())
    if found is None:
        return ["    " + text.strip()]  # not a frame after all: kept as a line of the traceback
    path = found.group("path") or "<unknown>"
    line = found.group("line") or found.group("line2")
    name = found.group("name") or found.group("name2")
    return [f'  File "{path}", line {line}, in {name}']


def _join_rich_message(stream: _Stream, box_end: int, width: int, said: list[str]) -> int:
    """Join the lines of the exception after the box that rich word-wrapped at `width`, each on
    its first piece; the index of the message's last line. A message may hold lines of its own, a
    blank one, a whole traceback (`mp.spawn`'s ProcessRaisedException quotes the worker's): each is
    joined apart. It ends at a line rich cannot have printed (longer than the width, another box)
    or one that starts a log record."""
    following = stream.following(box_end)
    first = next(following, None)
    if first is None or not _EXCEPTION.match(first[1]):
        return box_end
    start, text = first
    piece, last = text, start
    text = stream.named(text, said)
    for index, body in following:
        if len(body) > width or body.startswith("╭") or _RECORD_START.match(body):
            break
        word = body.split(" ", 1)[0]
        if piece.strip() and body[:1].strip() and len(piece) + len(word) > width:  # the rest of the line before
            text += body if piece.endswith(" ") or _folded(piece, width) else " " + body
            stream.put(index, "")
        else:  # a line of its own: the one before is whole
            stream.put(start, text.rstrip())
            start, text = index, body
        piece, last = body, index
        if index - box_end > MAX_MESSAGE_LINES:
            break
    stream.put(start, text.rstrip())
    return last


def _folded(piece: str, width: int) -> bool:
    """Whether a full line is a piece of one word longer than the width (rich folds such a word):
    it has no blank, and it ends inside the word, not with the punctuation that ends one (a word
    exactly as long as the line, `[/pytorch/third_party/gloo/.../unbound_buffer.cc:129]`, ends so)."""
    return len(piece) >= width and " " not in piece and not piece.endswith(("]", ")", "}", ",", ":", ";"))


# -- IPython ------------------------------------------------------------------------------------

def _ipython(stream: _Stream, header: int) -> int:
    """Rewrite the IPython traceback whose header is line `header`; the index of its last line."""
    rule = _previous(stream, header)
    if rule is None or len(stream.body(rule).strip()) < 20 or stream.body(rule).strip("-\r "):
        return header  # no rule of dashes above it: not IPython's header
    said = [PYTHON_HEADER]
    pending = None  # where an IPython 7 frame is in `said`: it gives its line number at its `-->`
    region = [rule, header]
    for index, body in stream.following(header):
        stripped = body.strip()
        frame = _IPYTHON_FRAME.match(body) or _IPYTHON_CELL.match(body)
        code = _IPYTHON_CODE.match(body) if stripped else None
        if frame:
            name = frame.groupdict().get("name") or "<module>"
            path = frame.groupdict().get("path") or f"<cell {frame.groupdict().get('cell')}>"
            said.append(f'  File "{path}", line {frame.group("line")}, in {name}')
        elif _IPYTHON7_FRAME.match(body):
            found = _IPYTHON7_FRAME.match(body)
            pending = (len(said), found.group("path"), found.group("name"))
            said.append(f'  File "{found.group("path")}", in {found.group("name")}')
        elif code:
            if stripped.startswith("-"):  # the line that ran
                if pending is not None:
                    at, path, name = pending
                    said[at] = f'  File "{path}", line {code.group(1)}, in {name}'
                    pending = None
                said.append("    " + (code.group(2) or "").strip())
        elif stripped and stripped != "(...)" and not stripped.startswith("[... skipping hidden") \
                and not _COLLAPSED.match(stripped):
            if _EXCEPTION.match(body) and stream.named(body, said) != body:
                stream.put(index, stream.named(body, said))  # the exception, its module put back
            break  # the exception: as IPython printed it, which is as Python prints it
        region.append(index)
    stream.write(region, said)
    return region[-1]


def _previous(stream: _Stream, index: int) -> int | None:
    """The stream's line before `index` (past other streams' lines), or None."""
    for earlier in range(index - 1, max(index - MAX_TRACEBACK_LINES, 0) - 1, -1):
        if stream.body(earlier) is not None:
            return earlier
        if not stream.prefix:
            return None
    return None


# -- exception groups ---------------------------------------------------------------------------

_GROUP_MARGIN = re.compile(r"^ *\| ?(.*)$")  # `  | ` before a group's lines, `    | ` before a sub-exception's
_GROUP_RULE = re.compile(r"^ *\+[-+]*(?: ?(?:\d+|\.\.\.) ?[-+]*)?$")  # `  +-+---- 1 ----`, `    +------`


def _group(stream: _Stream, header: int) -> int:
    """Take the margins off the exception group whose traceback starts at line `header`: its own
    traceback and each sub-exception's read as Python prints a traceback; the index of its last line."""
    stream.put(header, PYTHON_HEADER)
    last = header
    for index, body in stream.following(header):
        margin = _GROUP_MARGIN.match(body)
        if margin:
            stream.put(index, margin.group(1))
        elif _GROUP_RULE.match(body) and body.strip():
            stream.put(index, "")
        else:
            break
        last = index
    return last
