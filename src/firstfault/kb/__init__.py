"""The knowledge base: entries as data, validated, looked up by id."""
from .loader import KnowledgeBase, check_entries, load_knowledge_base

__all__ = ["KnowledgeBase", "check_entries", "load_knowledge_base"]
