"""The follower: growth, partial lines, new files, rotation by rename, copytruncate, binary files."""
from __future__ import annotations

import os

from firstfault.watch.follower import Follower


def _data(chunks) -> bytes:
    return b"".join(chunk.data for chunk in chunks if not chunk.record)


def test_growth_and_partial_lines(tmp_path):
    log = tmp_path / "rank0.log"
    log.write_bytes(b"one\ntw")
    follower = Follower([str(log)])
    assert _data(follower.poll()) == b"one\n"
    assert _data(follower.poll()) == b""
    with open(log, "ab") as handle:
        handle.write(b"o\nthree\n")
    assert _data(follower.poll()) == b"two\nthree\n"


def test_file_that_appears_later_and_new_files_in_folder(tmp_path):
    follower = Follower([str(tmp_path / "later.log"), str(tmp_path / "dir")])
    assert follower.poll() == []
    (tmp_path / "later.log").write_bytes(b"a\n")
    (tmp_path / "dir" / "attempt_0" / "1").mkdir(parents=True)
    (tmp_path / "dir" / "attempt_0" / "1" / "stderr.log").write_bytes(b"b\n")
    (tmp_path / "dir" / ".hidden").write_bytes(b"secret\n")
    chunks = follower.poll()
    assert {(chunk.relative, chunk.data) for chunk in chunks} == {
        ("later.log", b"a\n"), (os.path.join("attempt_0", "1", "stderr.log"), b"b\n")}


def test_rotation_by_rename_drains_the_old_file_and_follows_the_new(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"1\n")
    follower = Follower([str(log)])
    assert _data(follower.poll()) == b"1\n"
    with open(log, "ab") as handle:
        handle.write(b"2\n")  # written just before the rotation, not yet read
    log.rename(tmp_path / "train.log.1")
    log.write_bytes(b"3\n")
    chunks = follower.poll()
    assert _data(chunks) == b"2\n3\n"
    keys = {chunk.key for chunk in chunks}
    assert len(keys) == 2  # the new file is a new generation: its own scan, its own line numbers


def test_rename_inside_a_watched_folder_is_not_read_twice(tmp_path):
    (tmp_path / "train.log").write_bytes(b"1\n")
    follower = Follower([str(tmp_path)])
    first = follower.poll()
    (tmp_path / "train.log").rename(tmp_path / "train.log.1")
    with open(tmp_path / "train.log.1", "ab") as handle:
        handle.write(b"2\n")
    chunks = follower.poll()
    assert _data(chunks) == b"2\n"
    assert chunks[0].key == first[0].key and chunks[0].display.endswith("train.log.1")


def test_truncation_restarts_from_the_start(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"old line one\nold line two\n")
    follower = Follower([str(log)])
    first = follower.poll()
    log.write_bytes(b"new\n")  # copytruncate: same inode, shorter
    chunks = follower.poll()
    assert _data(chunks) == b"new\n"
    assert chunks[0].key != first[0].key
    assert any(event.what == "truncated" for event in follower.events)


def test_binary_and_compressed_files_are_skipped(tmp_path):
    (tmp_path / "core").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "old.log.gz").write_bytes(b"\x1f\x8b\x08")
    (tmp_path / "ok.log").write_bytes(b"fine\n")
    follower = Follower([str(tmp_path)])
    assert _data(follower.poll()) == b"fine\n"
    skipped = {os.path.basename(event.display) for event in follower.events if event.what.startswith("skipped")}
    assert skipped == {"core", "old.log.gz"}


def test_json_files_are_read_whole_as_records(tmp_path):
    record = tmp_path / "error.json"
    record.write_text('{"message": {"message": "X"')
    follower = Follower([str(tmp_path)])
    chunks = follower.poll()
    assert chunks[0].record
    assert follower.poll() == []  # unchanged: not read again
    record.write_text('{"message": {"message": "X", "extraInfo": {}}}')
    assert follower.poll()[0].data.endswith(b"}}}")


def test_close_returns_a_final_partial_line(tmp_path):
    log = tmp_path / "rank0.log"
    log.write_bytes(b"a\nno newline")
    follower = Follower([str(log)])
    assert _data(follower.poll()) == b"a\n"
    assert _data(follower.close()) == b"no newline\n"


def test_a_record_replaced_whole_is_read_again_quietly(tmp_path):
    record = tmp_path / "rank1.json"
    record.write_text('{"message": {"message": "A", "extraInfo": {}}}')
    follower = Follower([str(tmp_path)])
    first = follower.poll()
    replacement = tmp_path / ".rank1.json.tmp"
    replacement.write_text('{"message": {"message": "B", "extraInfo": {}}}')
    os.replace(replacement, record)
    chunks = follower.poll()
    assert chunks[0].record and b'"B"' in chunks[0].data and chunks[0].key != first[0].key
    assert not [event for event in follower.events if event.what in ("rotated", "gone")]
