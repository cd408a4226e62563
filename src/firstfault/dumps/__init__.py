"""Flight-recorder dumps and stack dumps: which rank did not join, and where each rank is.

The engine calls `analyze_heads` with the input files `sniff.dump_candidates` keeps (the others
are logs) and their first bytes, and skips, as logs, the files the returned report lists in
`consumed`. The names below are loaded on first use: a diagnosis of logs alone imports only `sniff`.
"""
from importlib import import_module

_HOMES = {
    "analyze_flight_recorder": "analysis",
    "analyze_files": "discover", "analyze_heads": "discover", "analyze_contents": "discover", "classify": "discover",
    "FlightRecorderDump": "flight_recorder", "load_dump": "flight_recorder", "parse_dump": "flight_recorder",
    "Collective": "results", "DumpReport": "results", "FlightRecorderResult": "results", "Frame": "results",
    "Mismatch": "results", "RankPosition": "results", "StackGroup": "results", "StackResult": "results",
    "RankStack": "stacks", "group_stacks": "stacks", "load_stacks": "stacks", "parse_stack_text": "stacks",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
