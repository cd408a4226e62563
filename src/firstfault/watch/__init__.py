"""Live following and alerts: `firstfault watch` and `firstfault run`.

    follower.py      tail files and folders by polling (new files, rotation, truncation)
    incremental.py   new lines -> the same Scanner -> one accumulated FileScan per file
    engine.py        accumulated scans -> pipeline.diagnose_scans -> alerts; progress -> hangs
    progress.py      per-rank progress and hang verdicts
    alerts.py        alert values and de-duplication
    sinks.py, webhook.py, metrics.py   terminal, JSON lines, webhook, Prometheus
    (torchelastic error files are read by ingest/error_records.py)
    launch.py        `firstfault run`: start a command, tee its ranks' output into a log folder
"""
from .alerts import Alert, AlertBook
from .engine import LiveEngine
from ..ingest.error_records import ErrorRecord, error_record_input, parse_error_record, record_as_log
from .follower import Chunk, Follower

__all__ = ["Alert", "AlertBook", "Chunk", "ErrorRecord", "Follower", "LiveEngine", "error_record_input",
           "parse_error_record", "record_as_log"]
