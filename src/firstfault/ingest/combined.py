"""Several log files pasted into one, read back as the files they were.

    pieces = split_combined(item)   # [item] when it is one log

Engineers hand over the logs of many ranks as one text as often as a folder: `tail -n +1
rank*.log` (or `head`, `tail -f`: a `==> rank3.log <==` line before each file's lines) and `grep
-H`/`grep -rn` (each line after its file's name: `rank3.log:`, `logs/rank3.log:120:`, context
lines `rank3.log-119-`, `--` between groups). Read as one file, the ranks' lines run together:
what each file's name says (rank, local rank, host) is lost, and the lines of ranks that print no
prefix of their own read as one process's. Each file's lines become an input of their own, named
by that file (its name gives the path hints, `ingest.attribution.hints_from_path`), shown as
`combined.log (logs/rank3.log)`, with the line numbers of the text given (`InputFile.first_line`).

Docker Compose (`docker compose up`, `docker compose logs`) interleaves its containers' lines,
each after the container's name, padded, and a bar (`trainer-1  | `; Compose v1: `proj_trainer_1 |`).
Each container's lines become an input of their own, shown with the container's name (what
`docker logs trainer-1` would give; the name says nothing of ranks or hosts, so the text's own
name still gives the path hints): the other containers' lines are left empty in it, so its line
numbers are those of the text given.

`kubectl logs -l <selector> --prefix` (`--all-containers` too) prints each pod's lines after
`[pod/<pod>/<container>] `, one pod after the other. Each container's lines become an input of
their own, shown as `<pod>/<container>`, the other lines left empty as in Compose's, the prefix
kept (a pod's name is its host); the pod's name gives the hints the file `kubectl logs <pod> >
<pod>.log` would (`bert-worker-1`: Kubeflow's worker 1).

A post (an issue, a forum or chat message) holds its logs in Markdown code blocks among its prose:
each block becomes an input of its own, named by the file a line before it names (`posts.py`).

The format must hold from the first line (tail's header) or on nearly every line (grep's file
names, which must look like files: a folder in them or a log's extension; Compose's container
names, which end in the replica's number), so that a log that quotes one such line, or `grep -c`
counts among notes, stays one log.
"""
from __future__ import annotations

import re
from dataclasses import replace

from . import margin
from .exported import MAX_EXPORT_BYTES, TOO_BIG_AN_EXPORT, export_pieces, looks_like_an_export
from .posts import MAX_POST_BYTES, looks_like_a_post, post_pieces
from .reader import starts_as_plain_text, without_terminal_codes
from .sources import InputFile

PIECE_OF = " in "  # a piece's name: `rank3.log in combined.log` (what correlate.runs reads back)
MAX_COMBINED_BYTES = 256 * 1024 * 1024  # larger files are read as one log (their pieces would sit in memory)
HEAD_BYTES = 64 * 1024  # what grep's format is recognised from
FIRST_BYTES, FIRST_LINES = margin.FIRST_BYTES, 3  # what rules out most logs, cheaply (one read: pipeline)
GREP_SHARE = 0.9  # of a grep output's non-empty lines carry a file name
GREP_MIN_LINES = 3
MAX_NAME = 4096  # bytes of a file name in grep's output, at most
MAX_CONTAINERS = 64  # a text naming more is no Compose output (each container's piece is a copy)
MAX_COMPOSE_BYTES = 32 * 1024 * 1024

_TAIL_HEADER = re.compile(rb"==> (.{1,4096}?) <==\r?")
_TAIL_HEADERS = re.compile(rb"^==> (.{1,4096}?) <==\r?$", re.MULTILINE)
_NAME_BOUND = re.compile(rb"[\s:]")  # a name in grep's output ends at its first ':' (names here hold no space)
_NAME_MARK = re.compile(rb"[:-]")
_LINE_NUMBER_COLON = re.compile(rb"(\d{1,12}):")
_LINE_NUMBER_DASH = re.compile(rb"(\d{1,12})-")
_GREP_SEPARATOR = b"--"
# the name of a file of a job's folder: a log's extension (a rotated one too), a launcher's stdout /
# stderr file, the job's script or configuration; not source code (a compiler's or Python's
# warnings start with `file.py:12:` too)
_JOB_FILE = (rb"(?:\.(?:log|out|err|txt|sbatch|slurm|sh|ya?ml|json|cfg|conf|ini|toml)(?:\.\d{1,3})?"
             rb"|(?:^|/)std(?:out|err)(?:\.\w{1,8})?)")
_LOG_NAME = re.compile(rb"(?i)" + _JOB_FILE + rb"$")
_NAMED_START = re.compile(rb"(?i)[^\s:]{0,4096}?" + _JOB_FILE + rb"[:-]")  # a line that may start so
# a container's name (Compose names one `<service>-<replica>`, v1 `<project>_<service>_<replica>`),
# the padding to the longest name, the bar
_COMPOSE_LINE = re.compile(rb"([A-Za-z0-9][\w.-]{0,127}[-_]\d{1,4})[ \t]*\| ?")
# kubectl's `--prefix` (the form ingest.attribution reads the pod from)
_KUBECTL_LINE = re.compile(rb"\[pod/([a-z0-9][a-z0-9.-]{0,252}/[\w.-]{1,63})\] ")


def split_combined(item: InputFile, head: bytes | None = None) -> list[InputFile]:
    """The files pasted into `item`, each an input of its own; [item] when it is one log.
    `head`: its first FIRST_BYTES, when the caller read them already."""
    form = _form(item, head)
    limits = {"post": MAX_POST_BYTES, "export": MAX_EXPORT_BYTES}
    data = item.whole(limits.get(form, MAX_COMBINED_BYTES)) if form is not None else None
    if data is None and form == "export" and TOO_BIG_AN_EXPORT not in item.notes:  # (said once)
        return [replace(item, notes=(*item.notes, TOO_BIG_AN_EXPORT))]
    if data is None:
        return [item]
    if form == "export":
        pieces = export_pieces(data)
    elif form == "tail":
        pieces = _tail_pieces(data)
    elif form == "post":
        pieces = post_pieces(data, lambda name: _LOG_NAME.search(name) is not None)
    elif form == "compose":
        pieces = _owned_pieces(without_terminal_codes(data), _COMPOSE_LINE, keep_prefix=False)
    elif form == "kubectl":
        pieces = _owned_pieces(data, _KUBECTL_LINE, keep_prefix=True)
    else:
        pieces = _grep_pieces(data, _numbered(_head_lines(data)))
    if not pieces or form == "kubectl" and len(pieces) == 1 and item.relative == _kubectl_pod(pieces[0][0]):
        return [item]  # (a pod's lines kept their prefix: once named by its pod, a piece is that pod's)
    seen: dict[str, int] = {}
    inputs = []
    blocks = 0
    for name, first_line, content in pieces:
        if name is None and form == "post" and inputs:  # a code block no line names: the post's too
            blocks += 1
            inputs.append(replace(item, display=f"code block {blocks}{PIECE_OF}{item.display}", path=None, content=content,
                                  first_line=first_line))
            continue
        if name is None:  # lines before the first file's (a post's prose): the text's own
            inputs.append(replace(item, path=None, content=content, first_line=first_line))
            continue
        named = name.decode("utf-8", "replace")
        seen[named] = seen.get(named, 0) + 1
        again = f" #{seen[named]}" if seen[named] > 1 else ""  # the same file pasted twice
        # a file's name says what its path would (rank, node, host); a container's name is the
        # deployment's own (`worker-2` is a replica, not rank 2 or a host), so the text's name stays;
        # a pod's name says what the file `kubectl logs` saves it to would
        relative = {"compose": item.relative, "kubectl": _kubectl_pod(name)}.get(form, named)
        inputs.append(replace(item, display=f"{named}{again}{PIECE_OF}{item.display}", relative=relative, path=None,
                              content=content, first_line=first_line))
    return inputs


def _kubectl_pod(owner: bytes | None) -> str | None:
    """The pod of a `pod/container` owner."""
    return owner.partition(b"/")[0].decode("utf-8", "replace") if owner else None


def _form(item: InputFile, head: bytes | None = None) -> str | None:
    """"tail", "grep", "compose", "kubectl", "post" (a post's code blocks, see posts.py) or "export"
    (a log platform's records, exported.py) when `item` reads as files or containers' outputs
    pasted or stored in that form, else None. Every input passes here: its first lines decide, read alone,
    before anything more is."""
    head = item.head(FIRST_BYTES) if head is None else head
    if head is None or not starts_as_plain_text(head):
        return None  # gzip, UTF-16 and binary inputs are read as they are
    if looks_like_an_export(head):
        return "export"
    if _starts_with_tail_header(head):
        return "tail"
    first_lines = [line for line in without_terminal_codes(head).split(b"\n", FIRST_LINES)[:FIRST_LINES] if line.strip()]
    for form, line_form in (("compose", _COMPOSE_LINE), ("kubectl", _KUBECTL_LINE)):
        if first_lines and all(map(line_form.match, first_lines)):
            lines = _head_lines(without_terminal_codes(item.head(HEAD_BYTES) or b""))
            return form if _nearly_all(sum(1 for line in lines if line_form.match(line)), lines) else None
    # (a log that starts with a file's name is no grep output: it may still be files after their names)
    if any(map(_NAMED_START.match, first_lines)) and _grep_shaped(_head_lines(item.head(HEAD_BYTES) or b"")):
        return "grep"
    return "post" if looks_like_a_post(head) else None  # most logs end here: regexes on their first lines


def _head_lines(data: bytes) -> list[bytes]:
    """The non-empty lines of the first HEAD_BYTES of `data` (its last, maybe cut, aside)."""
    return [line for line in data[:HEAD_BYTES].split(b"\n")[:-1] if line.strip()]


def _starts_with_tail_header(head: bytes) -> bool:
    first = head.lstrip(b"\r\n").split(b"\n", 1)[0]
    return _TAIL_HEADER.fullmatch(first) is not None


def _tail_pieces(data: bytes) -> list[tuple[bytes | None, int, bytes]]:
    """(file name, first line, lines) of each `==> name <==` section."""
    headers = list(_TAIL_HEADERS.finditer(data))
    pieces, line = [], 1
    for index, header in enumerate(headers):
        line += data.count(b"\n", headers[index - 1].start() if index else 0, header.start())
        end = headers[index + 1].start() if index + 1 < len(headers) else len(data)
        pieces.append((header.group(1), line + 1, data[header.end() + 1:end]))
    return [piece for piece in pieces if piece[2].strip()]


def _owned_pieces(data: bytes, owner_line: re.Pattern, keep_prefix: bool) -> list[tuple[bytes | None, int, bytes]]:
    """(owner, 1, its lines with every other owner's left empty) for each container or pod that
    `owner_line` names at a line's start, in the order they first speak; a line without an owner
    stays with the line before it (nothing is dropped); the owner's prefix is kept or taken off.
    None when the text names more than MAX_CONTAINERS, or is too big to copy that often."""
    if len(data) > MAX_COMPOSE_BYTES:
        return []
    lines = data.split(b"\n")
    owners, texts, owner = [], [], None
    for line in lines:
        found = owner_line.match(line)
        if found is not None:
            owner, line = found.group(1), line if keep_prefix else line[found.end():]
        owners.append(owner)
        texts.append(line)
    names = list(dict.fromkeys(name for name in owners if name is not None))
    if not names or len(names) > MAX_CONTAINERS:
        return []
    pieces = [(name, 1, b"\n".join(text if who == name else b"" for who, text in zip(owners, texts))) for name in names]
    before = [text for who, text in zip(owners, texts) if who is None]  # lines before any container's
    if any(text.strip() for text in before):
        pieces.insert(0, (None, 1, b"\n".join(before)))
    return pieces


def _grep_shaped(lines: list[bytes]) -> bool:
    """Nearly every one of `lines` starts with a log file's name."""
    numbered = _numbered(lines)
    named = sum(1 for line in lines if _grep_line(line, numbered)[0] is not None)
    separators = sum(1 for line in lines if line.rstrip(b"\r") == _GREP_SEPARATOR)
    return named >= GREP_MIN_LINES and _nearly_all(named + separators, lines)


def _nearly_all(marked: int, lines: list[bytes]) -> bool:
    """Whether `marked` of `lines` (GREP_MIN_LINES at least) are nearly all of them."""
    return marked >= GREP_MIN_LINES and marked >= GREP_SHARE * len(lines)


def _grep_pieces(data: bytes, numbered: bool) -> list[tuple[bytes | None, int, bytes]]:
    """(file name, first line, lines without the name) of each run of one file's lines; a line
    in no such form stays, whole, with the file before it (or in a piece of its own, named None,
    before the first file's): nothing is dropped, and line numbers stay those of `data`."""
    pieces: list[tuple[bytes | None, int, list[bytes]]] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        name, text = _grep_line(line, numbered)
        if name is not None and (not pieces or pieces[-1][0] != name):
            pieces.append((name, number, []))
        elif not pieces:
            pieces.append((None, number, []))
        pieces[-1][2].append(text)
    return [(name, first, b"\n".join(lines)) for name, first, lines in pieces if b"".join(lines).strip()]


def _grep_line(line: bytes, numbered: bool) -> tuple[bytes | None, bytes]:
    """(the file a line of grep's output names, or None; the line's own text). `numbered`: grep
    printed line numbers (`-n`: `name:12:text`, context `name-12-text`), else `name:text` and
    `name-text`."""
    if line.rstrip(b"\r") == _GREP_SEPARATOR:
        return None, b""
    for end in _name_ends(line):
        rest = line[end + 1:]
        if numbered:
            number = (_LINE_NUMBER_COLON if line[end:end + 1] == b":" else _LINE_NUMBER_DASH).match(rest)
            if number is None:
                continue
            rest = rest[number.end():]
        return line[:end], rest
    return None, line


def _name_ends(line: bytes):
    """Where a log file's name may end at the start of `line`: before a ':' or a '-'."""
    bound = _NAME_BOUND.search(line, 0, MAX_NAME + 1)
    limit = bound.start() if bound else min(len(line), MAX_NAME)
    for mark in _NAME_MARK.finditer(line, 1, limit + 1):
        if _LOG_NAME.search(line, 0, mark.start()):
            yield mark.start()


def _numbered(lines: list[bytes]) -> bool:
    """Whether grep printed line numbers: after each file's name a number that grows from line
    to line of that file (an srun task label, `0:`, repeats)."""
    last: dict[bytes, int] = {}
    growing = total = 0
    for line in lines:
        end = next((end for end in _name_ends(line) if line[end:end + 1] == b":"), None)
        number = _LINE_NUMBER_COLON.match(line, end + 1) if end is not None else None
        if number is None:
            continue
        total += 1
        value, name = int(number.group(1)), line[:end]
        growing += value > last.get(name, -1)
        last[name] = value
    return total >= GREP_MIN_LINES and growing == total
