"""Logs handed over in a post (a GitHub issue, a forum or chat message): each Markdown code block is
read as the text it holds, named by the file a line before it names, and the post's prose (the
template, the environment report) apart from them. A post gives the diagnosis its files give; a
log that prints a fence line stays one log."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.ingest.combined import split_combined
from firstfault.ingest.posts import HEAD_BYTES, MAX_POST_BYTES, post_pieces
from firstfault.ingest.sources import InputFile
from firstfault.pipeline import diagnose_paths, diagnose_texts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# several files whose names say whose they are; a failure with an older run's finished tail beside
# it; one console that ends stuck; a job whose accounting says it completed after its requeue
CASES = ["dev/real-12-plain-ws4", "real/native-bus-error-plain-ws3", "dev/statedict-size-mismatch-added-pad-token",
         "upstream/collective-mismatch-lightning-horovod-checkpoint-exists-broadcast-stall",
         "dev/healthy-lightning-slurm-usr1-requeue-resume-complete", "real/loss-nan-twonode-ws4-r2",
         "upstream/host-oom-killed-anomalygpt-deepspeed-sigkill-local-rank1"]  # (its launcher's report hard-wrapped)

# `python -m torch.utils.collect_env`'s report, as its format prints it (torch/utils/collect_env.py)
ENVIRONMENT = """Collecting environment information...
PyTorch version: 2.3.1+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
Is CUDA available: True
CUDA runtime version: 12.1.105
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB
Nvidia driver version: 535.129.03
cuDNN version: Could not collect

Versions of relevant libraries:
[pip3] torch==2.3.1
[pip3] triton==2.3.1
"""


def log_files(case: str) -> list[tuple[str, str]]:
    logs = FIXTURES / case / "logs"
    return [(str(path.relative_to(logs)), path.read_text(encoding="utf-8", errors="replace"))
            for path in sorted(logs.rglob("*")) if path.is_file()]


def issue_body(files, name_line: str = "`{name}`:") -> str:
    parts = ["### 🐛 Describe the bug", "", "The job dies after a while; full output below.", "",
             "```python", "for step, batch in enumerate(loader):", "    loss = model(batch).loss", "    loss.backward()", "```", ""]
    for name, text in files:
        if len(files) > 1:
            parts += [name_line.format(name=name), ""]
        parts += ["```", text.rstrip("\n"), "```", ""]
    return "\n".join(parts + ["### Versions", "", ENVIRONMENT])


def question_body(files) -> str:
    """A post without fences (Stack Overflow's): the code and each file indented by four spaces."""
    def indented(text: str) -> str:
        return "\n".join("    " + line if line.strip() else "" for line in text.rstrip("\n").split("\n"))

    parts = ["My distributed training run crashes after some time. My loop:", "",
             indented("for step, batch in enumerate(loader):\n    model(batch).loss.backward()"), "", "and the output:", ""]
    for name, text in files:
        if len(files) > 1:
            parts += [f"{name}:", ""]
        parts += [indented(text), ""]
    return "\n".join(parts + ["I'm on torch 2.3.1 with CUDA 12.1. Any idea?", ""])


def reply_body(files) -> str:
    """A mail or forum reply that quotes the log: who wrote, the files quoted with `> ` (a line of
    each one's name alone before it when several), the reply and a signature."""
    parts = ["On Tue, Mar 12, 2024 at 10:41 AM Alex Doe <alex@example.org> wrote:", "> My job fails with this:", ">"]
    for name, text in files:
        if len(files) > 1:
            parts += [f"> {name}:", ">"]
        parts += ["> " + line if line.strip() else ">" for line in text.rstrip("\n").split("\n")] + [">"]
    return "\n".join(parts + ["", "Same here, any update?", "", "-- ", "Sam", ""])


def jira_body(files) -> str:
    """A Jira ticket's description in its wiki markup: each file in a {noformat} block after a bold
    line of its name when several."""
    parts = ["h3. Description", "", "Job 48213 failed overnight.", ""]
    for name, text in files:
        parts += ([f"*{name}*"] if len(files) > 1 else []) + ["{noformat}", text.rstrip("\n"), "{noformat}", ""]
    return "\n".join(parts + ["h3. Environment", "* torch 2.3.1", ""])


def verdict(diagnosis):
    initiating = diagnosis.initiating
    return (diagnosis.primary.failure_id if diagnosis.primary else diagnosis.status,
            initiating.rank if initiating else None, initiating.host if initiating else None)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("form", ["fenced", "indented", "quoted", "jira"])
def test_a_post_of_a_jobs_files_gives_the_diagnosis_of_the_files(case, form, tmp_path):
    expected = verdict(diagnose_paths([str(FIXTURES / case / "logs")]))
    body = {"fenced": issue_body, "indented": question_body, "quoted": reply_body, "jira": jira_body}[form](log_files(case))
    post = tmp_path / "issue.md"
    post.write_text(body, encoding="utf-8")
    assert verdict(diagnose_paths([str(post)])) == expected
    assert verdict(diagnose_texts([("pasted.txt", body)])) == expected  # pasted in the web app


@pytest.mark.parametrize("name_line", ["`{name}`:", "**{name}**", "<summary>{name}</summary>", "### {name}", "{name}:"])
def test_a_blocks_name_line_names_its_file(name_line):
    files = [("rank0.log", "step 1\n"), ("rank1.log", "step 1\nboom\n")]
    pieces = split_combined(InputFile(display="post.md", relative="post.md", content=issue_body(files, name_line).encode()))
    names = [piece.display for piece in pieces]
    assert names == ["post.md", "code block 1 in post.md", "rank0.log in post.md", "rank1.log in post.md"]
    assert [piece.relative for piece in pieces[2:]] == ["rank0.log", "rank1.log"]


def test_blocks_keep_the_line_numbers_of_the_post_and_the_prose_loses_nothing():
    text = b"intro\n```\nline a\nline b\n```\nbetween\n~~~text\nline c\n~~~\noutro\n"
    pieces = post_pieces(text, lambda name: False)
    assert pieces[0] == (None, 1, b"intro\n\n\n\n\nbetween\n\n\n\noutro\n")
    assert pieces[1:] == [(None, 3, b"line a\nline b"), (None, 8, b"line c")]


def test_a_longer_fence_holds_a_shorter_one_and_an_unclosed_block_runs_to_the_end():
    text = b"see\n````\n```\ninner\n```\n````\n```\nlast\nlines\n"
    pieces = post_pieces(text, lambda name: False)
    assert [piece[1:] for piece in pieces[1:]] == [(3, b"```\ninner\n```"), (8, b"last\nlines\n")]


def test_a_jira_code_block_closes_at_the_next_marker_of_its_kind():
    text = b"h3. Logs\n*rank1.log*\n{code:python}\nx = 1\n{noformat}\n{code}\nafter\n"
    pieces = post_pieces(text, lambda name: name.endswith(b".log"))
    assert pieces[1] == (b"rank1.log", 4, b"x = 1\n{noformat}")


def test_a_line_that_names_no_file_names_no_block():
    text = b"Here is my rank0.log:\n```\nx\n```\n"
    assert post_pieces(text, lambda name: name.endswith(b".log"))[1][0] is None


@pytest.mark.parametrize("text", [
    b"INFO step 1\nINFO generated: here is code\n```python\nprint(1)\n",  # a fence never closed: a model's answer cut short
    b"x" * (HEAD_BYTES + 10) + b"\n```\ny\n```\n",  # no block among a post's first bytes
    b"# config\n```\nx\n```\n" + b"y\n" * (MAX_POST_BYTES // 2),  # larger than a post
    b"step 1 ``` not a fence\nstep 2\n",
])
def test_a_log_that_only_looks_like_a_post_stays_one_log(text):
    item = InputFile(display="train.log", relative="train.log", content=text)
    assert split_combined(item) == [item]


def test_indented_blocks_after_a_blank_line_are_a_posts_code():
    text = b"Here is my log:\n\n    line a\n\n      line b\n\nrank1.log:\n\n    line c\n    line d\n\nThanks!\n"
    pieces = post_pieces(text, lambda name: name.endswith(b".log"))
    assert pieces[1:] == [(None, 3, b"line a\n\n  line b"), (b"rank1.log", 9, b"line c\nline d")]
    assert pieces[0] == (None, 1, b"Here is my log:\n\n\n\n\n\nrank1.log:\n\n\n\n\nThanks!\n")
    assert post_pieces(text.replace(b"    line d\n", b""), lambda name: True) == []  # prose as long as the code: no post


@pytest.mark.parametrize("text", [
    # a traceback's code lines follow its frames, not a blank line
    b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    main()\nValueError: x\n",
    # a log with a configuration dump after a blank line: the log's own lines are most of it
    b"".join(b"step %d loss 1.0\n" % step for step in range(50)) + b"\nconfig:\n\n    lr: 0.1\n    batch: 8\n",
    # Megatron-LM's own lines start with `> `: a minority of its log
    b"> initializing torch distributed ...\n> building GPT model ...\n" + b"".join(b" iteration %d/ 100 | lm loss: 2.0\n" % step for step in range(20)),
])
def test_a_log_with_indented_lines_is_no_post(text):
    item = InputFile(display="train.log", relative="train.log", content=text)
    assert split_combined(item) == [item]


def test_a_short_quote_in_a_reply_is_the_quoted_text():
    # one quoted line against one line of reply: who wrote and the signature are no reply
    text = (b"On Tue, Alex wrote:\n> [rank13]: RuntimeError: Rank 13, node worker1, loss is NaN\n>\n\n"
            b"Same here.\n\n-- \nSam\nsam@example.org\n")
    pieces = post_pieces(text, lambda name: False)
    assert pieces[1] == (None, 2, b"[rank13]: RuntimeError: Rank 13, node worker1, loss is NaN\n")


def test_files_pasted_after_a_line_of_their_name_alone_are_those_files():
    text = b"rank0.log:\nstep 1\nstep 2\n\n**rank1.log**\nstep 1\nboom\n"
    pieces = split_combined(InputFile(display="paste.txt", relative="paste.txt", content=text))
    assert [(piece.display, piece.first_line, piece.content) for piece in pieces] == [
        ("rank0.log in paste.txt", 2, b"step 1\nstep 2\n"), ("rank1.log in paste.txt", 6, b"step 1\nboom\n")]
    once = b"rank0.log:\nstep 1\nstep 2\n"  # one name: nothing says where another file would begin
    assert post_pieces(once, lambda name: True) == []


def test_a_retry_the_log_went_on_past_is_no_failure(tmp_path):
    # NCCL's socket transport at INFO level: a refused connection it tries again, then the job trains
    log = tmp_path / "train.log"
    log.write_text("node-1:100:140 [1] NCCL INFO Call to connect returned Connection refused, retrying\n"
                   "node-1:100:140 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 nvmlDev 1 - Init COMPLETE\n"
                   + "".join(f"epoch 0 step {step} loss {2.0 - step / 100:.3f}\n" for step in range(1, 60)))
    assert diagnose_paths([str(log)]).status == "healthy"


def test_a_log_that_ends_retrying_is_not_healthy(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.3\nstep 2 loss 2.2\n"
                   + "[W socket.cpp:663] [c10d] The client socket has failed to connect to [master]:29500 "
                     "(errno: 111 - Connection refused). Retrying in 5s\n" * 3)
    assert diagnose_paths([str(log)]).status != "healthy"



def test_a_post_piped_to_standard_input_is_read_as_a_post():
    import subprocess
    import sys

    body = issue_body(log_files("dev/real-12-plain-ws4"))  # `pbpaste | firstfault diagnose -`
    run = subprocess.run([sys.executable, "-m", "firstfault", "diagnose", "--format", "json", "-"],
                         input=body.encode(), capture_output=True, timeout=120)
    initiating = __import__("json").loads(run.stdout)["primary"]["initiating"]
    assert (initiating["rank"], initiating["rank_from"]) == (1, "the name of its file")


def test_standard_input_longer_than_a_paste_is_read_whole_as_it_comes(monkeypatch, tmp_path):
    import io
    import sys

    from firstfault.ingest import sources

    log = FIXTURES / "dev/real-12-plain-ws4/logs/rank1.log"
    monkeypatch.setattr(sources, "STDIN_PASTE_BYTES", 100)  # its first 100 bytes read first, then the rest
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": io.BufferedReader(io.BytesIO(log.read_bytes()))})())
    piped = diagnose_paths(["-"])
    assert piped.inputs.lines == diagnose_paths([str(log)]).inputs.lines
    assert verdict(piped) == verdict(diagnose_paths([str(log)]))
