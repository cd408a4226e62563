"""Incremental scanning: feed a growing file's new complete lines through the same Scanner.

Each chunk is scanned with `Scanner.scan` on an in-memory input (the scanner's public entry
point), then its hits and census are merged into one accumulated `FileScan` per file, with line
numbers shifted to the chunk's place in the file; each chunk resumes from the accumulated scan's
times, as a full scan carries them from block to block. `pipeline.diagnose_scans` then correlates the accumulated scans as it
correlates those of `diagnose`.
"""
from __future__ import annotations

from dataclasses import replace

from ..ingest.attribution import hints_from_path
from ..ingest.sources import InputFile
from ..match.scanner import FileScan, RawHit, Scanner, add_later_ids, add_tails


class IncrementalScan:
    """One file's accumulated FileScan, grown chunk by chunk of complete lines."""

    def __init__(self, scanner: Scanner, item: InputFile) -> None:
        self.scanner = scanner
        self.scan = FileScan(input=item, hints=hints_from_path(item.relative))
        self.next_line = 1  # the 1-based number of the next line fed

    def feed(self, data: bytes) -> list[RawHit]:
        """Scan `data` (complete lines, each ending in '\\n'); return the new hits."""
        if not data:
            return []
        line_count = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        chunk_input = InputFile(display=self.scan.input.display, relative=self.scan.input.relative, content=data)
        chunk = self.scanner.scan(chunk_input, resume=self.scan)
        first_line = self.next_line
        self.next_line += line_count
        stats = self.scan.stats
        stats.lines += line_count
        stats.bytes += len(data)
        if chunk.error:
            # a chunk that looks binary: counted, not matched (the file as a whole may be text)
            note = f"lines {first_line}-{self.next_line - 1}: {chunk.error}"
            if note not in stats.notes:
                stats.notes.append(note)
            return []
        stats.long_lines += chunk.stats.long_lines
        stats.invalid_utf8 = stats.invalid_utf8 or chunk.stats.invalid_utf8
        new_hits = [self._placed(hit, first_line) for hit in chunk.hits]
        self.scan.hits.extend(new_hits)
        self._merge_census(chunk, first_line)
        self._merge_tails(chunk, first_line)
        return new_hits

    def _merge_tails(self, chunk: FileScan, first_line: int) -> None:
        """What each rank stream printed last now ends with the chunk's lines (line numbers
        shifted to the chunk's place in the file)."""
        shift = first_line - 1

        def placed(kept: dict) -> dict:
            return {stream: [(line + shift, time, text) for line, time, text in lines] for stream, lines in kept.items()}

        add_tails(self.scan, placed(chunk.tails), placed(chunk.progress_tails), self.next_line - 1)

    @staticmethod
    def _placed(hit: RawHit, first_line: int) -> RawHit:
        return replace(hit, line=hit.line + first_line - 1)

    def _merge_census(self, chunk: FileScan, first_line: int) -> None:
        scan = self.scan
        # the chunk started from this scan's census (see FileScan.resumed): its sets hold both
        scan.local_ranks |= chunk.local_ranks
        scan.global_ranks |= chunk.global_ranks
        scan.srun_tasks |= chunk.srun_tasks
        scan.process_pids |= chunk.process_pids
        add_later_ids(scan, chunk, first_line - 1)
        # the chunk started from this scan's times (see FileScan.resumed): its are the latest
        scan.first_time = chunk.first_time
        if scan.first_launched is None and chunk.first_launched is not None:  # (else the chunk carried this one's)
            scan.first_launched = chunk.first_launched + first_line - 1 if chunk.first_launched else 0
        scan.last_time = chunk.last_time
        scan.stream_times = chunk.stream_times

    def rename(self, display: str) -> None:
        """The file was renamed (rotation inside a watched folder): reports name it by its new path."""
        self.scan.input = replace(self.scan.input, display=display)
