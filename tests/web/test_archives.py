"""Archive expansion in memory: names, limits, links, nested archives."""
from __future__ import annotations

import pytest

from firstfault.web.archives import Budget, expand, member_name
from firstfault.web.limits import InputRejected, Limits

from .helpers import gz, tar_gz, zip_bytes


@pytest.mark.parametrize("raw,expected", [("logs/rank0.log", "logs/rank0.log"), ("./logs//rank0.log", "logs/rank0.log"),
                                          ("logs\\rank0.log", "logs/rank0.log")])
def test_member_names(raw, expected):
    assert member_name(raw, "a.zip") == expected


@pytest.mark.parametrize("raw", ["../x", "/x", "a/../../x", "C:x", "c:\\x", ""])
def test_unsafe_member_names(raw):
    with pytest.raises(InputRejected) as info:
        member_name(raw, "a.zip")
    assert info.value.status == 422


def test_nested_archives_and_junk_are_skipped_with_a_note():
    budget = Budget(Limits())
    archive = zip_bytes({"logs/rank0.log": "hello\n", "logs/inner.zip": zip_bytes({"x.log": "x\n"}),
                         "__MACOSX/logs/._rank0.log": "junk", "logs/rank1.log.gz": gz(b"world\n")})
    expand("logs.zip", archive, budget)
    assert budget.files == [("logs/rank0.log", b"hello\n"), ("logs/rank1.log", b"world\n")]
    assert any("nested archives" in note for note in budget.notes)


def test_plain_tar_and_gz():
    budget = Budget(Limits())
    import gzip

    expand("logs.tar.gz", tar_gz({"a/rank0.log": "zero\n"}), budget)
    expand("rank5.log.gz", gz(b"five\n"), budget)
    expand("plain.tar", gzip.decompress(tar_gz({"b/rank1.log": "one\n"})), budget)
    assert [name for name, _ in budget.files] == ["a/rank0.log", "rank5.log", "b/rank1.log"]


def test_budget_counts_across_files():
    budget = Budget(Limits(max_total_bytes=10))
    expand("a.log", b"12345", budget)
    with pytest.raises(InputRejected) as info:
        expand("b.log", b"123456", budget)
    assert info.value.status == 413
