"""Ranked search: tokens, signature hits on pasted lines, BM25 over the text fields."""
from __future__ import annotations

import pytest

from firstfault.kb.search import SearchIndex, search, tokenize

OOM_LINE = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
    "GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory"
)


@pytest.mark.parametrize("text,expected", [
    ("OutOfMemoryError", ["out", "memory", "error", "outofmemoryerror"]),
    ("NCCL_SOCKET_IFNAME", ["nccl", "socket", "ifname", "nccl_socket_ifname"]),
    ("cuda-oom", ["cuda", "oom", "cuda-oom"]),
    ("cudaMalloc failed", ["cuda", "malloc", "cudamalloc", "failed"]),
    ("allocate 2.00 GiB at 0x7f3a12 id deadbeef12", ["allocate", "gib", "id"]),
    ("The rank of the GPU", ["rank", "gpu"]),
    ("IPv6 fp16", ["ipv6", "fp", "fp16"]),
])
def test_tokenize(text, expected):
    assert tokenize(text) == expected


def test_a_pasted_oom_line_ranks_the_oom_entry_first_by_its_signature(kb):
    hits = search(kb, OOM_LINE)
    assert hits[0].entry.id == "gpu-oom"
    assert hits[0].signature == "tried-to-allocate"
    assert hits[0].captures == {"tried": "2.00 GiB"}


def test_the_heaviest_signature_takes_the_line(kb):
    # the generic exception signature also matches the OOM line, but 0.9 beats 0.3 for that line
    hits = {hit.entry.id: hit for hit in search(kb, OOM_LINE, limit=0)}
    assert "python-error" not in hits or not hits["python-error"].signature


def test_a_generic_exception_line_finds_the_generic_entry(kb):
    hits = search(kb, "ValueError: not enough values to unpack (expected 3, got 2)")
    assert hits[0].entry.id == "python-error"
    assert hits[0].captures["exc_type"] == "ValueError"


def test_each_line_of_a_pasted_block_is_matched(kb):
    block = OOM_LINE + "\n" + "[rank1]:[E1003 ProcessGroupNCCL.cpp:607] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE)"
    hits = search(kb, block, limit=0)
    signatures = {hit.entry.id: hit.signature for hit in hits if hit.signature}
    assert signatures == {"gpu-oom": "tried-to-allocate", "collective-timeout-hang": "watchdog-timeout"}
    assert [hit.entry.id for hit in hits[:2]] == ["gpu-oom", "collective-timeout-hang"]  # by weight


@pytest.mark.parametrize("query,first", [
    ("socket interface", "nccl-bad-interface"),
    ("nccl-bad-interface", "nccl-bad-interface"),
    ("nccl-iface", "nccl-bad-interface"),  # an old id still finds the entry
    ("watchdog", "collective-timeout-hang"),
    ("rendezvous master", "rendezvous-refused"),
    ("Connection refused to the store", "rendezvous-refused"),
    ("batch size oom", "gpu-oom"),
])
def test_words_rank_the_telling_entry_first(kb, query, first):
    assert search(kb, query)[0].entry.id == first


def test_matched_terms_are_reported_most_telling_first(kb):
    hit = search(kb, "socket interface")[0]
    assert set(hit.terms) == {"socket", "interface"}
    assert hit.text_score > 0 and hit.signature == ""


def test_a_word_in_id_and_title_outweighs_the_same_word_in_prose(kb):
    # "timeout" is in collective-timeout-hang's id and title, and only in rendezvous-refused's mechanism
    assert "timeout" in kb.get("rendezvous-refused").get("mechanism")
    # so weak beside the id/title hit that it falls under the relative cut-off
    assert [hit.entry.id for hit in search(kb, "timeout", limit=0)] == ["collective-timeout-hang"]


def test_limit_and_no_match(kb):
    index = SearchIndex(kb)
    assert len(index.search("nccl rank", limit=1)) == 1
    assert len(index.search("nccl rank", limit=0)) > 1
    assert index.search("zebra giraffe") == []
    assert index.search("the of 1234 0xdeadbeef") == []


def test_weak_text_matches_are_dropped(kb):
    # "rank" appears in several entries' prose; only strong matches survive beside the best one
    hits = search(kb, "interface rank", limit=0)
    assert hits[0].entry.id == "nccl-bad-interface"
    assert all(hit.text_score >= 0.2 * hits[0].text_score for hit in hits)
