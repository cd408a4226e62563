"""The engine's own context signatures (match/context.py, stack.py) behave like the knowledge
base's: every example line is found through the whole scan path, no near-miss is."""
from __future__ import annotations

import pytest

from firstfault.ingest.sources import in_memory_inputs
from firstfault.match.context import CONTEXT_SIGNATURES
from firstfault.match.scanner import Scanner


def _hit(signature, line: str) -> bool:
    text = "2026-03-01 10:00:00,000 INFO step 1\n" + line + "\n"
    scan = Scanner([signature]).scan(in_memory_inputs([("case.log", text)])[0])
    return any(hit.line == 2 for hit in scan.hits)


@pytest.mark.parametrize("signature", CONTEXT_SIGNATURES, ids=lambda s: s.name)
def test_context_signature_examples_and_near_misses(signature):
    assert signature.examples, f"{signature.name} has no example lines"
    assert signature.near_misses, f"{signature.name} has no near-misses"
    missed = [line for line in signature.examples if not _hit(signature, line)]
    caught = [line for line in signature.near_misses if _hit(signature, line)]
    assert not missed and not caught, (missed, caught)


def test_context_signature_names_are_unique():
    names = [signature.name for signature in CONTEXT_SIGNATURES]
    assert len(names) == len(set(names))


def test_a_context_prefilter_is_wider_than_its_pattern():
    # the fast engine looks for the prefilter; one that missed an example would lose those lines
    from firstfault.match.compiler import prefilter_problems

    with_prefilter = [signature for signature in CONTEXT_SIGNATURES if signature.prefilter]
    assert with_prefilter  # error-statement's glog alternative (see match/context.py)
    assert {signature.name: prefilter_problems(signature) for signature in with_prefilter} == {
        signature.name: [] for signature in with_prefilter}
