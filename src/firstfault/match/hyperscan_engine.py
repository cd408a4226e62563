"""The fast engine: every signature compiled once into Hyperscan databases, scanned block-wise.

Two block-mode databases, each a superset translation of the Python patterns (translate.py):
one for pure-ASCII blocks (exact byte semantics), one for blocks with other UTF-8 characters.
A scan returns, for each line with a match end in it, the signatures that may match there; the
scanner confirms those with Python's `re` on that line only. Signatures that cannot be
translated or compiled are listed in `fallback` and found by the Python prefilter instead.

Compiled databases are serialized under the user cache dir, keyed by a hash of the patterns and
the Hyperscan version: compiling ~300 signatures takes about a second, loading ~1 ms.
"""
from __future__ import annotations

import hashlib

import hyperscan

from ..ingest.rendered import HEADER_HINT
from ..kb.cache import cache_dir, write_atomic

ASCII, BYTES = "ascii", "bytes"  # the dialects of translate.py (imported only to compile)

CACHE_VERSION = "10"  # bump when translate.py changes what a pattern compiles to
_FLAGS = hyperscan.HS_FLAG_MULTILINE
# Any byte sequence Python's strict UTF-8 decoder rejects (found in the same pass as the
# signatures, so checking a block costs nothing extra): bytes never valid, a lead byte without
# its continuation bytes, over-long / surrogate / too-large forms, a stray continuation byte.
_NOT_CONTINUATION = r"(?:[\x00-\x7f\xc0-\xff]|\z)"
INVALID_UTF8 = (
    r"[\xc0\xc1\xf5-\xff]"
    rf"|[\xc2-\xf4]{_NOT_CONTINUATION}"
    rf"|[\xe0-\xf4][\x80-\xbf]{_NOT_CONTINUATION}"
    rf"|[\xf0-\xf4][\x80-\xbf]{{2}}{_NOT_CONTINUATION}"
    r"|\xe0[\x80-\x9f]|\xed[\xa0-\xbf]|\xf0[\x80-\x8f]|\xf4[\x90-\xbf]"
    r"|(?:\A|[\x00-\x7f])[\x80-\xbf]"
    r"|[\xc2-\xdf][\x80-\xbf]{2}|[\xe0-\xef][\x80-\xbf]{3}|[\xf0-\xf4][\x80-\xbf]{4}"
)


def _compile(expressions: list[bytes], ids: list[int], extra: bytes | None = None, census: bool = False,
             once: frozenset = frozenset()) -> hyperscan.Database:
    single = _FLAGS | hyperscan.HS_FLAG_SINGLEMATCH
    flags = [single if index in once else _FLAGS for index in ids]  # first_only: one report per block
    if extra is not None:
        expressions, ids = expressions + [extra], ids + [INVALID_ID]
        flags = flags + [single]
    if census:
        expressions = expressions + [pattern for _, pattern in CENSUS_PATTERNS]
        ids = ids + [identifier for identifier, _ in CENSUS_PATTERNS]
        flags = flags + [single] * len(CENSUS_PATTERNS)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(ids), flags=flags)
    return database


INVALID_ID = 1 << 30  # the id of INVALID_UTF8 in the bytes database
# Census helpers, reported at most once per block each: whether a launcher prefix `[x3]:` may
# occur, which local ranks L (0-31) occur in `[L] NCCL` lines, and whether a traceback as rich or
# IPython prints it may occur (ingest/rendered.py).
CENSUS_BASE = 1 << 29
BRACKET_ID = CENSUS_BASE + 100
RENDERED_ID = CENSUS_BASE + 101
NCCL_LOCALS = 32
CENSUS_PATTERNS = ([(BRACKET_ID, rb"[0-9]\]:"), (RENDERED_ID, HEADER_HINT)]
                   + [(CENSUS_BASE + local, rb"\[%d\] NCCL " % local) for local in range(NCCL_LOCALS)])


def _compilable(pattern: bytes) -> bool:
    try:
        _compile([pattern], [0])
    except hyperscan.error:
        return False
    return True


def _build(patterns: list[str], dialect: str, once: frozenset = frozenset()) -> tuple[hyperscan.Database | None, list[int]]:
    """The database of every translatable pattern, and the indices left to the fallback."""
    from .translate import NeverMatches, Unsupported, can_match_empty, translate

    expressions, ids, left_out = [], [], []
    for index, pattern in enumerate(patterns):
        try:
            text, _ignorecase = translate(pattern, dialect)
        except NeverMatches:
            continue  # it cannot match a block of this dialect: nothing looks for it there
        except Unsupported:
            left_out.append(index)
            continue
        if can_match_empty(pattern):
            left_out.append(index)
            continue
        expressions.append(text.encode("latin-1"))
        ids.append(index)
    extra = INVALID_UTF8.encode("latin-1") if dialect == BYTES else None
    try:
        return _compile(expressions, ids, extra, census=True, once=once), left_out
    except hyperscan.error:
        # find the culprits one by one (only on a cache miss), then compile the rest
        good = [(expression, index) for expression, index in zip(expressions, ids) if _compilable(expression)]
        left_out.extend(index for index in ids if index not in {i for _, i in good})
        return _compile([e for e, _ in good], [i for _, i in good], extra, census=True, once=once), sorted(left_out)


def _cache_key(patterns: list[str], once: frozenset = frozenset()) -> str:
    digest = hashlib.sha256()
    digest.update(f"{CACHE_VERSION}|{hyperscan.__version__}|{sorted(once)}|".encode())
    for identifier, pattern in CENSUS_PATTERNS:  # (a census pattern changed is a new database too)
        digest.update(b"%d=" % identifier + pattern + b"\0")
    for pattern in patterns:
        digest.update(pattern.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:24]


def _pack(database: hyperscan.Database | None, left_out: list[int]) -> bytes:
    head = (",".join(map(str, left_out)) + "\n").encode()
    return head + (hyperscan.dumpb(database) if database is not None else b"")


def _unpack(data: bytes) -> tuple[hyperscan.Database | None, list[int]]:
    head, _, body = data.partition(b"\n")
    left_out = [int(index) for index in head.decode().split(",") if index]
    if not body:
        return None, left_out
    database = hyperscan.loadb(body, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)
    return database, left_out


def load_databases(patterns: list[str], use_cache: bool = True, once: frozenset = frozenset()) -> dict:
    """{dialect: (database or None, indices left out)}, from the cache when it has them. `once`:
    indices of first_only signatures, reported at most once per block."""
    key = _cache_key(patterns, once)
    result = {}
    for dialect in (ASCII, BYTES):
        path = cache_dir() / f"hs-{dialect}-{key}.db"
        if use_cache:
            try:
                result[dialect] = _unpack(path.read_bytes())
                continue
            except (OSError, ValueError, hyperscan.error):
                pass
        database, left_out = _build(patterns, dialect, once)
        result[dialect] = (database, left_out)
        if use_cache:
            write_atomic(path, _pack(database, left_out))
    return result


class HyperscanEngine:
    """Candidate lines of a block: {line start offset: set of signature indices}."""

    def __init__(self, patterns: list[str], use_cache: bool = True, once: frozenset = frozenset()) -> None:
        databases = load_databases(patterns, use_cache, once)
        self.ascii_db, ascii_left = databases[ASCII]
        self.bytes_db, bytes_left = databases[BYTES]
        self.fallback_ascii = frozenset(ascii_left)
        self.fallback_bytes = frozenset(bytes_left)

    @property
    def fallback(self) -> frozenset:
        """Indices of signatures the fast engine does not cover in some blocks."""
        return self.fallback_ascii | self.fallback_bytes

    def scan(self, data: bytes) -> tuple[dict[int, set[int]], frozenset, bool, tuple[bool, set]]:
        """Candidate lines of `data`, the signature indices this scan did not cover, whether
        `data` is valid UTF-8, and the census hints: (a `[x3]:` prefix may occur, the local
        ranks L of `[L] NCCL` that occur, a rendered traceback may occur)."""
        is_ascii = data.isascii()
        database = self.ascii_db if is_ascii else self.bytes_db
        left_out = self.fallback_ascii if is_ascii else self.fallback_bytes
        ends: list[tuple[int, int]] = []
        if database is not None and data:
            append = ends.append

            def on_match(index, _start, end, _flags, _context):
                append((end, index))

            database.scan(data, match_event_handler=on_match)
        lines: dict[int, set[int]] = {}
        valid = True
        nccl_locals: set = set()
        bracket = rendered = False
        last_line_start, last_end = -1, -1
        for end, index in sorted(ends):
            if index >= CENSUS_BASE:
                if index == INVALID_ID:
                    valid = False
                elif index == BRACKET_ID:
                    bracket = True
                elif index == RENDERED_ID:
                    rendered = True
                else:
                    nccl_locals.add(index - CENSUS_BASE)
                continue
            if end != last_end:
                # the line holding the match's last character
                last_line_start = data.rfind(b"\n", 0, max(end - 1, 0)) + 1 if end > 0 else 0
                last_end = end
            lines.setdefault(last_line_start, set()).add(index)
        return lines, left_out, valid, (bracket, nccl_locals, rendered)


class AnyOf:
    """Whether some bytes hold a match of any of a few byte patterns, in one pass at C speed: for
    cheap tests run on every input (which inputs may be dumps), where one `re` search per pattern
    is the cost. The patterns must mean to Hyperscan what they mean to `re` (bytes, no flags);
    `None` from `load` when they do not compile, and the caller searches with `re`."""

    def __init__(self, database: hyperscan.Database) -> None:
        self._database = database

    @classmethod
    def load(cls, patterns: list[bytes]) -> "AnyOf | None":
        digest = hashlib.sha256(f"any|{CACHE_VERSION}|{hyperscan.__version__}|".encode())
        for pattern in patterns:
            digest.update(pattern + b"\0")
        path = cache_dir() / f"hs-any-{digest.hexdigest()[:24]}.db"
        try:
            database = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        except (OSError, ValueError, hyperscan.error):
            database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            try:
                database.compile(expressions=patterns, ids=list(range(len(patterns))), elements=len(patterns),
                                 flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(patterns))
            except hyperscan.error:
                return None
            write_atomic(path, hyperscan.dumpb(database))
        database.scratch = hyperscan.Scratch(database)
        return cls(database)

    def search(self, data: bytes) -> bool:
        try:
            self._database.scan(data, match_event_handler=_stop)
        except hyperscan.ScanTerminated:
            return True
        return False


def _stop(*_match) -> bool:
    return True  # the first match answers: stop the scan
