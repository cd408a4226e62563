"""Compile the knowledge base's signatures once into a Matcher.

A Matcher finds the *candidate* lines of a block (lines on which some signature may match, with
the signatures that may) and confirms each candidate with the signature's Python regex on that
line alone. Two engines find candidates, and give identical results because both return a
superset of the true matches and the same Python confirmation decides:

- `hyperscan` (the `fast` extra): all signatures in one multi-pattern database, linear time
  (a signature with a `prefilter` is looked for by that wider pattern: a few cost the database a
  quarter of its time otherwise, see `Signature.prefilter`);
- `python`: a literal prefilter (every signature's required literals, as one trie-shaped regex)
  plus, for the few signatures without a usable literal, their translated regex run over the
  block.

A signature hits a line when its regex matches the line as read and as masked (both with '\\r'
read as a space); captures come from the masked line. Blocks are bytes as read (UTF-8 lines
joined by '\\n'): both engines look for candidates in the block with each '\\r' replaced by a
space (`spaced`), as `confirm` reads a line; candidates are byte offsets of line starts.
"""
from __future__ import annotations

import os
import re
from functools import cached_property

from ..ingest.attribution import is_placeholder_host
from ..model import Signature
from .conditions import holds
from .literals import is_case_insensitive, required_literal, required_literals

ENGINES = ("auto", "hyperscan", "python")
ENGINE_VARIABLE = "FIRSTFAULT_ENGINE"  # force an engine: hyperscan | python


class CompiledSignature:
    """A signature with its regex and required literals, each worked out on first use (a run
    with the fast engine compiles only the regexes of signatures that have candidates)."""

    __slots__ = ("signature", "_regex", "_literals", "_case_insensitive")

    def __init__(self, signature: Signature) -> None:
        self.signature = signature
        self._regex = self._literals = self._case_insensitive = None

    @property
    def regex(self) -> re.Pattern:
        if self._regex is None:
            self._regex = re.compile(self.signature.pattern)
        return self._regex

    @property
    def case_insensitive(self) -> bool:
        if self._case_insensitive is None:
            self._case_insensitive = is_case_insensitive(self.signature.pattern)
        return self._case_insensitive

    @property
    def literals(self) -> tuple[str, ...]:
        if self._literals is None:
            self._literals = required_literals(self.signature.pattern)
        return self._literals

    @property
    def literal(self) -> str:
        return required_literal(self.signature.pattern)


def prefilter_problems(signature: Signature) -> list[str]:
    """What is wrong with a signature's prefilter: it must compile, and match every example (a
    prefilter narrower than its pattern would make the fast engine miss lines)."""
    if not signature.prefilter:
        return []
    try:
        wider = re.compile(signature.prefilter)
    except re.error as exc:
        return [f"invalid prefilter: {exc}"]
    return [f"prefilter does not match example: {example!r}" for example in signature.examples
            if not wider.search(example)]


# Measured with bench/make_corpus.py (an 8 MB `single` corpus, scan only, best of two, 2-core
# machine): Hyperscan 223 MB/s, the pure-Python prefilter 1.07 MB/s.
PYTHON_SLOWDOWN = 200


def slow_matcher_warning() -> str | None:
    """A one-line warning when the pure-Python matcher runs because Hyperscan is missing."""
    if os.environ.get(ENGINE_VARIABLE) == "python" or hyperscan_available():
        return None  # asked for, or not in use
    return (f"firstfault: warning: Hyperscan is not installed (no wheel for this platform?), so the pure-Python "
            f"matcher runs: about {PYTHON_SLOWDOWN}x slower on large logs (pip install hyperscan)")


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


class Matcher:
    """Candidate lines of a block, then each candidate confirmed by its signature's regex."""

    def __init__(self, signatures: list[Signature], engine: str | None = None) -> None:
        engine = engine or os.environ.get(ENGINE_VARIABLE, "auto")
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
        self.compiled = [CompiledSignature(signature) for signature in signatures]
        self.fast = None
        if engine == "hyperscan" or (engine == "auto" and hyperscan_available()):
            from .hyperscan_engine import HyperscanEngine

            once = frozenset(index for index, item in enumerate(self.compiled) if item.signature.first_only)
            self.fast = HyperscanEngine([item.signature.prefilter or item.signature.pattern for item in self.compiled],
                                        once=once)
        self.engine = "hyperscan" if self.fast is not None else "python"
        self._python_for: dict[frozenset, _PythonPrefilter] = {}
        self._literal_owner: _PythonPrefilter | None = None

    @cached_property
    def exception_modules(self) -> dict[str, str]:
        """Exception classes the signatures name with their module (`torch._dynamo.exc.UserError`):
        class name -> module, for the names only one module gives. rich and IPython print a class
        without its module; ingest/rendered.py puts it back where the frames show that package."""
        found: dict[str, set[str]] = {}
        for item in self.compiled:
            for module, names in _QUALIFIED_CLASSES.findall(item.signature.pattern):
                for name in filter(None, names.split("|")):
                    found.setdefault(name, set()).add(module.replace("\\.", ".").rstrip("."))
        return {name: modules.pop() for name, modules in found.items() if len(modules) == 1}

    # -- block interface ------------------------------------------------------------------

    def candidate_lines(self, data: bytes) -> tuple[dict[int, set[int]], bool | None, tuple | None]:
        """{line start offset: indices of the signatures that may match there}; whether `data`
        is valid UTF-8 (None: not checked by this engine); census hints (None: not given by
        this engine; see HyperscanEngine.scan)."""
        data = spaced(data)  # as the Python regex reads a line (translate.py never looks for a '\r')
        if self.fast is not None:
            lines, left_out, valid, census = self.fast.scan(data)
            if left_out:
                self._python(left_out).add_candidates(data, lines)
            return lines, valid, census
        lines: dict[int, set[int]] = {}
        self._python(frozenset(range(len(self.compiled)))).add_candidates(data, lines)
        return lines, None, None

    def _python(self, indices: frozenset) -> _PythonPrefilter:
        prefilter = self._python_for.get(indices)
        if prefilter is None:
            prefilter = self._python_for[indices] = _PythonPrefilter([(i, self.compiled[i]) for i in sorted(indices)])
        self._literal_owner = prefilter
        return prefilter

    def confirm(self, raw_line: str, masked_line: str, indices) -> list[tuple[CompiledSignature, dict]]:
        """The candidates that match both the line as read and as masked; captures from the masked."""
        hits = []
        if LITERAL_CHECK in indices:
            indices = (set(indices) - {LITERAL_CHECK}) | self._literal_owner.literal_candidates(raw_line)
        for index in sorted(indices):
            item = self.compiled[index]
            if raw_line is not masked_line and not item.regex.search(raw_line):
                continue
            found = item.regex.search(masked_line)
            if found:
                captures = {key: value for key, value in found.groupdict().items() if value is not None}
                if item.signature.condition and not holds(item.signature.condition, captures):
                    continue
                if item.signature.role == "context" and is_placeholder_host(captures.get("host")):
                    continue  # a line that names a host by a redaction's placeholder names none
                hits.append((item, captures))
        return hits

    # -- line interface, for callers that hold one line ----------------------------------

    def match_line(self, line: str) -> list[tuple[CompiledSignature, dict]]:
        """Every signature that matches this line, with its captured values."""
        return self.confirm(line, line, range(len(self.compiled)))


LITERAL_CHECK = -1  # candidate marker: check the literal signatures on this line


# `torch\._dynamo\.exc\.(?P<exc_type>Unsupported|UserError)`, `triton\.compiler\.errors\.CompilationError`
# in a signature's pattern: the module, and the class names after it
_QUALIFIED_CLASSES = re.compile(r"((?:[a-z_][a-z0-9_]*\\\.){2,})(?:\(\?P<\w+>)?\(?((?:[A-Z][A-Za-z0-9]*\|?)+)")


def spaced(data: bytes) -> bytes:
    """The block with each '\\r' read as a space, as `confirm` reads a line (same length: offsets
    stay line starts; a copy only for the blocks that have one, a tenth of a millisecond per MiB)."""
    return data.replace(b"\r", b" ") if b"\r" in data else data


class _PythonPrefilter:
    """The fallback engine for a set of signatures, over bytes blocks. Candidate lines are the
    lines holding any required literal (the line then gets LITERAL_CHECK: which literals it
    holds is decided per line), plus, for signatures without a usable literal, every line their
    translated regex touches when run over the whole block."""

    def __init__(self, items: list[tuple[int, CompiledSignature]]) -> None:
        from .translate import BYTES, Unsupported, translate

        exact: set[bytes] = set()
        folded: set[bytes] = set()
        self.literal_items: list[tuple[int, CompiledSignature]] = []
        self.scanned: list[tuple[int, re.Pattern | None]] = []
        for index, item in items:
            if item.literals:
                for literal in item.literals:
                    if item.case_insensitive:
                        folded.add(literal.lower().encode("utf-8"))
                    else:
                        exact.add(literal.encode("utf-8"))
                self.literal_items.append((index, item))
                continue
            try:
                text, _ = translate(item.signature.pattern, BYTES)
                regex = re.compile(text.encode("latin-1"), re.MULTILINE)
            except (Unsupported, re.error):
                regex = None  # every line is a candidate
            self.scanned.append((index, regex))
        self.exact_literals = [(literal, index) for index, item in self.literal_items if not item.case_insensitive
                               for literal in item.literals]
        self.folded_literals = [(literal.lower().translate(_fold_table()), index) for index, item in self.literal_items
                                if item.case_insensitive for literal in item.literals]
        self.prefilters = [re.compile(_trie_pattern(exact))] if exact else []
        if folded:
            self.prefilters.append(re.compile(_trie_pattern(folded), re.IGNORECASE))
        # bytes IGNORECASE folds ASCII only: lines holding a Unicode case partner of an ASCII
        # letter (the Kelvin sign...) are checked line by line
        self.partner_bytes = sorted({p.encode("utf-8") for ps in _partners_of(folded) for p in ps})

    def add_candidates(self, data: bytes, lines: dict) -> None:
        rfind, find = data.rfind, data.find
        for prefilter in self.prefilters:
            position = 0
            while True:
                found = prefilter.search(data, position)
                if found is None:
                    break
                start = rfind(b"\n", 0, found.start()) + 1
                lines.setdefault(start, set()).add(LITERAL_CHECK)
                position = find(b"\n", found.start()) + 1  # on to the next line
                if position == 0:
                    break
        if not data.isascii():
            for partner in self.partner_bytes:
                position = find(partner)
                while position >= 0:
                    start = rfind(b"\n", 0, position) + 1
                    lines.setdefault(start, set()).add(LITERAL_CHECK)
                    position = find(partner, position + 1)
        for index, regex in self.scanned:
            if regex is None:
                for start in [0] + [i + 1 for i in _newlines(data)]:
                    lines.setdefault(start, set()).add(index)
                continue
            for found in regex.finditer(data):
                start = rfind(b"\n", 0, found.start()) + 1
                end = max(found.end(), found.start() + 1)
                while start < end:  # every line the match touches
                    lines.setdefault(start, set()).add(index)
                    newline = find(b"\n", start, end)
                    if newline < 0:
                        break
                    start = newline + 1

    def literal_candidates(self, line: str) -> set[int]:
        """The literal signatures whose literals this line holds. Case-insensitive literals are
        looked for in the line lower-cased with the Unicode case partners of ASCII letters
        mapped to them: a superset of what Python's case-insensitive matching accepts."""
        found = {index for literal, index in self.exact_literals if literal in line}
        if self.folded_literals:
            folded = line.lower().translate(_fold_table())
            found.update(index for literal, index in self.folded_literals if literal in folded)
        return found


_FOLD_TABLE: dict | None = None


def _fold_table() -> dict:
    global _FOLD_TABLE
    if _FOLD_TABLE is None:
        from .translate import _partners

        _FOLD_TABLE = {ord(partner): letter for letter, partners in _partners().items() for partner in partners}
    return _FOLD_TABLE


def _partners_of(literals) -> list[str]:
    from .translate import _partners

    letters = {chr(byte) for literal in literals for byte in literal if chr(byte).isalpha() and byte < 0x80}
    return [_partners()[letter] for letter in sorted(letters) if letter in _partners()]


def _trie_pattern(literals: set[bytes]) -> bytes:
    """One regex for many literals, factored as a trie: Python's engine then tests one byte per
    branch instead of every literal at every position."""
    trie: dict = {}
    for literal in literals:
        node = trie
        for byte in literal:
            node = node.setdefault(byte, {})
        node[None] = {}

    def emit(node: dict) -> bytes:
        ends = None in node
        branches = [re.escape(bytes([byte])) + emit(child) for byte, child in sorted((k, v) for k, v in node.items() if k is not None)]
        if not branches:
            return b""
        body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
        return b"(?:" + body + b")?" if ends else body

    return emit(trie)


def _newlines(data: bytes):
    position = data.find(b"\n")
    while position >= 0:
        yield position
        position = data.find(b"\n", position + 1)
