"""`firstfault` as the benchmark runs it: the CLI, with many-file inputs scanned across processes.

Until `pipeline.scan_inputs` calls `firstfault.match.parallel.scan_files` itself, this wrapper
routes it there; once it does, this is exactly `firstfault ...`.
"""
from __future__ import annotations

import os

from firstfault import pipeline
from firstfault.cli import console
from firstfault.match.parallel import scan_files

if "scan_files" not in pipeline.scan_inputs.__code__.co_names:
    def scan_inputs(inputs, kb, observer=None):
        return scan_files(pipeline.scanner_for(kb), inputs, observer)

    pipeline.scan_inputs = scan_inputs

if os.environ.get("FIRSTFAULT_BENCH_NO_DUMP_DISCOVERY"):
    # diagnostic only (a separate, labelled row of the benchmark): the cost of looking for
    # flight-recorder and stack dumps among the inputs, which happens before the scan
    pipeline._dump_report = lambda inputs: None

if __name__ == "__main__":
    console()
