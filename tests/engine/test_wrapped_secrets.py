"""The second half of a wrapped secret (a terminal's width, a `rich` box, a launcher prefix on
each piece) is masked when it begins the next line; a word that begins the line after a masked
value is not. First sight (2026-12-04): all 3 forms leaked (docs/first-sight.md)."""
from __future__ import annotations

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.mask.continuation import mask_continuation
from firstfault.pipeline import diagnose_texts
from firstfault.render.contract import render as render_json
from firstfault.render.markdown import render as render_markdown
from firstfault.render.terminal import TerminalReport

KB = load_knowledge_base()
FAULT = "RuntimeError: CUDA error: device-side assert triggered"
WRAPPED = [
    ("terminal-width", f"[rank1]: {FAULT} (HF_TOKEN=hf_AbCdEfGhIjKlMnOp\nQrStUvWxYz0123456789) [rank1]: {FAULT}\n",
     "QrStUvWxYz0123456789"),
    ("rich-box", f"[rank1]: {FAULT}\n│    api_key = 'sk-AbCdEfGhIjKlMn{' ' * 50}│\n│    OpQrStUvWx9876' {FAULT} │\n",
     "OpQrStUvWx9876"),
    ("launcher-prefix-on-each-piece", f"[rank1]: {FAULT} password=Pa55wOrdFirstHalf\n[rank1]: SecondHalfOfIt77 {FAULT}\n",
     "SecondHalfOfIt77"),
]


@pytest.mark.parametrize("name,text,secret", WRAPPED, ids=[row[0] for row in WRAPPED])
def test_the_rest_of_a_wrapped_secret_reaches_no_output(name, text, secret):
    diagnosis = diagnose_texts([("rank1.log", text)], kb=KB)
    assert diagnosis.primary is not None and diagnosis.primary.failure_id == "cuda-device-side-assert"
    for output in (render_json(diagnosis), render_markdown(diagnosis, KB), TerminalReport(KB).render(diagnosis)):
        assert secret not in output


LONG = "x" * 50 + " password=hunter2secret"


@pytest.mark.parametrize("line,previous", [
    ("RuntimeError: CUDA error: device-side assert triggered", LONG),  # a word, not a secret's rest
    ("Downloading model.safetensors", LONG),
    ("step 1200 loss 2.3", LONG),
    ("Qr5tUvWxYz rest", "short password=hunter2"),  # the line before is too short to have wrapped
    ("Qr5tUvWxYz rest", "x" * 60 + " the line ends in text"),  # it ends in no secret
])
def test_lines_that_continue_no_secret_are_kept(line, previous):
    assert mask_continuation(line, previous) == line


def test_a_continuation_is_masked_to_its_end_only():
    assert mask_continuation("[rank1]: Qr5tUvWxYz) and more", LONG) == "[rank1]: <masked>) and more"


@pytest.mark.parametrize("line", [
    "2026-12-02 08:00:01,000 ERROR RuntimeError: CUDA error: an illegal memory access was encountered",
    "[rank3]: 2026/12/02 08:00:01 fatal: NCCL error",
    "12/02/2026 08:00:01 PM worker 3 exited",
])
def test_a_line_that_starts_a_new_record_keeps_its_date(line):
    previous = "2026-12-02 08:00:00,250 INFO env: HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"  # ends masked
    assert mask_continuation(line, previous) == line


def test_the_time_of_an_error_after_a_masked_env_line_is_its_own():
    text = ("2026-12-02 08:00:00,250 INFO env: HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\n"
            "2026-12-02 08:00:01,000 ERROR RuntimeError: CUDA error: device-side assert triggered\n")
    diagnosis = diagnose_texts([("rank1.log", text)], kb=KB)
    assert diagnosis.primary is not None and diagnosis.primary.failure_id == "cuda-device-side-assert"
    evidence = diagnosis.primary.evidence[0]
    assert evidence.text.startswith("2026-12-02 08:00:01,000 ERROR")  # its date, not <masked>
    assert "hf_abcdefghij" not in render_json(diagnosis)
