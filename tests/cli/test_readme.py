"""The README's claims, checked: its sample output is the real output, its command table is the
real command set, and every document it (or docs/) points to is in the repository."""
from __future__ import annotations

import argparse
import re
import shlex

from firstfault.cli import build_parser

from .conftest import REPO, run_cli

README = REPO / "README.md"
ELISION = "..."


def sample_blocks(text: str) -> list[tuple[list[str], list[str]]]:
    """(command words, expected output lines) of each fenced block that starts with `$ firstfault`."""
    blocks = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        lines = block.rstrip("\n").split("\n")
        if lines and lines[0].startswith("$ firstfault "):
            blocks.append((shlex.split(lines[0][2:])[1:], lines[1:]))
    return blocks


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, where a `...` line stands for any number of lines (none included)."""
    if not expected:
        return not actual
    if expected[0] == ELISION:
        return any(matches(expected[1:], actual[skip:]) for skip in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def test_the_sample_output_is_the_real_output():
    blocks = sample_blocks(README.read_text())
    assert blocks, "the README shows a sample run"
    for words, expected in blocks:
        result = run_cli(*words, "--color", "never")
        actual = result.stdout.decode().rstrip("\n").split("\n")
        assert matches(expected, actual), (
            f"README sample of `firstfault {' '.join(words)}` differs from its real output:\n" + "\n".join(actual))


def test_matches_understands_elision():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "b", "c"])


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def test_the_command_table_is_the_real_command_set():
    text = README.read_text()
    table = [line for line in text.splitlines() if line.startswith("| `firstfault ")]
    named = {word for line in table for word in re.findall(r"`firstfault ([a-z]+)", line)}
    assert named == _commands(build_parser())


def test_every_document_pointed_to_is_in_the_repository():
    documents = [README, *sorted((REPO / "docs").glob("*.md"))]
    for document in documents:
        text = document.read_text()
        assert "../shared" not in text and "/work/shared" not in text, document
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            assert (document.parent / target).exists(), f"{document.name} links {target}, which is not in the repository"
        for path in re.findall(r"`((?:docs|bench|tests|examples|src)/[\w./-]+)`", text):
            assert (REPO / path.rstrip("/")).exists(), f"{document.name} names {path}, which is not in the repository"
