"""Cross-rank flight-recorder analysis: real gloo dumps, and exact-format NCCL-style dumps."""
from pathlib import Path

from fr_builder import dump, entry, files, write_dumps

from firstfault.dumps.analysis import analyze_flight_recorder
from firstfault.dumps.flight_recorder import load_dump


def _analyze(paths, world_size=None):
    return analyze_flight_recorder([load_dump(path) for path in paths], world_size)


def test_real_hang_names_the_silent_rank(sleep_case):
    result = _analyze(files(sleep_case, "fr_trace_rank_?"))
    assert result.collective.seq_id == 4
    assert result.collective.op == "gloo:all_reduce"
    assert (result.collective.pg_id, result.collective.pg_desc) == ("0", "default_pg")
    assert result.silent_ranks == (2,)
    assert result.waiting_ranks == (0, 1, 3)
    assert result.stuck_ranks == () and result.mismatch == () and result.missing_dumps == ()
    assert result.named_ranks == (2,)
    assert result.named_by == "flight recorder"
    position = {p.rank: p for p in result.positions}[2]
    assert (position.seq_id, position.state) == (3, "completed")
    assert position.frames[0].function == "all_reduce"
    assert result.explanation[0].startswith("Rank 2 never entered gloo:all_reduce seq 4")
    assert any("called from sync (hang_job.py:60)" in line for line in result.explanation)


def test_real_json_dumps_give_the_same_answer(sleep_case):
    result = _analyze(files(sleep_case, "fr_trace_rank_?.json"))
    assert result.silent_ranks == (2,) and result.collective.seq_id == 4


def test_real_mismatched_op(op_case):
    result = _analyze(files(op_case, "fr_trace_rank_?"))
    assert result.collective.seq_id == 4
    assert [item.field for item in result.mismatch] == ["op"]
    op = result.mismatch[0]
    assert op.values == (("gloo:all_reduce", (0, 1, 3)), ("gloo:broadcast", (2,)))
    assert op.odd_ranks == (2,)
    assert result.silent_ranks == () and result.waiting_ranks == (0, 1, 3)
    assert result.named_ranks == (2,)


def test_missing_dump_of_the_silent_rank_is_suspected(sleep_case):
    paths = [path for path in files(sleep_case, "fr_trace_rank_?") if not path.endswith("_2")]
    result = _analyze(paths)
    assert result.missing_dumps == (2,)
    assert result.silent_ranks == ()
    assert result.suspected_ranks == (2,)
    assert result.named_ranks == (2,)
    assert any("left no dump and is the likely silent rank" in line for line in result.explanation)
    assert any(line.startswith("No dump from rank 2") for line in result.explanation)


def test_world_size_adds_expected_ranks(sleep_case):
    result = _analyze(files(sleep_case, "fr_trace_rank_?"), world_size=6)
    assert result.missing_dumps == (4, 5)
    assert result.silent_ranks == (2,)


def test_size_mismatch(tmp_path: Path):
    healthy = [entry(1), entry(2), entry(3, state="started")]
    odd = [entry(1), entry(2), entry(3, state="started", sizes=((4, 4),))]
    paths = write_dumps(tmp_path, {0: dump(healthy), 1: dump(healthy), 2: dump(odd),
                                   3: dump(healthy)})
    result = _analyze(paths)
    assert result.collective.seq_id == 3 and result.collective.op == "nccl:all_reduce"
    fields = {item.field: item for item in result.mismatch}
    assert set(fields) == {"input_sizes", "output_sizes"}
    assert fields["input_sizes"].values == (("[[8, 4]]", (0, 1, 3)), ("[[4, 4]]", (2,)))
    assert result.named_ranks == (2,)


def test_dtype_mismatch(tmp_path: Path):
    healthy = [entry(1), entry(2, state="started")]
    odd = [entry(1), entry(2, state="started", dtype="BFloat16")]
    result = _analyze(write_dumps(tmp_path, {0: dump(healthy, (0, 1)), 1: dump(odd, (0, 1))}))
    dtypes = {item.field: item for item in result.mismatch}["input_dtypes"]
    assert dtypes.odd_ranks == ()  # one against one: the dumps cannot say which is wrong
    assert result.named_ranks == ()


def test_stuck_rank_started_and_never_completed(tmp_path: Path):
    done = [entry(1), entry(2), entry(3)]
    stuck = [entry(1), entry(2), entry(3, state="started")]
    result = _analyze(write_dumps(tmp_path, {0: dump(done), 1: dump(stuck), 2: dump(done),
                                             3: dump(done)}))
    assert result.collective.seq_id == 3
    assert result.stuck_ranks == (1,)
    assert result.silent_ranks == () and result.mismatch == ()
    assert result.named_ranks == (1,)


def test_rank_whose_collective_never_started_on_device(tmp_path: Path):
    started = [entry(1), entry(2, state="started")]
    lagging = [entry(1), entry(2, state="scheduled")]
    result = _analyze(write_dumps(tmp_path, {0: dump(started), 1: dump(started),
                                             2: dump(lagging), 3: dump(started)}))
    assert result.stuck_ranks == (2,)
    assert result.waiting_ranks == (0, 1, 3)


def test_all_entered_none_completed_names_nobody(tmp_path: Path):
    same = [entry(1), entry(2, state="started")]
    result = _analyze(write_dumps(tmp_path, {rank: dump(same) for rank in range(4)}))
    assert result.collective.seq_id == 2
    assert result.named_ranks == ()
    assert any("single out no rank" in line for line in result.explanation)


def test_healthy_dumps_agree(tmp_path: Path):
    same = [entry(1), entry(2), entry(3)]
    result = _analyze(write_dumps(tmp_path, {rank: dump(same) for rank in range(4)}))
    assert result.collective is None and result.named_ranks == ()
    assert "agree" in result.explanation[0]


def test_ring_buffer_window_ignores_evicted_entries(tmp_path: Path):
    """Rank 0's buffer lost seq 1-2; that is not a disagreement, rank 3 stopping at 4 is."""
    full = [entry(seq) for seq in range(1, 6)]
    full[-1] = entry(5, state="started")
    short = [entry(seq) for seq in range(3, 6)]
    short[-1] = entry(5, state="started")
    silent = [entry(seq) for seq in range(1, 5)]
    result = _analyze(write_dumps(tmp_path, {0: dump(short), 1: dump(full), 2: dump(full),
                                             3: dump(silent)}))
    assert result.collective.seq_id == 5
    assert result.silent_ranks == (3,)
    assert result.waiting_ranks == (0, 1, 2)


def test_the_earliest_diverging_group_wins(tmp_path: Path):
    """Ranks 0-1 also use group 1; rank 1 never joins its seq 2, which came first."""
    sub = ("1", "tp")
    rank0 = [entry(1), entry(1, pg=sub, pg_id=1, record_id=1),
             entry(2, pg=sub, pg_id=1, state="started", record_id=2),
             entry(2, state="scheduled", record_id=3)]
    rank1 = [entry(1), entry(1, pg=sub, pg_id=1, record_id=1)]
    others = [entry(1), entry(2, state="started", record_id=3)]
    per_rank = {0: dump(rank0), 1: dump(rank1), 2: dump(others), 3: dump(others)}
    for raw in per_rank.values():
        raw["pg_config"]["1"] = {"name": "1", "desc": "tp", "ranks": "[0, 1]"}
    result = _analyze(write_dumps(tmp_path, per_rank))
    assert (result.collective.pg_id, result.collective.seq_id) == ("1", 2)
    assert result.silent_ranks == (1,)
    assert any("Process group 0 also diverges" in line for line in result.explanation)


def test_dump_without_rank_in_name_is_left_out(tmp_path: Path, sleep_case):
    nameless = tmp_path / "trace.pkl"
    nameless.write_bytes((sleep_case / "fr_trace_rank_0").read_bytes())
    result = _analyze([str(nameless)] + files(sleep_case, "fr_trace_rank_?"))
    assert result.silent_ranks == (2,)
    assert any("no rank in the file name" in line for line in result.explanation)


def test_no_dump_at_all():
    result = analyze_flight_recorder([])
    assert result.collective is None
    assert result.explanation == ("No flight-recorder dump could be read.",)


def test_p2p_entries_are_not_compared(tmp_path: Path):
    send = entry(1, op="nccl:send", state="started")
    send.update(is_p2p=True, p2p_seq_id=1, collective_seq_id=0)
    same = [entry(1), send]
    result = _analyze(write_dumps(tmp_path, {0: dump(same, (0, 1)), 1: dump([entry(1)], (0, 1))}))
    assert result.collective is None
    assert any("not compared across ranks" in line for line in result.explanation)


def test_group_entries_lost_to_the_shared_ring_buffer_are_not_silence(tmp_path: Path):
    """Rank 1 kept only newer entries of another group: it may have entered seq 1 of group 0."""
    rank0 = [entry(1, state="started", record_id=0)]
    newer = [entry(seq, pg=("1", "tp"), pg_id=1, record_id=10 + seq) for seq in (1, 2)]
    result = _analyze(write_dumps(tmp_path, {0: dump(rank0, (0, 1)), 1: dump(newer, (0, 1))}))
    assert result.silent_ranks == ()


def test_rank_with_older_entries_and_no_entry_of_the_group_is_silent(tmp_path: Path):
    rank0 = [entry(1, state="started", record_id=5)]
    older = [entry(1, pg=("1", "tp"), pg_id=1, record_id=0)]
    result = _analyze(write_dumps(tmp_path, {0: dump(rank0, (0, 1)), 1: dump(older, (0, 1))}))
    assert result.silent_ranks == (1,)


def test_gloo_status_lagging_behind_retired_entries(tmp_path: Path):
    """Seen on a busy host: rank 0's pg_status still said collective 1 was its last completed,
    while its entries 2 and 3 were retired (over). Read by the status alone, rank 0 looked stuck
    in collective 2; the retired entries say it waited in 4 like rank 2, and rank 1 never came."""
    def gloo(seqs, last):
        raw = dump([entry(seq, "gloo:all_reduce", "scheduled") for seq in seqs], ranks=(0, 1, 2))
        for item in raw["entries"]:
            item["retired"] = item["collective_seq_id"] <= last
        raw["pg_status"]["0"]["last_completed_collective"] = last
        return raw
    lagging = gloo((1, 2, 3, 4), 3)
    lagging["pg_status"]["0"]["last_completed_collective"] = 1
    paths = write_dumps(tmp_path, {0: lagging, 1: gloo((1, 2, 3), 3), 2: gloo((1, 2, 3, 4), 3)})
    result = _analyze(paths)
    assert (result.collective.seq_id, result.silent_ranks, result.stuck_ranks) == (4, (1,), ())
    assert result.waiting_ranks == (0, 2)
