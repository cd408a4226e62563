"""Ingest: the only code that knows files, folders, globs, gzip and stdin."""
from .reader import Block, ReadStats, Unreadable, read_blocks
from .sources import InputFile, expand_inputs, in_memory_inputs

__all__ = ["Block", "InputFile", "ReadStats", "Unreadable", "expand_inputs", "in_memory_inputs", "read_blocks"]
