"""Follow-up questions on a diagnosis ("why not rank 0?"), answered from its evidence.

    intents.py   what a question asks (plain, tested rules over its words)
    answers.py   the answer, from the diagnosis contract and the knowledge base, with cited lines
"""
from __future__ import annotations

from .answers import Answer, answer
from .intents import SUPPORTED, Intent, intent_of

__all__ = ["Answer", "Intent", "SUPPORTED", "answer", "intent_of"]
