"""Compile the knowledge base's signatures once into a Matcher."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Signature
from .literals import is_case_insensitive, required_literal


@dataclass(frozen=True)
class CompiledSignature:
    signature: Signature
    regex: re.Pattern
    literal: str
    case_insensitive: bool


class Matcher:
    """Finds candidate lines by literal, then confirms each with its signature's regex."""

    def __init__(self, signatures: list[Signature]) -> None:
        self.compiled = [
            CompiledSignature(
                signature=signature,
                regex=re.compile(signature.pattern),
                literal=required_literal(signature.pattern),
                case_insensitive=is_case_insensitive(signature.pattern),
            )
            for signature in signatures
        ]
        self.prefilter = self._build_prefilter(case_insensitive=False)
        self.prefilter_ci = self._build_prefilter(case_insensitive=True)
        self._always = [item for item in self.compiled if not item.literal]

    def _build_prefilter(self, case_insensitive: bool) -> re.Pattern | None:
        literals = sorted({item.literal for item in self.compiled
                           if item.literal and item.case_insensitive == case_insensitive}, key=len, reverse=True)
        if not literals:
            return None
        alternation = "|".join(re.escape(literal) for literal in literals)
        return re.compile(alternation, re.IGNORECASE if case_insensitive else 0)

    def candidate_offsets(self, text: str):
        """Offsets in `text` where some literal occurs (unsorted, may repeat lines)."""
        for prefilter in (self.prefilter, self.prefilter_ci):
            if prefilter is not None:
                for found in prefilter.finditer(text):
                    yield found.start()

    def match_line(self, line: str) -> list[tuple[CompiledSignature, dict]]:
        """Every signature that matches this line, with its captured values."""
        lowered = None
        hits = []
        for item in self.compiled:
            if item.literal:
                if item.case_insensitive:
                    lowered = lowered if lowered is not None else line.lower()
                    if item.literal not in lowered:
                        continue
                elif item.literal not in line:
                    continue
            found = item.regex.search(line)
            if found:
                captures = {key: value for key, value in found.groupdict().items() if value is not None}
                hits.append((item, captures))
        return hits

    @property
    def needs_every_line(self) -> bool:
        return bool(self._always)
