"""The fast engine (Hyperscan) and the Python fallback give identical results: on every
knowledge-base example and near-miss (alone, behind launcher prefixes, after progress-bar
segments, with carriage returns for spaces, next to non-ASCII text), and on generated corpora. Both are also checked against the
definition: a signature hits a line exactly when its Python regex matches it."""
from __future__ import annotations

import re

import pytest

from firstfault.ingest.sources import InputFile
from firstfault.match.conditions import holds
from firstfault.match.scanner import Scanner

hyperscan = pytest.importorskip("hyperscan")

VARIANTS = (
    "{line}",
    "  17: [rank17]: {line}",
    "[default3]:[rank11]:{line}",
    "gpu-node-007: {line}",
    "Epoch 3:  45%|████▌     | 4500/10000 [12:34<15:20]\r{line}",
    "é → {line} ✓",
    "\u212a\u017f\u0131 {line}",
)


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """One database cache for this module's tests, empty at its start: every database here is
    compiled in this run from these signatures (never read from a user's cache), and once, not
    once per test (a compile takes seconds on a busy machine)."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield cache


def example_lines(signatures) -> list[str]:
    lines = []
    for signature in signatures:
        for text in signature.examples + signature.near_misses:
            for part in text.split("\n"):
                for variant in VARIANTS:
                    lines.append(variant.format(line=part))
                # every space a progress bar's carriage return: read as a space, scanned as read
                lines.append(part.replace(" ", "\r"))
    return lines


def hits_of(scan):
    return [(hit.line, hit.signature.key, tuple(sorted(hit.captures.items())), hit.text, hit.time, hit.prefix)
            for hit in scan.hits]


def census_of(scan):
    return (scan.global_ranks, scan.local_ranks, dict(scan.local_to_global), scan.nccl_hosts,
            scan.first_time, scan.last_time, scan.stats.lines, scan.stats.bytes, scan.stats.invalid_utf8,
            scan.stats.long_lines)


def scan_both(signatures, item, private_cache):
    return Scanner(signatures, "hyperscan").scan(item), Scanner(signatures, "python").scan(item)


def test_every_example_line_same_hits_as_python_regex(signatures, private_cache):
    lines = example_lines(signatures)
    content = "\n".join(lines).encode("utf-8")
    item = InputFile(display="examples.log", relative="examples.log", content=content)
    fast, fallback = scan_both(signatures, item, private_cache)
    assert hits_of(fast) == hits_of(fallback)
    assert census_of(fast) == census_of(fallback)
    # and both equal the definition, line by line: the regex, then the signature's condition
    expected = set()
    compiled = [(signature.key, re.compile(signature.pattern), signature.condition) for signature in signatures]
    for number, line in enumerate(lines, start=1):
        searched = line.replace("\r", " ")
        for key, regex, condition in compiled:
            found = regex.search(searched)
            if found and (not condition or holds(condition, found.groupdict())):
                expected.add((number, key))
    once = {signature.key for signature in signatures if signature.first_only}  # one hit per file: the first
    firsts = {key: min(number for number, other in expected if other == key) for key in once
              if any(other == key for _, other in expected)}
    expected = {(number, key) for number, key in expected if key not in once or firsts[key] == number}
    found = {(hit.line, hit.signature.key) for hit in fast.hits}
    assert found == expected


def test_examples_hit_their_signature_with_the_fast_engine(signatures, private_cache):
    scanner = Scanner(signatures, "hyperscan")
    for signature in signatures:
        for example in signature.examples:
            if "\n" in example:
                continue
            item = InputFile(display="x", relative="x", content=example.encode("utf-8"))
            keys = {hit.signature.key for hit in scanner.scan(item).hits}
            assert signature.key in keys, (signature.key, example)


def test_generated_corpora_identical(signatures, single_corpus, ranks_corpus, private_cache):
    for folder in (single_corpus, ranks_corpus):
        for path in sorted(folder.glob("*.log")) + sorted(folder.glob("*.out")):
            item = InputFile(display=str(path), relative=path.name, path=path)
            fast, fallback = scan_both(signatures, item, private_cache)
            assert hits_of(fast) == hits_of(fallback), path
            assert census_of(fast) == census_of(fallback), path
            assert fast.hits or "rank" in path.name


def test_invalid_utf8_and_long_lines_identical(signatures, private_cache):
    long_line = "x" * 70000 + " CUDA error: an illegal memory access was encountered"
    content = b"\n".join([
        b"ok line",
        b"bad \xc3( byte RuntimeError: CUDA error: an illegal memory access was encountered",
        long_line.encode(),
        b"\xe2\x96\x88\xe2\x96\x88 NCCL WARN Cuda failure 'an illegal memory access was encountered'",
        b"stray \x80 continuation Traceback (most recent call last):",
    ])
    item = InputFile(display="bad.log", relative="bad.log", content=content)
    fast, fallback = scan_both(signatures, item, private_cache)
    assert hits_of(fast) == hits_of(fallback)
    assert census_of(fast) == census_of(fallback)
    assert fast.stats.invalid_utf8 and fast.stats.long_lines == 1


@pytest.mark.parametrize("data, valid", [
    (b"plain ascii", True), ("caf\u00e9 \u2588 \U0001f600".encode(), True), (b"\xc3(", False), (b"\xc3", False),
    (b"a\x80", False), (b"\xe2\x96\x88\x88", False), (b"\xed\xa0\x80", False), (b"\xc0\xaf", False),
    (b"\xf4\x90\x80\x80", False), (b"\xe0\x80\xaf", False), (b"\xf0\x9f\x98", False), (b"x\xf0\x9f\x98\x80y", True),
])
def test_utf8_check_agrees_with_python(signatures, private_cache, data, valid):
    from firstfault.match.hyperscan_engine import HyperscanEngine

    engine = HyperscanEngine([signature.pattern for signature in signatures])
    try:
        data.decode("utf-8")
        python_valid = True
    except UnicodeDecodeError:
        python_valid = False
    assert python_valid == valid
    assert engine.scan(data)[2] == valid


def test_signatures_left_to_the_fallback_are_reported(signatures, private_cache):
    """Signatures the fast engine cannot take (their candidates come from the literal prefilter).
    Today there are none; when a new pattern lands here, this names it."""
    from firstfault.match.hyperscan_engine import HyperscanEngine

    engine = HyperscanEngine([signature.pattern for signature in signatures])
    left = sorted(signatures[index].key for index in engine.fallback)
    assert left == [], f"signatures without a Hyperscan translation (slower, still correct): {left}"
