"""analyze_files: which inputs are dumps, what they say together, what was missing."""
import os
import pickle
import shutil

from fr_builder import files

from firstfault.dumps import analyze_files, classify
from firstfault.dumps.discover import FLIGHT_RECORDER_KIND, STACKS_KIND


def _head(path):
    with open(path, "rb") as stream:
        return stream.read(65536)


def test_classify_real_files(sleep_case):
    kinds = {os.path.basename(path): classify(path, _head(path)) for path in files(sleep_case)}
    assert kinds["fr_trace_rank_0"] == FLIGHT_RECORDER_KIND
    assert kinds["fr_trace_rank_0.json"] == FLIGHT_RECORDER_KIND
    assert kinds["pyspy_rank0.txt"] == STACKS_KIND
    assert kinds["faulthandler_rank0.txt"] == STACKS_KIND
    assert kinds["torchrun.log"] is None


def test_whole_folder_names_the_silent_rank_from_both_evidences(sleep_case):
    report = analyze_files(files(sleep_case))
    assert report.named_ranks == (2,)
    assert report.named_by == ("flight recorder", "stack dumps")
    assert str(sleep_case / "torchrun.log") not in report.consumed
    assert len(report.consumed) == 16 and report.skipped == ()
    assert report.flight_recorder.silent_ranks == (2,)
    assert report.stacks.odd_ranks == (2,)
    assert "The flight recorder and the stack dumps both point at rank 2." in report.explanation


def test_only_logs_gives_an_empty_report(sleep_case):
    report = analyze_files([str(sleep_case / "torchrun.log")])
    assert report.consumed == () and report.named_ranks == ()
    assert report.flight_recorder is None and report.stacks is None


def test_missing_dump_and_missing_stack_are_said(sleep_case, tmp_path):
    for path in files(sleep_case):
        if "2" not in os.path.basename(path):
            shutil.copy(path, tmp_path)
    report = analyze_files(files(tmp_path))
    assert report.flight_recorder.missing_dumps == (2,)
    assert report.named_ranks == (2,)
    assert report.named_by == ("flight recorder",)
    assert any(line.startswith("No dump from rank 2") for line in report.explanation)
    assert any(line.startswith("No stack dump from rank 2") for line in report.explanation)


def test_stacks_alone_still_name_the_rank(sleep_case):
    report = analyze_files(files(sleep_case, "pyspy_rank*.txt"))
    assert report.named_ranks == (2,) and report.named_by == ("stack dumps",)
    assert any(line.startswith("No flight-recorder dump") for line in report.explanation)


class _Payload:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_malicious_pickle_among_inputs_is_taken_refused_and_inert(sleep_case, tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil_rank_9.pkl"
    evil.write_bytes(pickle.dumps([_Payload(marker)], protocol=4))
    report = analyze_files(files(sleep_case, "fr_trace_rank_?") + [str(evil)])
    assert str(evil) in report.consumed  # never handed on as a log
    assert report.skipped[0][0] == str(evil) and "refused" in report.skipped[0][1]
    assert not marker.exists()
    assert report.flight_recorder.silent_ranks == (2,)


def test_unreadable_path_is_left_to_the_engine(tmp_path):
    report = analyze_files([str(tmp_path / "nope.log")])
    assert report.consumed == () and report.skipped == ()


def test_in_memory_contents_give_the_same_report(sleep_case):
    from firstfault.dumps import analyze_contents

    named = [(path.rsplit("/", 1)[-1], open(path, "rb").read()) for path in files(sleep_case)]
    report = analyze_contents(named)
    assert report.named_ranks == (2,)
    assert report.named_by == ("flight recorder", "stack dumps")
    assert "torchrun.log" not in report.consumed and len(report.consumed) == 16


def test_in_memory_size_limit(sleep_case):
    from firstfault.dumps import analyze_contents

    data = (sleep_case / "fr_trace_rank_0").read_bytes()
    report = analyze_contents([("fr_trace_rank_0", data)], max_bytes=100)
    assert report.consumed == ("fr_trace_rank_0",)
    assert "over the 100-byte limit" in report.skipped[0][1]


def test_the_cheap_sniff_keeps_every_file_classify_takes(sleep_case):
    # the pipeline sends only the sniff's candidates to classify: a dump it dropped would be
    # read as a log. Every real dump and log the repository holds, and the real dump set.
    from pathlib import Path

    from firstfault.dumps.sniff import dump_candidates

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    paths = [str(path) for path in sorted(fixtures.rglob("*")) if path.is_file()] + list(files(sleep_case))
    taken = [path for path in paths if classify(path, _head(path)) is not None]
    assert len(taken) >= 10  # the corpora hold real dumps (flight recorder, py-spy, faulthandler)
    candidates = {path for path, _head in dump_candidates(paths)}
    assert [path for path in taken if path not in candidates] == []
    # and it leaves logs with no stack-like line out (what makes it worth having: the dump
    # reader is then not even loaded); a line that ends in ')' may be a py-spy frame
    assert str(fixtures / "dev" / "README.md") not in candidates
    assert len(candidates) < len(paths)
