"""Loading flight-recorder dumps: real pickle and JSON, and hostile or wrong files refused."""
import os
import pickle
import pickletools

import pytest

from firstfault.dumps.flight_recorder import load_dump, parse_dump
from firstfault.dumps.sniff import looks_like_dump
from firstfault.errors import InputError


def test_real_pickle_dump_loads_with_rank_from_name(sleep_case):
    dump = load_dump(str(sleep_case / "fr_trace_rank_0"))
    assert dump.rank == 0
    assert dump.version == "2.10"
    assert dump.pg_ranks == {"": (0, 1, 2, 3)}
    assert [entry.collective_seq_id for entry in dump.entries] == [1, 2, 3, 4]
    last = dump.entries[-1]
    assert last.profiling_name == "gloo:all_reduce"
    assert (last.pg_id, last.pg_name, last.pg_desc) == ("0", "0", "default_pg")
    assert last.input_sizes == ((8, 4),) and last.input_dtypes == ("Float",)
    assert last.frames[0].function == "all_reduce"
    # gloo leaves every state "scheduled"; pg_status says what completed
    assert dump.completed(dump.entries[2]) and not dump.completed(last)


def test_json_form_reads_the_same_as_the_pickle(sleep_case):
    from_pickle = load_dump(str(sleep_case / "fr_trace_rank_1"))
    from_json = load_dump(str(sleep_case / "fr_trace_rank_1.json"))
    assert from_json.rank == 1
    assert from_json.pg_status == from_pickle.pg_status  # strings in JSON, ints in pickle
    assert _essentials(from_json) == _essentials(from_pickle)
    assert from_json.entries[0].frames == ()  # the JSON writer leaves stacks out


def _essentials(dump):
    return [(e.collective_seq_id, e.profiling_name, e.input_sizes, e.state, e.pg_name, e.pg_desc)
            for e in dump.entries]


def test_real_dump_has_no_global_opcode(sleep_case):
    """What the refusing loader relies on: c10d's pickler writes only plain values."""
    data = (sleep_case / "fr_trace_rank_0").read_bytes()
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    assert not ops & {"GLOBAL", "STACK_GLOBAL", "REDUCE", "INST", "OBJ", "NEWOBJ", "BUILD"}


class _TouchFile:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_malicious_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"version": "2.10", "entries": [_TouchFile(marker)]}, protocol=2)
    path = tmp_path / "fr_trace_rank_0"
    path.write_bytes(payload)
    with pytest.raises(InputError) as caught:
        load_dump(str(path))
    assert "refused" in caught.value.message and "system" in caught.value.message
    assert "\n" not in caught.value.message
    assert not marker.exists()
    pickle.loads(payload)  # the same bytes under the stock unpickler do run:
    assert marker.exists()  # proof the payload was live


@pytest.mark.parametrize("payload", [
    b"cos\nsystem\n(S'true'\ntR.",  # protocol 0 GLOBAL + REDUCE
    b"(S'true'\nios\nsystem\n.",  # protocol 0 INST
    b"\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x8c\x04eval\x93\x8c\x04"
    b"1+1\x85R.",  # protocol 4 STACK_GLOBAL
    b"\x80\x02P0\n.",  # persistent id
])
def test_every_route_to_a_callable_is_refused(payload):
    with pytest.raises(InputError):
        parse_dump(payload, "evil", 0)


def test_truncated_pickle_is_one_line_error(sleep_case):
    data = (sleep_case / "fr_trace_rank_0").read_bytes()[:300]
    with pytest.raises(InputError) as caught:
        parse_dump(data, "cut", 0)
    assert caught.value.message.startswith("cut: refused pickle")


def test_plain_values_that_are_not_a_dump(tmp_path):
    path = tmp_path / "other.pkl"
    path.write_bytes(pickle.dumps({"weights": [1, 2]}, protocol=2))
    with pytest.raises(InputError) as caught:
        load_dump(str(path))
    assert "not a flight-recorder dump" in caught.value.message
    assert caught.value.hint


def test_text_file_is_not_a_dump(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("[rank0] step 1 loss 3.2\n")
    with pytest.raises(InputError) as caught:
        load_dump(str(path))
    assert caught.value.message.startswith(f"{path}: not a flight-recorder dump")


def test_size_limit(sleep_case):
    with pytest.raises(InputError) as caught:
        load_dump(str(sleep_case / "fr_trace_rank_0"), max_bytes=100)
    assert "over the 100-byte limit" in caught.value.message


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(InputError) as caught:
        load_dump(str(tmp_path / "absent_rank_3"))
    assert "cannot read" in caught.value.message


def test_looks_like_dump_on_real_heads(sleep_case):
    assert looks_like_dump((sleep_case / "fr_trace_rank_0").read_bytes()[:4096])
    assert looks_like_dump((sleep_case / "fr_trace_rank_0.json").read_bytes()[:4096])
    assert not looks_like_dump((sleep_case / "torchrun.log").read_bytes()[:4096])
    assert not looks_like_dump(b'{"loss": 1.0}')
