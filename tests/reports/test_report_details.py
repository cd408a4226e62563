"""Details of the reports that decide whether a reader trusts them (issue 14, item 10)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from firstfault.pipeline import diagnose_paths
from firstfault.render.diagnosis_text import clip, source_labels

from .conftest import FIRST_USER, REPO, run_cli

REAL = REPO / "tests" / "fixtures" / "real"
TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    main()\n'
             '  File "train.py", line 8, in main\n    x = batch["labels"]\nKeyError: \'labels\'\n')


# -- evidence lines are cut at a word, with an ellipsis ---------------------------------------

def test_clip_cuts_at_a_word_boundary_and_says_so():
    text = "CUDA out of memory. " + "Tried to allocate 3.91 GiB on a device that is full. " * 10
    cut = clip(text, 100)
    assert len(cut) <= 100 and cut.endswith("…")
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " "  # the next character was a space
    assert clip("short line  ", 100) == "short line"
    assert clip("x" * 400, 100) == "x" * 99 + "…"  # one unbroken token is cut where it is


def test_reports_never_end_a_quoted_line_mid_word():
    log = FIRST_USER / "oom4" / "console.log"
    original = {index + 1: line for index, line in enumerate(log.read_text().splitlines())}
    for fmt in ("terminal", "markdown"):
        out = run_cli("diagnose", str(log), "--format", fmt).stdout.decode()
        for number, quoted in re.findall(r"console\.log:(\d+)`?\s+\S.*?(?:\] |: `)(.*?)`?$", out, re.M):
            if quoted.endswith("…"):
                kept = quoted[:-1].rstrip()
                start = original[int(number)].index(kept)
                assert original[int(number)][start + len(kept)] == " ", quoted
            else:
                assert quoted.strip() in original[int(number)]


# -- skipped inputs: said once, on stderr; torchrun's empty per-worker files are not warned about --

def test_skipped_is_said_once_on_stderr(tmp_path):
    (tmp_path / "train.log").write_text(TRACEBACK)
    (tmp_path / "empty.log").write_text("")
    result = run_cli("diagnose", str(tmp_path))
    assert result.stderr.decode().count("empty.log") == 1
    assert "Skipped" not in result.stdout.decode() and "empty.log" not in result.stdout.decode()
    markdown = run_cli("diagnose", str(tmp_path), "--format", "markdown")
    assert "empty.log" not in markdown.stdout.decode() and markdown.stderr.decode().count("empty.log") == 1
    contract = json.loads(run_cli("diagnose", str(tmp_path), "--format", "json").stdout)
    assert [item["reason"] for item in contract["inputs"]["skipped"]] == ["empty file"]  # the data keeps it


def test_torchruns_empty_worker_files_are_counted_not_warned():
    logs = REAL / "exc-missing-key-logdir-ws3" / "logs"
    empty = [path for path in logs.rglob("std*.log") if path.stat().st_size == 0]
    assert empty, "the fixture has torchrun's empty stdout.log files"
    result = run_cli("diagnose", str(logs))
    assert "skipped" not in result.stderr.decode()
    assert f"(and {len(empty)} empty torchrun stdout/stderr files)" in result.stdout.decode()
    contract = json.loads(run_cli("diagnose", str(logs), "--format", "json").stdout)
    assert len(contract["inputs"]["skipped"]) == len(empty)


def test_an_empty_file_outside_torchruns_layout_is_still_warned(tmp_path):
    folder = tmp_path / "attempt_0" / "0"
    folder.mkdir(parents=True)
    (folder / "stderr.log").write_text(TRACEBACK)
    (folder / "notes.txt").write_text("")
    assert "notes.txt: empty file" in run_cli("diagnose", str(tmp_path)).stderr.decode()


# -- times: Z only when the log gave a zone ----------------------------------------------------

@pytest.mark.parametrize("stamp,printed", [
    ("2024-11-04 10:11:12,207", "2024-11-04T10:11:12.207"),
    ("2024-11-04T10:11:12.207Z", "2024-11-04T10:11:12.207Z"),
    ("2024-11-04T12:11:12.207+02:00", "2024-11-04T10:11:12.207Z"),
])
def test_times_carry_z_only_when_the_log_gave_a_zone(tmp_path, stamp, printed):
    log = tmp_path / "rank3.log"
    log.write_text(f"{stamp} INFO step 1\n{stamp} ERROR RuntimeError: CUDA error: an illegal memory access was encountered\n")
    terminal = run_cli("diagnose", str(log)).stdout.decode()
    assert f" at {printed} (" in terminal
    contract = json.loads(run_cli("diagnose", str(log), "--format", "json").stdout)
    assert contract["primary"]["initiating"]["time"] == printed


# -- rank lists, cross-file order --------------------------------------------------------------

def test_no_rank_list_is_printed_when_no_rank_was_seen():
    terminal = run_cli("diagnose", str(FIRST_USER / "healthy2")).stdout.decode()
    assert "ranks none" not in terminal and "ranks" not in terminal.splitlines()[-1]


def test_cross_file_order(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    (one / "rank0.log").write_text(TRACEBACK)
    contract = json.loads(run_cli("diagnose", str(one), "--format", "json").stdout)
    assert contract["inputs"]["cross_file_order"] is None  # one file: there is no order across files
    (one / "rank1.log").write_text("2024-11-04 10:11:12,207 INFO step 1\n")
    contract = json.loads(run_cli("diagnose", str(one), "--format", "json").stdout)
    assert contract["inputs"]["cross_file_order"] == "uncertain"


# -- confidence ----------------------------------------------------------------------------------

def test_a_clear_cut_traceback_is_shown_with_the_engines_high_confidence(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(TRACEBACK)
    contract = json.loads(run_cli("diagnose", str(log), "--format", "json").stdout)
    assert contract["primary"]["failure_id"] == "user-code-exception"
    assert contract["primary"]["confidence"] >= 0.9
    assert "confidence 0.90" in run_cli("diagnose", str(log)).stdout.decode()


def test_a_bare_exception_line_without_its_traceback_stays_uncertain(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("2024-11-04 10:11:12,207 ERROR KeyError: 'labels'\n")
    contract = json.loads(run_cli("diagnose", str(log), "--format", "json").stdout)
    assert contract["primary"]["confidence"] < 0.5


def test_the_web_meter_shows_the_contracts_confidence(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from firstfault.web.app import create_app

    client = TestClient(create_app(history=False))
    page = client.post("/diagnose", data={"text": TRACEBACK}, headers={"accept": "text/html"}).text
    assert '<meter min="0" max="1" value="0.9">' in page and ">90%<" in page


# -- the timeline's caption tells the truth about the drawing ------------------------------------

def test_timeline_caption_agrees_with_the_drawing():
    pytest.importorskip("jinja2")
    from firstfault.web.report import build_document
    from firstfault.web.timeline import caption_of

    document = build_document(diagnose_paths([str(REAL / "autograd-inplace-plain-ws2" / "logs")]))
    first = next(point for point in document["timeline"] if point["kind"] == "first")
    left = [p for p in document["timeline"] if p["kind"] == "collateral" and p["t"] is not None and p["t"] < first["t"]]
    assert left, "the fixture has collateral printed a moment before the first fault"
    caption = caption_of(document)
    assert "everything to its right followed" not in caption and "left of it" in caption
    clean = build_document(diagnose_paths([str(FIRST_USER / "oom4" / "console.log")]))
    first = next(point for point in clean["timeline"] if point["kind"] == "first")
    assert all(p["t"] >= first["t"] for p in clean["timeline"] if p["kind"] == "collateral" and p["t"] is not None)
    assert "everything to its right followed" in caption_of(clean)


# -- files that share a name are told apart everywhere -------------------------------------------

def test_source_labels_are_the_shortest_distinguishing_suffix():
    labels = source_labels(["logs/attempt_0/0/stderr.log", "logs/attempt_0/1/stderr.log", "logs/launcher.log"])
    assert labels == {"logs/attempt_0/0/stderr.log": "0/stderr.log", "logs/attempt_0/1/stderr.log": "1/stderr.log",
                      "logs/launcher.log": "launcher.log"}
    assert source_labels(["a/x/run.log", "b/x/run.log"]) == {"a/x/run.log": "a/x/run.log", "b/x/run.log": "b/x/run.log"}


def test_files_sharing_a_name_are_told_apart_in_every_report():
    logs = REAL / "exc-missing-key-logdir-ws3" / "logs"
    bare = re.compile(r"(?<![/\w])stderr\.log:\d+")
    for fmt in ("terminal", "markdown"):
        out = run_cli("diagnose", str(logs), "--format", fmt).stdout.decode()
        assert "1/stderr.log:22" in out and not bare.search(out), fmt
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from firstfault.web.app import create_app

    files = [("files", (str(path.relative_to(logs)), path.read_bytes())) for path in sorted(logs.rglob("*")) if path.is_file()]
    page = TestClient(create_app(history=False)).post("/diagnose", files=files, headers={"accept": "text/html"}).text
    first_line = page.split("<dt>first line</dt>", 1)[1].split("</dd>", 1)[0]
    assert "1/stderr.log:22" in first_line
    assert not bare.search(re.sub(r'title="[^"]*"', "", page))


def test_long_commands_wrap_in_the_web_page():
    """The Verify box: code is wrapped rather than cut at the card's edge (the browser test measures it)."""
    css = (REPO / "src" / "firstfault" / "web" / "static" / "style.css").read_text()
    rule = re.search(r"\.code pre \{([^}]*)\}", css).group(1)
    assert "white-space: pre-wrap" in rule and "overflow-wrap: anywhere" in rule


def test_fixes_fit_the_evidence_before_the_stack():
    """The README's example asserts in an index kernel (`srcIndex < srcSelectDimSize`): the
    embedding fix comes first although its stack (HF) is not the logs' (torchrun), and the loss
    fixes (another form of the assert) are left out."""
    from firstfault.kb import load_knowledge_base
    from firstfault.pipeline import diagnose_paths
    from firstfault.render.terminal import TerminalReport

    from .conftest import REPO

    text = TerminalReport(load_knowledge_base()).render(diagnose_paths([str(REPO / "examples" / "nccl-timeouts-after-assert")]))
    fix = text.split("\nFix\n", 1)[1].split("\nVerification\n", 1)[0]
    assert "1. Resize embeddings after adding tokens" in fix
    assert "Keep labels in range" not in fix and "binary loss" not in fix
    assert "another form of this failure" in fix


def test_a_loss_kernel_assert_gets_the_label_fix():
    from firstfault.kb import load_knowledge_base
    from firstfault.pipeline import diagnose_texts
    from firstfault.render.terminal import TerminalReport

    log = ("/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
           "thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
           "RuntimeError: CUDA error: device-side assert triggered\n")
    text = TerminalReport(load_knowledge_base()).render(diagnose_texts([("train.log", log)]))
    fix = text.split("\nFix\n", 1)[1].split("\nVerification\n", 1)[0]
    assert "1. Keep labels in range" in fix and "Resize embeddings" not in fix


def test_the_fix_section_prints_the_exclusion_commands_filled_in():
    """Where the host is known, the report prints the commands of `action_detail` with it, and
    the knowledge base's own commands name it too: never a `NODE` to replace by hand."""
    from firstfault.kb import load_knowledge_base
    from firstfault.pipeline import diagnose_paths
    from firstfault.render.terminal import TerminalReport

    from .conftest import REPO

    diagnosis = diagnose_paths([str(REPO / "tests" / "fixtures" / "dev" / "hpc-dgx-node-ecc-8gpu-ddp-rank5")])
    assert diagnosis.action == "exclude-host-and-restart"
    text = TerminalReport(load_knowledge_base()).render(diagnosis)
    assert "Keep the next run off dgx-b12" in text
    assert 'scontrol update NodeName=dgx-b12 State=DRAIN' in text and "sbatch --exclude=dgx-b12" in text
    assert "NODE" not in text.replace("NodeName", "")


def test_collateral_ranks_named_by_their_pids():
    """The launcher's SIGTERMs name pids, its failure table ties each pid to a rank: the seven
    ranks that only stopped because rank 5 failed are listed (never rank 5 itself)."""
    from firstfault.pipeline import diagnose_paths

    from .conftest import REPO

    diagnosis = diagnose_paths([str(REPO / "tests" / "fixtures" / "dev" / "hpc-dgx-node-ecc-8gpu-ddp-rank5")])
    assert diagnosis.initiating.rank == 5
    listed = {rank for finding in diagnosis.collateral for rank in finding.ranks}
    assert listed == {0, 1, 2, 3, 4, 6, 7}
    assert {row.rank: row.ended for row in diagnosis.ranks}[0] == "stopped"


def test_a_rank_group_names_a_host_only_for_the_ranks_it_is_told_for():
    """Ranks that ended alike share a row; when the logs tell the host of some of them only (a
    real two-node run: node 0's agent named its host, node 1's printed nothing), the row does not
    put the others on that host."""
    from firstfault.model import Diagnosis, RankRow
    from firstfault.render.diagnosis_text import rank_lines

    rows = tuple(RankRow(rank, host="compute-3-04" if rank < 3 else None, ended="silent") for rank in range(6))
    diagnosis = Diagnosis("failure", None, None, (), (), None, ranks=rows)
    assert rank_lines(diagnosis) == ["ranks 0-5: silent on compute-3-04 (ranks 0-2; the others' host is not told)"]
    told = tuple(RankRow(rank, host="compute-3-04", ended="silent") for rank in range(6))
    assert rank_lines(Diagnosis("failure", None, None, (), (), None, ranks=told)) == ["ranks 0-5: silent on compute-3-04"]
