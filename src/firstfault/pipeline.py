"""The one entry point every interface calls: ingest -> mask -> match -> correlate.

    diagnose_paths(["logs/"]) -> Diagnosis
    diagnose_texts([("rank0.log", b"...")]) -> Diagnosis      # pasted or uploaded, in memory

Renderers (firstfault.render.*) turn the Diagnosis into text; nothing here prints. Progress goes
to an optional observer: any object with `file_started(item, index, total)` and
`file_finished(scan)` methods.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache

from .ingest.archives import with_archives_opened
from .ingest.error_records import error_record_input
from .ingest.pasted import as_written
from .errors import InputError
from .ingest.sources import InputFile, expand_inputs, in_memory_inputs, stdin_in_memory
from .kb import load_knowledge_base
from .kb.loader import KnowledgeBase
from .mask import HostMasker, mask_secrets
from .match.context import CONTEXT_SIGNATURES, PROCESS_GROUP_FRAMES
from .match.scanner import FileScan, Scanner
from .model import Diagnosis, InputSummary, Skipped, map_strings
from .stack import STACK_SIGNATURES, detect_stack, is_stack_cue


@lru_cache(maxsize=4)
def _signatures(kb: KnowledgeBase) -> tuple:
    return tuple(kb.signatures) + CONTEXT_SIGNATURES + STACK_SIGNATURES


def scanner_for(kb: KnowledgeBase) -> Scanner:
    """A fresh scanner (it keeps per-run state such as the reference year) over compiled patterns."""
    return Scanner(list(_signatures(kb)))


def diagnose_paths(paths: Sequence[str], *, mask_hosts: bool = False, observer=None, kb=None) -> Diagnosis:
    """Diagnose files, folders (recursive), globs, .gz files and '-' (stdin)."""
    inputs, skipped = expand_inputs(list(paths))
    inputs, left_out = with_archives_opened(inputs)  # logs.tgz: the files it holds
    skipped = list(skipped) + left_out
    if not inputs:
        reasons = mask_secrets("; ".join(f"{item.source}: {item.reason}" for item in skipped)) or "nothing given"
        raise InputError(f"no readable input ({reasons})", "give log files, folders, globs or '-' for stdin")
    return _diagnose(inputs, skipped, mask_hosts=mask_hosts, observer=observer, kb=kb)


def diagnose_texts(named_texts: Iterable[tuple[str, bytes | str]], *, mask_hosts: bool = False, observer=None, kb=None,
                   max_input_bytes: int | None = None) -> Diagnosis:
    """Diagnose in-memory logs given as (name, content) pairs; names play the role of file paths.
    `max_input_bytes`: a gzip input stops expanding there (what a server allows one request)."""
    inputs = in_memory_inputs(named_texts, max_bytes=max_input_bytes)
    if not inputs:
        raise InputError("no log given", "paste a log or upload files")
    return _diagnose(inputs, [], mask_hosts=mask_hosts, observer=observer, kb=kb)


def scan_inputs(inputs: list[InputFile], kb: KnowledgeBase, observer=None) -> list[FileScan]:
    """Scan every input; many large files are spread over processes, results in input order."""
    from .match.parallel import scan_files

    return scan_files(scanner_for(kb), inputs, observer, meanwhile=_load_correlation)


CORRELATION_MODULES = ("correlate", "correlate.identity", "correlate.ranks", "correlate.relations", "correlate.dumps_join",
                       "render.diagnosis_text")  # (the rules word their reasons with it)


def _load_correlation() -> None:
    """Import what correlating the scans takes (~20 ms) while workers scan: it is imported where
    it is used, not before the scan, where this process would import it with the other core idle."""
    for name in CORRELATION_MODULES:
        importlib.import_module(f".{name}", __package__)


def _diagnose(inputs: list[InputFile], skipped: list[Skipped], *, mask_hosts: bool, observer, kb) -> Diagnosis:
    kb = kb or load_knowledge_base()
    report = _dump_report(inputs)
    if report is not None:
        consumed = set(report.consumed)
        inputs = [item for item in inputs if _name_of(item) not in consumed]
        skipped = list(skipped) + [Skipped(path, reason) for path, reason in report.skipped]
    inputs = [stdin_in_memory(item) if item.is_stdin else item for item in inputs]  # a paste piped in
    inputs = as_written(inputs)  # pasted, wrapped, collected, several files in one text
    inputs = [error_record_input(item) or item for item in inputs]  # torchelastic / firstfault error files
    skipped = list(skipped) + [Skipped(item.display, note) for item in inputs for note in item.notes]
    scans = scan_inputs(inputs, kb, observer)
    # after the join, everything the diagnosis says passes the masker once more: file names the
    # user gave (/home/<user>/...), upload names, dump notes quoting stack frames and paths
    masker = _memo(mask_secrets)
    diagnosis = diagnose_scans(scans, skipped, kb=kb, masker=masker)
    from .correlate.dumps_join import join_dump_report

    joined = join_dump_report(diagnosis, report)
    if joined is not diagnosis:  # else every string went through this masker already
        diagnosis = map_strings(joined, masker)
    return _mask_hosts(diagnosis) if mask_hosts else diagnosis  # after the join: dump notes name files too


def _name_of(item: InputFile) -> str:
    return str(item.path) if item.path is not None else item.display


def _dump_report(inputs: list[InputFile]):
    """Flight-recorder and stack dumps among the inputs (stdin is never a dump). The files whose
    first bytes cannot be a dump's are logs: the dump reader is loaded only for the others."""
    from .dumps.sniff import dump_candidates

    candidates = dump_candidates(str(item.path) for item in inputs if item.path is not None)
    in_memory = [(item.display, item.content) for item in inputs if item.content is not None]
    report = None
    if candidates:
        from .dumps import analyze_heads

        report = analyze_heads(candidates)
    if in_memory:
        from .dumps import analyze_contents

        report = analyze_contents(in_memory)  # uploads come alone, never mixed with paths
    return report


def diagnose_scans(scans: list[FileScan], skipped: list[Skipped] = (), *, mask_hosts: bool = False, kb=None,
                   masker=None) -> Diagnosis:
    """Correlate what the scans found into one Diagnosis. `masker`: the diagnosis's memo of
    mask_secrets, when the caller masks once more after (see _diagnose)."""
    from .correlate import correlate
    from .correlate.identity import build_identity
    from .correlate.ranks import (hosts_seen, job_files, ranks_seen, resolve, stream_activity, with_declared_file_ranks,
                                  with_pod_node_ranks)
    from .correlate.relations import relations_of

    read = [scan for scan in scans if not scan.error]
    all_skipped = list(skipped) + [Skipped(scan.input.display, scan.error) for scan in scans if scan.error]
    all_skipped += [Skipped(scan.input.display, note) for scan in read for note in _partial_notes(scan)]
    read_notes = [Skipped(scan.input.display, UNDECODABLE_NOTE) for scan in read if scan.stats.invalid_utf8]
    if not read:
        reasons = mask_secrets("; ".join(f"{item.source}: {item.reason}" for item in all_skipped))
        raise InputError(f"no readable input ({reasons})", "check the paths; binary or empty files are skipped")
    read = with_declared_file_ranks(with_pod_node_ranks(read))
    files = job_files(read)
    matches = resolve(read, files)
    stack = detect_stack(read, matches)
    matches = [match for match in matches if not is_stack_cue(match)]  # they say what ran, not who failed
    summary = InputSummary(
        files=tuple(scan.input.display for scan in read),
        lines=sum(scan.stats.lines for scan in read),
        bytes=sum(scan.stats.bytes for scan in read),
        ranks=tuple(ranks_seen(read, matches, files)),
        hosts=tuple(hosts_seen(read, matches, files)),
        skipped=tuple(all_skipped),
        read_notes=tuple(read_notes),
        timed=all(scan.last_time is not None for scan in read),
        first_time=min((scan.first_time for scan in read if scan.first_time is not None), default=None),
        last_time=max((scan.last_time for scan in read if scan.last_time is not None), default=None),
        spans=tuple((scan.input.display, scan.first_time, scan.last_time) for scan in read
                    if scan.first_time is not None and scan.last_time is not None),
        launched=tuple((scan.input.display, scan.first_launched) for scan in read if scan.first_launched),
    )
    # the number of each input's last line: a piece of a text that held several files (a post's code
    # block, tail's sections) numbers its lines as that text does, from its first_line
    source_lines = {scan.input.display: scan.input.first_line + scan.stats.lines - 1 for scan in read}
    identity = build_identity(matches, read, files.local_world, summary.ranks, files.hosts)
    activity = stream_activity(read, matches, files, identity)
    # one process, unless something else shows: a rank above 0 (a prefix, a file, a line that
    # names its rank: `rank 3: step 11`), a second host, a job size above one (launcher flags,
    # init lines), torchrun (it starts as many processes as it was asked to, which the logs may
    # not say), or the lines other processes print when a peer fails (collective timeouts, a
    # launcher stopping the others), or a traceback through a collective or DistributedDataParallel
    named = {stream.rank for stream in activity if stream.rank is not None}
    single_process = (set(summary.ranks) | set(identity.ranks) | named <= {0} and len(summary.hosts) <= 1
                      and (identity.world is None or identity.world.size <= 1)
                      and (files.local_world or 1) <= 1
                      and not any(item.id == "torchrun" for item in stack)
                      and not any(_peer_failed(match) or match.signature.name in PROCESS_GROUP_FRAMES for match in matches))
    diagnosis = correlate(matches, summary, single_process, source_lines, relations_of(kb or load_knowledge_base()),
                          activity, identity)
    diagnosis = replace(diagnosis, stack=stack)
    diagnosis = map_strings(diagnosis, masker or _memo(mask_secrets))  # lines are masked; the names of files are not yet
    return _mask_hosts(diagnosis) if mask_hosts else diagnosis


def _memo(change):
    """`change` remembered per distinct text for the walks of one diagnosis (a file name or a
    rank's state repeats once per rank). `change` is idempotent (masking masked text changes
    nothing): its outputs are remembered as their own, so a second walk does no work twice."""
    seen: dict = {}

    def changed(text: str) -> str:
        if text not in seen:
            seen[text] = result = change(text)
            seen.setdefault(result, result)
        return seen[text]

    return changed


def _peer_failed(match) -> bool:
    from .correlate.ids import PEER_CRASH

    return match.role == "collateral" and PEER_CRASH in (match.entry_id, match.signature.core_class)


def _partial_notes(scan: FileScan) -> list[str]:
    notes = []
    if scan.stats.truncated:
        notes.append(f"partly read: {scan.stats.truncated}")
    if scan.stats.long_lines:
        notes.append(f"{scan.stats.long_lines} line(s) longer than 64 KiB were cut to their first 64 KiB")
    return notes


UNDECODABLE_NOTE = "read, but not valid UTF-8: its undecodable bytes were replaced"


def _mask_hosts(diagnosis: Diagnosis) -> Diagnosis:
    """Replace host names and IPs everywhere in the diagnosis by stable pseudonyms."""
    masker = HostMasker()
    hosts = set(diagnosis.inputs.hosts)
    return map_strings(diagnosis, lambda text: masker.mask_text(text, hosts))
