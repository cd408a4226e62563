"""The shipped knowledge base is valid, and every signature example behaves through the engine."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.kb.classes import core_classes
from firstfault.ingest.sources import in_memory_inputs
from firstfault.match.scanner import Scanner

from .conftest import REPO, run_cli

KB = load_knowledge_base()
SIGNATURES = KB.signatures
CORE_IDS = list(core_classes())


def test_kb_check_passes():
    result = run_cli("kb", "check")
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert result.stdout.decode().startswith("ok:")


def test_every_core_class_has_an_entry_and_there_are_80():
    assert len(KB) >= 80
    missing = [core for core in CORE_IDS if core not in KB]
    assert not missing


@pytest.mark.parametrize("signature", SIGNATURES, ids=lambda s: s.key)
def test_examples_match_and_near_misses_do_not_through_the_scanner(signature):
    """Through the whole scan path (prefilter included), each example line is found where it is."""
    lines = ["2026-03-01 10:00:00,000 INFO step 1", *signature.examples, *signature.near_misses]
    scan = Scanner([signature]).scan(in_memory_inputs([("case.log", "\n".join(lines) + "\n")])[0])
    hit_lines = {hit.line for hit in scan.hits}
    example_lines = set(range(2, 2 + len(signature.examples)))
    assert hit_lines == example_lines, (sorted(hit_lines), signature.examples, signature.near_misses)


def test_eval_reports_misses_and_exit_code(tmp_path: Path):
    case = tmp_path / "wrong-label"
    (case / "logs").mkdir(parents=True)
    (case / "logs" / "rank1.log").write_text("RuntimeError: CUDA error: device-side assert triggered\n")
    (case / "case.yaml").write_text("id: wrong-label\nexpect:\n  class: cuda-oom\n  initiating_rank: 1\n")
    result = run_cli("eval", str(tmp_path))
    assert result.returncode == 1
    output = result.stdout.decode()
    assert "MISS wrong-label: expected cuda-oom (rank 1), got cuda-device-side-assert (rank 1)" in output
    assert "class accuracy: 0.0%" in output


def test_every_entry_is_a_core_class_or_names_one():
    """What a report calls the failure class is always a core class id: specialised entries
    (grad-norm-nonfinite) name the core class they belong to (loss-nan)."""
    core = set(CORE_IDS)
    for entry in KB.entries:
        named = entry.get("core_class")
        if core and entry.id not in core:
            assert named in core, f"{entry.id}: core_class {named!r} is not a core class"
        if named:
            assert all(signature.core_class in core for signature in entry.signatures), entry.id


def test_kb_check_rejects_a_bad_core_class_and_a_duplicate_id(tmp_path: Path):
    import shutil

    from firstfault.kb.loader import ENTRIES_DIR, check_entries

    root = tmp_path / "entries"
    for category in ("numerics", "framework"):
        (root / category).mkdir(parents=True)
    shutil.copy(ENTRIES_DIR / "numerics" / "loss-nan.yaml", root / "numerics")
    special = (ENTRIES_DIR / "numerics" / "grad-norm-nonfinite.yaml").read_text()
    (root / "numerics" / "grad-norm-nonfinite.yaml").write_text(special.replace("core_class: loss-nan", "core_class: no-such-class"))
    copy = (ENTRIES_DIR / "numerics" / "loss-nan.yaml").read_text().replace("category: numerics", "category: framework")
    (root / "framework" / "loss-nan.yaml").write_text(copy)
    _entries, problems = check_entries(root)
    messages = [problem.message for problem in problems]
    assert any("core_class 'no-such-class' has no entry" in message for message in messages), messages
    assert any("id 'loss-nan' is also the id of" in message for message in messages), messages


def test_a_specialised_entry_is_reported_as_its_core_class():
    from firstfault.pipeline import diagnose_texts
    from firstfault.render.contract import to_contract

    line = ("[rank3]: AssertionError: Rank 3: found NaN in local grad norm in backward pass before data-parallel "
            "communication collective. Device: 3, node: node-15-11")
    document = to_contract(diagnose_texts([("rank3.log", line + "\n")]))
    assert document["primary"]["failure_id"] == "loss-nan"
    assert document["primary"]["entry_id"] == "grad-norm-nonfinite"
    assert document["candidates"][0]["failure_id"] == "loss-nan"


def test_every_id_the_engine_names_exists_in_the_knowledge_base():
    from firstfault.correlate.ids import ABORT_SIGNATURES, ENGINE_IDS

    assert [entry_id for entry_id in ENGINE_IDS if entry_id not in KB] == []
    keys = {signature.key for signature in KB.signatures}
    assert [key for key in ABORT_SIGNATURES if key not in keys] == []


def test_explains_never_runs_both_ways(tmp_path: Path):
    import shutil

    from firstfault.kb.loader import ENTRIES_DIR, check_entries

    root = tmp_path / "entries"
    (root / "framework").mkdir(parents=True)
    (root / "network").mkdir(parents=True)
    shutil.copy(ENTRIES_DIR / "framework" / "preempted-sigterm.yaml", root / "framework")
    peer = (ENTRIES_DIR / "network" / "collective-timeout-peer-crash.yaml").read_text()
    (root / "network" / "collective-timeout-peer-crash.yaml").write_text(
        peer.replace("\nsummary:", "\nexplains: [preempted-sigterm]\nsummary:", 1))
    _entries, problems = check_entries(root)
    assert any("explain each other" in problem.message for problem in problems), [p.message for p in problems]


def test_kb_check_rejects_a_prefilter_narrower_than_its_examples(tmp_path: Path):
    from firstfault.kb.loader import ENTRIES_DIR, check_entries

    root = tmp_path / "entries" / "numerics"
    root.mkdir(parents=True)
    text = (ENTRIES_DIR / "numerics" / "loss-nan.yaml").read_text()
    wide = "prefilter: '(?i)(?:nan|inf)(?:\\W|$)'"
    assert wide in text  # the shipped prefilter, which every example matches (test_kb_check_passes)
    (root / "loss-nan.yaml").write_text(text.replace(wide, "prefilter: 'nan'"))  # misses `lm loss: NAN`
    _entries, problems = check_entries(root.parent)
    messages = [problem.message for problem in problems]
    assert any("'logged-loss-nan': prefilter does not match example" in message and "NAN" in message
               for message in messages), messages


def test_a_prefilter_is_what_the_fast_engine_looks_for_and_the_pattern_still_decides():
    pytest.importorskip("hyperscan")
    signature = next(s for s in SIGNATURES if s.name == "logged-loss-nan")
    assert signature.prefilter
    # a progress bar makes the block non-ASCII: the byte-level database, which has no `\b`
    lines = ["epoch 1 ██▌ 50%", "step 10 loss=2.3", "step 11 loss=nan", "grad_norm: inf (skipped)", "NCCL INFO Channel 00"]
    item = in_memory_inputs([("train.log", "\n".join(lines) + "\n")])[0]
    scanner = Scanner([signature], "hyperscan")
    data = item.content
    candidates, _valid, _hints = scanner.matcher.candidate_lines(data)
    starts = {data.count(b"\n", 0, start) + 1 for start in candidates}
    assert starts == {3, 4}  # the prefilter's lines: nan/inf ending a word, not `loss=` nor `INFO`
    assert [hit.line for hit in scanner.scan(item).hits] == [3]  # the pattern's own line
