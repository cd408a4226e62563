"""Ranked search over the knowledge base, for a few words or a pasted error line.

Two kinds of evidence, strongest first:
1. a signature regex of the entry matches the query (the query *is* a log line of that failure);
2. a BM25 score of the query's tokens over the entry's ids, title, tags, messages and prose,
   each field weighted by how telling a hit there is.

    index = SearchIndex(kb)
    index.search("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ..model import Entry
from .loader import KnowledgeBase

# How telling a token hit is in each field of an entry.
FIELD_WEIGHTS = {
    "id": 3.0, "title": 2.5, "tags": 2.0, "observe": 1.5, "examples": 1.0, "summary": 1.0, "mechanism": 0.5,
}
# Text-only hits scoring under this share of the best one are noise ("error", "cuda" alone).
MIN_RELATIVE_SCORE = 0.2
K1, B = 1.2, 0.75  # the usual BM25 constants: term-frequency saturation, length normalisation
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were with".split()
)
SEPARATOR = re.compile(r"[_\-]")
WORD = re.compile(r"[A-Za-z0-9]+(?:[_\-][A-Za-z0-9]+)*")
PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
NUMBER_OR_HEX = re.compile(r"[0-9]+|0x[0-9a-f]+|(?=[a-f]*[0-9])[0-9a-f]{6,}")


def tokenize(text: str) -> list[str]:
    """Lowercase words, split at snake/kebab/camel boundaries; numbers, hex and stopwords dropped.

    A compound word is kept whole as well (`outofmemoryerror`, `nccl_socket_ifname`), so an exact
    identifier outranks the same parts scattered through prose.
    """
    return [term for word in WORD.findall(text) for term in _word_terms(word)]


@lru_cache(maxsize=1 << 16)  # prose repeats its words: the index is built several times faster
def _word_terms(word: str) -> tuple[str, ...]:
    if NUMBER_OR_HEX.fullmatch(word.lower()):
        return ()  # addresses, ids, sizes: different in every log, telling nothing
    parts = [part for piece in SEPARATOR.split(word) for part in _camel_parts(piece)]
    if len(parts) > 1:
        parts.append(word.lower())
    return tuple(part for part in parts if _is_term(part))


def _camel_parts(piece: str) -> list[str]:
    """`OutOfMemoryError` -> out, of, memory, error; `GiB`, `IPv6` stay whole (no one-letter parts)."""
    parts = PART.findall(piece)
    if any(len(part) == 1 and part.isalpha() for part in parts):
        return [piece.lower()]
    return [part.lower() for part in parts]


def _is_term(token: str) -> bool:
    return len(token) > 1 and token not in STOPWORDS and not NUMBER_OR_HEX.fullmatch(token)


@dataclass(frozen=True)
class SearchHit:
    """One entry found: why (signature and/or matched terms) and how strongly."""

    entry: Entry
    signature: str = ""  # name of the best signature that matched the query, if any
    signature_weight: float = 0.0
    captures: dict = field(default_factory=dict, compare=False, hash=False)
    text_score: float = 0.0
    terms: tuple[str, ...] = ()  # query terms found in the entry, most telling first

    @property
    def sort_key(self) -> tuple:
        return (-self.signature_weight, -self.text_score, self.entry.id)


NO_SIGNATURE = ("", 0.0, {})  # (name, weight, captures) of an entry no signature matched


@dataclass(frozen=True)
class _Document:
    entry: Entry
    fields: dict[str, Counter]
    lengths: dict[str, int]


class SearchIndex:
    """Token statistics of every entry, built once; `search` is then cheap."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.documents = [_document(entry) for entry in kb.entries]
        self.document_frequency = Counter(
            term for doc in self.documents for term in {t for counts in doc.fields.values() for t in counts}
        )
        self.average_length = {
            name: (sum(doc.lengths[name] for doc in self.documents) / len(self.documents)) or 1.0
            for name in FIELD_WEIGHTS
        } if self.documents else {}
        self.signatures = [(signature, re.compile(signature.pattern)) for signature in kb.signatures]

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Entries that match `query`, best first; at most `limit` (0: all)."""
        signature_hits = self._signature_hits(query)
        terms = sorted(set(tokenize(query)))
        hits = []
        for doc in self.documents:
            text_score, matched = self._score(doc, terms)
            name, weight, captures = signature_hits.get(doc.entry.id, NO_SIGNATURE)
            if weight or text_score:
                hits.append(SearchHit(doc.entry, name, weight, captures, round(text_score, 4), matched))
        best_text = max((hit.text_score for hit in hits), default=0.0)
        hits = [hit for hit in hits if hit.signature or hit.text_score >= MIN_RELATIVE_SCORE * best_text]
        hits.sort(key=lambda hit: hit.sort_key)
        return hits[:limit] if limit else hits

    def _signature_hits(self, query: str) -> dict[str, tuple[str, float, dict]]:
        """Per entry, its heaviest signature that wins a line of the query.

        As in the engine, when several signatures match one line the highest weight takes the
        line: a pasted OOM line is not also evidence for the generic Python-exception entry.
        """
        lines = [line for line in query.splitlines() if line.strip()] or [query]
        best: dict[str, tuple[str, float, dict]] = {}
        for line in lines:
            matches = [(signature, m) for signature, regex in self.signatures if (m := regex.search(line))]
            top = max((signature.weight for signature, _ in matches), default=0.0)
            for signature, match in matches:
                if signature.weight == top and top > best.get(signature.entry_id, NO_SIGNATURE)[1]:
                    captures = {key: value for key, value in match.groupdict().items() if value is not None}
                    best[signature.entry_id] = (signature.name, signature.weight, captures)
        return best

    def _score(self, doc: _Document, terms: list[str]) -> tuple[float, tuple[str, ...]]:
        contributions: dict[str, float] = {}
        for term in terms:
            idf = self._idf(term)
            for name, weight in FIELD_WEIGHTS.items():
                frequency = doc.fields[name].get(term, 0)
                if frequency:
                    norm = K1 * (1 - B + B * doc.lengths[name] / self.average_length[name])
                    gain = weight * idf * frequency * (K1 + 1) / (frequency + norm)
                    contributions[term] = contributions.get(term, 0.0) + gain
        ranked = sorted(contributions, key=lambda term: (-contributions[term], term))
        return sum(contributions.values()), tuple(ranked)

    def _idf(self, term: str) -> float:
        total, frequency = len(self.documents), self.document_frequency.get(term, 0)
        return math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))


def _document(entry: Entry) -> _Document:
    texts = {
        "id": " ".join([entry.id, *(entry.get("redirect_from") or ())]),
        "title": entry.title,
        "tags": " ".join(entry.get("tags") or ()),
        "observe": "\n".join(entry.get("observe") or ()),
        "examples": "\n".join(example for signature in entry.signatures for example in signature.examples),
        "summary": str(entry.get("summary", "")),
        "mechanism": str(entry.get("mechanism", "")),
    }
    fields = {name: Counter(tokenize(text)) for name, text in texts.items()}
    return _Document(entry, fields, {name: sum(counts.values()) for name, counts in fields.items()})


def search(kb: KnowledgeBase, query: str, limit: int = 10) -> list[SearchHit]:
    """One-off search; keep a SearchIndex to run many queries over the same knowledge base."""
    return SearchIndex(kb).search(query, limit)
