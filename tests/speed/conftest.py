"""Shared fixtures for the scanner's speed-related machinery: the real signatures, small
generated corpora (bench/make_corpus.py), and a private cache dir."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.match.context import CONTEXT_SIGNATURES
from firstfault.stack import STACK_SIGNATURES

ROOT = Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("make_corpus", ROOT / "bench" / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def signatures():
    return list(load_knowledge_base().signatures) + list(CONTEXT_SIGNATURES) + list(STACK_SIGNATURES)


@pytest.fixture(scope="session")
def generator():
    return load_generator()


@pytest.fixture(scope="session")
def single_corpus(tmp_path_factory, generator):
    folder = tmp_path_factory.mktemp("single")
    generator.main(["single", str(folder), "--size", "1500K"])
    return folder


@pytest.fixture(scope="session")
def ranks_corpus(tmp_path_factory, generator):
    folder = tmp_path_factory.mktemp("ranks")
    generator.main(["ranks", str(folder), "--files", "6", "--size", "48K"])
    return folder


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"
