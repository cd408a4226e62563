"""Translate a Python `re` signature pattern into the PCRE dialect of Hyperscan (and ripgrep).

The translation is written from Python's own parse tree, so escaping and Python-only syntax
(`{,n}`, `\\Z`, named groups) never leak through. It is a *superset* translation: every line the
Python pattern matches, the translated pattern matches too (the scanner confirms each candidate
line with the Python regex, so extra candidates cost time, never correctness):

- `ascii` dialect: for blocks of pure ASCII text, where byte semantics equal Python's str
  semantics (except `\\s`, which in Python also covers \\x1c-\\x1f: added).
- `bytes` dialect: for UTF-8 blocks with other characters, scanned as bytes: any single
  character class also accepts a run of 1-4 bytes >= 0x80 (one encoded character, or the
  undecodable bytes Python shows as one U+FFFD), word boundaries are dropped, and
  case-insensitive letters accept their Unicode case partners (the Kelvin sign for k...).

Look-arounds are dropped (an assertion only narrows a match); back-references repeat the
group's pattern; conditionals raise `Unsupported`.

Blocks are scanned with each '\\r' read as a space, as the Python regex sees a line (a progress
bar's segments; see compiler.spaced): the translation never needs to accept a '\\r' where the
pattern has a space. (It did once: `[\\x20\\x0d]` at every space cut the patterns' literals short,
and Hyperscan scanned a sixth slower and compiled twice as long.)
"""
from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as C
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

ASCII, BYTES = "ascii", "bytes"
_MULTIBYTE = r"[\x80-\xff]{1,4}"
_MAXREPEAT = C.MAXREPEAT


class Unsupported(Exception):
    """This pattern has no faithful translation; the signature uses the Python fallback."""


class NeverMatches(Unsupported):
    """This pattern cannot match text of this dialect (a non-ASCII word in a pure-ASCII block):
    the database leaves it out, and no fallback looks for it there."""


def _fold_partners() -> dict[str, str]:
    """Non-ASCII characters that Python's case-insensitive matching equates with an ASCII letter."""
    partners: dict[str, str] = {}
    others = "".join(chr(code) for code in range(0x80, 0x10000) if not 0xD800 <= code < 0xE000)
    for letter in "abcdefghijklmnopqrstuvwxyz":
        found = re.findall(f"(?i){letter}", others)
        if found:
            partners[letter] = "".join(found)
    return partners


_PARTNERS: dict[str, str] | None = None


def _partners() -> dict[str, str]:
    global _PARTNERS
    if _PARTNERS is None:
        _PARTNERS = _fold_partners()
    return _PARTNERS


_ASCII_TEXT = "".join(map(chr, range(128)))


def _folds_to_ascii(char: str) -> bool:
    """Whether Python's case-insensitive matching takes `char` for some ASCII character."""
    return re.search("(?i)" + re.escape(char), _ASCII_TEXT) is not None


def _byte_escape(data: bytes) -> str:
    return "".join(chr(b) if chr(b).isalnum() and b < 0x80 else f"\\x{b:02x}" for b in data)


class _Emitter:
    def __init__(self, dialect: str, groups: dict) -> None:
        self.dialect = dialect
        self.groups = groups

    def sequence(self, items, ignorecase: bool) -> str:
        return "".join(self.item(opcode, argument, ignorecase) for opcode, argument in items)

    def _possible(self, alternatives, ignorecase: bool) -> list[str]:
        """The translated alternatives of a choice, without those that cannot match here (a
        non-ASCII word in the ASCII dialect); NeverMatches when none can."""
        translated = []
        for alternative in alternatives:
            try:
                translated.append(self.sequence(alternative, ignorecase))
            except NeverMatches:
                continue
        if not translated:
            raise NeverMatches("no alternative can match")
        return translated

    def literal(self, code: int, ignorecase: bool) -> str:
        char = chr(code)
        if code < 0x80:
            text = char if char.isalnum() else f"\\x{code:02x}"
            if ignorecase and char.isalpha():
                extra = _partners().get(char.lower(), "") if self.dialect == BYTES else ""
                alternatives = [f"[{char.lower()}{char.upper()}]"] + [_byte_escape(p.encode()) for p in extra]
                return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
            return text
        if self.dialect == ASCII:
            if ignorecase and _folds_to_ascii(char):
                raise Unsupported("non-ASCII literal whose case partner is ASCII")  # the Kelvin sign and k
            raise NeverMatches("non-ASCII literal")
        if ignorecase:
            variants = {char, char.lower(), char.upper()} | {c for c in (char.lower(),) if len(c) == 1}
            variants = {v for v in variants if len(v) == 1}
            return "(?:" + "|".join(_byte_escape(v.encode()) for v in sorted(variants)) + ")"
        return _byte_escape(char.encode())

    def char_class(self, items, ignorecase: bool) -> str:
        negate = bool(items) and items[0][0] is C.NEGATE
        parts: list[str] = []
        wide = False  # the Python class may match some non-ASCII character
        for opcode, argument in items[1:] if negate else items:
            if opcode is C.LITERAL:
                if argument >= 0x80:
                    if self.dialect == ASCII and not negate:
                        continue  # never present in an ASCII block
                    wide = True
                    continue
                char = chr(argument)
                parts.append(f"\\x{argument:02x}")
                if ignorecase and char.isalpha():
                    parts.append(f"\\x{ord(char.swapcase()):02x}")
                    wide = wide or char.lower() in _partners()
            elif opcode is C.RANGE:
                low, high = argument
                if low < 0x80:
                    top = min(high, 0x7F)
                    parts.append(f"\\x{low:02x}-\\x{top:02x}")
                    if ignorecase:
                        for code in range(low, top + 1):
                            if chr(code).isalpha():
                                parts.append(f"\\x{ord(chr(code).swapcase()):02x}")
                                wide = wide or chr(code).lower() in _partners()
                if high >= 0x80:
                    wide = True
            elif opcode is C.CATEGORY:
                name = str(argument)
                if name.endswith("NOT_DIGIT") or name.endswith("NOT_WORD") or name.endswith("NOT_SPACE"):
                    if negate:
                        raise Unsupported("negated class of a negated category")
                    parts.append(r"\D" if name.endswith("DIGIT") else r"\W" if name.endswith("WORD") else r"\S")
                    wide = True
                elif name.endswith("DIGIT"):
                    parts.append(r"\d")
                    wide = True
                elif name.endswith("WORD"):
                    parts.append(r"\w")
                    wide = True
                elif name.endswith("SPACE"):
                    parts.append(r"\s\x1c-\x1f")
                    wide = True
                else:
                    raise Unsupported(f"category {name}")
            else:
                raise Unsupported(f"class item {opcode}")
        if negate:
            body = "[^" + "".join(parts) + "]" if parts else r"[\x00-\xff]"
            # a negated class matches every non-ASCII character unless it lists some
            return body if self.dialect == ASCII else f"(?:{body}|{_MULTIBYTE})"
        body = "[" + "".join(parts) + "]" if parts else None
        if self.dialect == BYTES and wide:
            return f"(?:{body}|{_MULTIBYTE})" if body else _MULTIBYTE
        if body is None:
            raise Unsupported("empty class")
        return body

    def item(self, opcode, argument, ignorecase: bool) -> str:
        if opcode is C.LITERAL:
            return self.literal(argument, ignorecase)
        if opcode is C.NOT_LITERAL:
            return self.char_class([(C.NEGATE, None), (C.LITERAL, argument)], ignorecase)
        if opcode is C.ANY:
            return "[^\\n]" if self.dialect == ASCII else f"(?:[^\\n]|{_MULTIBYTE})"
        if opcode is C.IN:
            return self.char_class(argument, ignorecase)
        if opcode is C.BRANCH:
            return "(?:" + "|".join(self._possible(argument[1], ignorecase)) + ")"
        if opcode is C.SUBPATTERN:
            group, add_flags, del_flags, pattern = argument
            inner_case = (ignorecase or bool(add_flags & C.SRE_FLAG_IGNORECASE)) and not del_flags & C.SRE_FLAG_IGNORECASE
            if add_flags & (C.SRE_FLAG_DOTALL | C.SRE_FLAG_MULTILINE | C.SRE_FLAG_VERBOSE):
                if add_flags & C.SRE_FLAG_DOTALL:
                    raise Unsupported("scoped DOTALL")
            return "(?:" + self.sequence(pattern, inner_case) + ")"
        if opcode in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            low, high, pattern = argument
            try:
                inner = self.sequence(pattern, ignorecase)
            except NeverMatches:
                if low:
                    raise
                return ""  # an optional part that cannot be here: the rest matches without it
            if not inner:
                return ""
            if high is _MAXREPEAT or high == _MAXREPEAT:
                quantifier = "*" if low == 0 else "+" if low == 1 else f"{{{low},}}"
            elif low == high:
                quantifier = "" if low == 1 else f"{{{low}}}"
            else:
                quantifier = "?" if (low, high) == (0, 1) else f"{{{low},{high}}}"
            return f"(?:{inner}){quantifier}"
        if opcode is getattr(C, "ATOMIC_GROUP", None):
            return "(?:" + self.sequence(argument, ignorecase) + ")"
        if opcode is C.AT:
            name = str(argument)
            if name.endswith("BEGINNING") or name.endswith("BEGINNING_LINE") or name.endswith("BEGINNING_STRING"):
                return "^"
            if name.endswith("END") or name.endswith("END_LINE") or name.endswith("END_STRING"):
                return "$"
            if name.endswith("NON_BOUNDARY"):
                return r"\B" if self.dialect == ASCII else ""
            if name.endswith("BOUNDARY"):
                return r"\b" if self.dialect == ASCII else ""
            raise Unsupported(f"anchor {name}")
        if opcode in (C.ASSERT, C.ASSERT_NOT):
            return ""  # dropping an assertion only widens the match
        if opcode is C.GROUPREF:
            if argument not in self.groups:
                raise Unsupported("back-reference")
            return "(?:" + self.sequence(self.groups[argument], ignorecase) + ")"
        raise Unsupported(f"construct {opcode}")


def _collect_groups(items, groups: dict) -> None:
    for opcode, argument in items:
        if opcode is C.SUBPATTERN:
            if argument[0] is not None:
                groups[argument[0]] = argument[3]
            _collect_groups(argument[3], groups)
        elif opcode is C.BRANCH:
            for alternative in argument[1]:
                _collect_groups(alternative, groups)
        elif opcode in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            _collect_groups(argument[2], groups)


def _trim_tail(items: list) -> list:
    """Drop what a match need not go on to: a trailing optional part, a trailing repeat beyond its
    minimum. Existence of a match is unchanged, and Hyperscan reports far fewer match ends."""
    items = list(items)
    while items:
        opcode, argument = items[-1]
        if opcode in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            low, _high, pattern = argument
            if low == 0:
                items.pop()
                continue
            items[-1] = (C.MAX_REPEAT, (low, low, pattern))
            break
        if opcode is C.AT and str(argument).endswith(("END", "END_LINE", "END_STRING")):
            break
        if opcode is C.SUBPATTERN and argument[1] == 0 and argument[2] == 0:
            inner = _trim_tail(argument[3])
            items[-1] = (C.SUBPATTERN, (argument[0], 0, 0, inner))
            if not inner:
                items.pop()
                continue
        if opcode is C.BRANCH:  # `(?:: (?P<msg>.*)|$)`: each alternative's tail
            alternatives = [_trim_tail(list(alternative)) for alternative in argument[1]]
            if not all(alternatives):  # one may match nothing: the whole choice may
                items.pop()
                continue
            items[-1] = (C.BRANCH, (argument[0], alternatives))
        break
    return items


def translate(pattern: str, dialect: str) -> tuple[str, bool]:
    """(PCRE pattern, case-insensitive) for `dialect`; raises Unsupported."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        raise Unsupported(f"invalid pattern: {exc}") from None
    flags = parsed.state.flags if hasattr(parsed, "state") else parsed.pattern.flags
    if flags & (C.SRE_FLAG_DOTALL | C.SRE_FLAG_MULTILINE):
        raise Unsupported("global DOTALL or MULTILINE flag")
    ignorecase = bool(flags & C.SRE_FLAG_IGNORECASE)
    groups: dict = {}
    _collect_groups(parsed, groups)
    items = _trim_tail(list(parsed))
    text = _Emitter(dialect, groups).sequence(items, ignorecase)
    if not text:
        raise Unsupported("matches every line")
    return text, ignorecase


def can_match_empty(pattern: str) -> bool:
    try:
        return re.compile(pattern).search("") is not None
    except re.error:
        return False
