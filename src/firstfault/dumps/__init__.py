"""Flight-recorder dumps and stack dumps: which rank did not join, and where each rank is.

The engine calls `analyze_files(paths)` with every input file and skips, as logs, the
files the returned report lists in `consumed`.
"""
from .analysis import analyze_flight_recorder
from .discover import analyze_contents, analyze_files, classify
from .flight_recorder import FlightRecorderDump, load_dump, parse_dump
from .results import (
                      Collective,
                      DumpReport,
                      FlightRecorderResult,
                      Frame,
                      Mismatch,
                      RankPosition,
                      StackGroup,
                      StackResult,
)
from .stacks import RankStack, group_stacks, load_stacks, parse_stack_text

__all__ = [
    "analyze_files", "analyze_contents", "classify", "analyze_flight_recorder", "load_dump", "parse_dump",
    "FlightRecorderDump", "group_stacks", "load_stacks", "parse_stack_text", "RankStack",
    "Collective", "DumpReport", "FlightRecorderResult", "Frame", "Mismatch", "RankPosition",
    "StackGroup", "StackResult",
]
