"""Many inputs scanned across processes give what one process gives, in input order."""
from __future__ import annotations

import time

from firstfault.ingest.sources import InputFile, expand_inputs
from firstfault.match import parallel
from firstfault.match.scanner import Scanner


def summary(scans):
    return [(scan.input.display, [(h.line, h.signature.key, h.time) for h in scan.hits], scan.global_ranks,
             scan.nccl_hosts, scan.stats.lines, scan.first_time, scan.last_time) for scan in scans]


class Recorder:
    def __init__(self):
        self.events = []

    def file_started(self, item, index, total):
        self.events.append(("start", index, total))

    def file_finished(self, scan):
        self.events.append(("done", scan.input.display))


def test_parallel_equals_serial(ranks_corpus, signatures):
    inputs, _ = expand_inputs([str(ranks_corpus)])
    inputs = [item for item in inputs if item.path.suffix == ".log"]
    serial = parallel.scan_files(Scanner(signatures), inputs, workers=1)
    recorder = Recorder()
    spread = parallel.scan_files(Scanner(signatures), inputs, recorder, workers=2)
    assert summary(spread) == summary(serial)
    assert [event[1] for event in recorder.events if event[0] == "start"] == list(range(len(inputs)))
    assert [event[1] for event in recorder.events if event[0] == "done"] == [item.display for item in inputs]


def test_small_inputs_stay_in_process(ranks_corpus):
    inputs, _ = expand_inputs([str(ranks_corpus)])
    assert parallel.worker_count(inputs) == 1  # well under PARALLEL_MIN_BYTES


class BytesRecorder(Recorder):
    """An observer that also follows bytes in flight (the terminal's progress line)."""

    def bytes_in_flight(self, count):
        self.events.append(("bytes", count))


def test_many_files_with_a_progress_observer(tmp_path, signatures):
    """Enough files that the pool hands them out in groups (schedule.groups_by_share): every file is
    reported, in input order."""
    for rank in range(64):
        (tmp_path / f"rank{rank}.log").write_text(f"[rank{rank}]: step 1 loss 2.0\n" * 50)
    inputs, _ = expand_inputs([str(tmp_path)])
    recorder = BytesRecorder()
    scans = parallel.scan_files(Scanner(signatures), inputs, recorder, workers=2)
    assert [scan.input.display for scan in scans] == [item.display for item in inputs]
    assert [event[1] for event in recorder.events if event[0] == "done"] == [item.display for item in inputs]


def test_each_cut_files_last_part_goes_to_the_workers_first_and_results_come_back_in_order():
    from firstfault.match.parallel import _InUnitOrder, _last_parts_first
    from firstfault.match.split import Part

    def parts(count):
        return [Part(index, index * 10, None if index == count - 1 else (index + 1) * 10, None, index == count - 1)
                for index in range(count)]

    units = [("whole.log", None, False), *[("big.log", part, False) for part in parts(4)],
             ("small.log", None, False), *[("other.log", part, False) for part in parts(2)]]
    order = _last_parts_first(units)
    assert order == [0, 4, 1, 2, 3, 5, 7, 6]

    class Arrivals:  # what Pool.imap gives: results in the order the units were handed out
        def __init__(self):
            self.given = iter(units[index] for index in order)

        def next(self, timeout=None):
            return next(self.given)

    again = _InUnitOrder(Arrivals(), order)
    assert [again.next(timeout=0.1) for _ in units] == units


def test_a_pasted_piece_among_files_on_disk_does_not_keep_the_job_in_one_process(tmp_path, monkeypatch):
    """A text rewritten in memory (ingest.pasted: a margin, a wrap, files pasted as one) travels
    to the workers with its input; stdin, or uploads alone, stay in this process."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1024)
    for rank in range(8):
        (tmp_path / f"rank{rank}.log").write_text(f"[rank{rank}]: step 1 loss 2.0\n" * 100)
    inputs, _ = expand_inputs([str(tmp_path)])
    piece = InputFile(display="pasted.txt (rank9.log)", relative="rank9.log", content=b"step 1\n" * 100)
    monkeypatch.setenv(parallel.WORKERS_VARIABLE, "2")
    assert parallel.worker_count(inputs + [piece]) == 2
    assert parallel.worker_count([piece] * 8) == 1
    assert parallel.worker_count(inputs + [InputFile(display="<stdin>", relative="stdin", is_stdin=True)]) == 1


def test_the_workers_take_the_first_files_year_and_this_process_works_meanwhile(tmp_path, signatures):
    """The pool starts before the first file is scanned here; the year that file's dates give
    reaches the workers with their groups (for a kernel log's times, written without one), and
    the main process runs its own work while they scan."""
    (tmp_path / "a-train.log").write_text("2024-03-01 10:00:00,000 INFO step 1 loss 2.0\n")
    for node in range(4):
        (tmp_path / f"dmesg-node{node}.txt").write_text(
            f"Mar  1 10:00:0{node} node{node} kernel: Out of memory: Killed process {4000 + node} (python3) "
            "total-vm:1078536kB, anon-rss:473580kB\n" * 20)
    inputs, _ = expand_inputs([str(tmp_path)])
    assert inputs[0].display.endswith("a-train.log")
    calls = []
    serial = parallel.scan_files(Scanner(signatures), inputs, workers=1, meanwhile=lambda: calls.append("serial"))
    spread = parallel.scan_files(Scanner(signatures), inputs, workers=2, meanwhile=lambda: calls.append("spread"))
    assert summary(spread) == summary(serial)
    killed = [hit.time for scan in spread[1:] for hit in scan.hits]
    assert killed and all(time.gmtime(seconds).tm_year == 2024 for seconds in killed)
    assert calls == ["spread"]


def test_a_file_read_from_a_wrong_year_guess_is_read_again_as_a_serial_read_gives_it(tmp_path, signatures, monkeypatch):
    """The workers start at once, from a guess of the year (the first input's first full date);
    a serial read carries the first full date it *parsed*. When they differ, the files whose
    times have no year (a kernel log's) are read again here; the others are kept as they came."""
    (tmp_path / "a-train.log").write_text("2023-12-31 23:59:00 INFO resumed from the checkpoint of last year\n"
                                          + "2024-03-01 10:00:00,000 INFO step 1 loss 2.0\n" * 200)
    for node in range(4):
        (tmp_path / f"dmesg-node{node}.txt").write_text(
            f"Mar  1 10:00:0{node} node{node} kernel: Out of memory: Killed process {4000 + node} (python3) "
            "total-vm:1078536kB, anon-rss:473580kB\n" * 20)
    (tmp_path / "z-train.log").write_text("2024-03-01 10:00:05,000 INFO step 2 loss 1.9\n" * 20)
    inputs, _ = expand_inputs([str(tmp_path)])
    serial_scanner = Scanner(signatures)
    serial = parallel.scan_files(serial_scanner, inputs, workers=1)
    read_again = []
    original = parallel._read_again
    monkeypatch.setattr(parallel, "_read_again", lambda scanner, item, year: read_again.append(item.display) or
                        original(scanner, item, year))
    spread_scanner = Scanner(signatures)
    spread = parallel.scan_files(spread_scanner, inputs, workers=2)
    assert summary(spread) == summary(serial)
    killed = [hit.time for scan in spread[1:] for hit in scan.hits]
    assert killed and all(time.gmtime(seconds).tm_year == 2024 for seconds in killed)
    assert sorted(read_again) == sorted(item.display for item in inputs if "dmesg" in item.display)
    assert spread_scanner.clock.reference_year == serial_scanner.clock.reference_year == 2024
