"""The corpus generator works at small sizes, and firstfault names its planted failure."""
from __future__ import annotations

import gzip
import json

from firstfault.pipeline import diagnose_paths


def test_single_corpus(single_corpus):
    manifest = json.loads((single_corpus / "manifest.json").read_text())
    path = single_corpus / manifest["files"][0]
    data = path.read_bytes()
    assert 1_400_000 < len(data) < 3_000_000
    assert b"\r" in data and b" NCCL INFO " in data and "█".encode() in data
    assert manifest["planted_text"].encode() in data[manifest["planted_offset"]:]
    diagnosis = diagnose_paths([str(path)])
    assert diagnosis.primary.failure_id == manifest["failure_id"]
    assert diagnosis.initiating.rank == manifest["initiating_rank"]


def test_rank_files(ranks_corpus):
    manifest = json.loads((ranks_corpus / "manifest.json").read_text())
    assert len(manifest["files"]) == 6 and manifest["planted_file"] in manifest["files"]
    diagnosis = diagnose_paths([str(ranks_corpus)])
    assert diagnosis.primary.failure_id == manifest["failure_id"]
    assert diagnosis.initiating.rank == manifest["initiating_rank"]


def test_gzip_variant(tmp_path, generator):
    generator.main(["single", str(tmp_path), "--size", "300K", "--gzip"])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    path = tmp_path / manifest["files"][0]
    assert path.suffix == ".gz" and manifest["planted_text"].encode() in gzip.decompress(path.read_bytes())
    diagnosis = diagnose_paths([str(path)])
    assert diagnosis.initiating.rank == manifest["initiating_rank"]
