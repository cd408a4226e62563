"""Which files are diagnosed on open, and which folder is the job: built trees, no LSP."""
from __future__ import annotations

from pathlib import Path

from firstfault.lsp.folders import is_log_document, job_folder, job_scope


def _files(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def test_a_rank_file_is_diagnosed_with_its_folder(tmp_path):
    run = tmp_path / "work" / "llama-70b-run3"
    _files(run, "rank0.log", "rank1.log", "launcher.out")
    assert job_folder(run / "rank1.log", [tmp_path]) == run
    assert job_scope(run / "rank1.log", [tmp_path]).paths == (str(run),)


def test_torchrun_log_dir_tree_climbs_to_the_folder_with_the_launcher_log(tmp_path):
    logs = tmp_path / "logs"
    _files(logs, "launcher.log", "torchelastic/none_a8h295y9/attempt_0/0/stderr.log",
           "torchelastic/none_a8h295y9/attempt_0/1/stderr.log")
    stderr = logs / "torchelastic/none_a8h295y9/attempt_0/1/stderr.log"
    assert job_folder(stderr, [tmp_path]) == logs
    bare = tmp_path / "bare"  # --log-dir alone, no launcher log beside it
    _files(bare, "none_x/attempt_2/3/stdout.log")
    assert job_folder(bare / "none_x/attempt_2/3/stdout.log", [tmp_path]) == bare


def test_per_node_and_per_rank_folders_climb_but_a_host_like_run_name_does_not(tmp_path):
    logs = tmp_path / "logs"
    _files(logs, "node0/rank0.log", "node1/rank8.log", "rank3/out.log")
    assert job_folder(logs / "node1/rank8.log", [tmp_path]) == logs
    assert job_folder(logs / "rank3/out.log", [tmp_path]) == logs
    run = tmp_path / "runs" / "exc-two-ranks-plain-ws4"  # looks like a host name; is the run
    _files(run, "rank0.log")
    assert job_folder(run / "rank0.log", [tmp_path]) == run


def test_never_above_the_workspace_folder(tmp_path):
    _files(tmp_path, "node0/rank0.log")
    assert job_folder(tmp_path / "node0/rank0.log", [tmp_path / "node0"]) == tmp_path / "node0"


def test_a_project_folder_gives_only_its_log_files(tmp_path):
    project = tmp_path / "repo"
    _files(project, "pyproject.toml", "train.py", "train.log", "eval.out", "notes.txt", "src/big.log")
    scope = job_scope(project / "train.log", [tmp_path])
    assert scope.folder == project
    assert sorted(scope.paths) == [str(project / "eval.out"), str(project / "train.log")]


def test_which_files_are_logs(tmp_path):
    _files(tmp_path, "run/rank0.log", "run/notes.txt", "docs/readme.txt", "docs/rank2.txt")
    assert is_log_document(tmp_path / "run/rank0.log")
    assert is_log_document(tmp_path / "run/notes.txt")  # a .txt beside logs
    assert not is_log_document(tmp_path / "docs/readme.txt")
    assert is_log_document(tmp_path / "docs/rank2.txt")  # names its rank
    assert not is_log_document(tmp_path / "run/train.py")
    for suffix in (".out", ".err", ".LOG"):
        assert is_log_document(tmp_path / f"slurm-42{suffix}")


def test_a_log_in_a_folder_of_everything_brings_only_its_own_job(tmp_path):
    """A log opened from /tmp or ~/Downloads: not the 3,000 files beside it, only the ones that
    look like the same job, and the editor is told what was left out."""
    downloads = tmp_path / "Downloads"
    _files(downloads, "slurm-88231-gpu-b06.out", "slurm-88231-gpu-b07.out", "slurm-90000-gpu-a01.out",
           "report.pdf", "notes.txt", "other-job.log", *[f"photos/img{index}.jpg" for index in range(50)])
    scope = job_scope(downloads / "slurm-88231-gpu-b07.out", [])
    assert scope.folder == downloads
    assert sorted(scope.paths) == [str(downloads / "slurm-88231-gpu-b06.out"), str(downloads / "slurm-88231-gpu-b07.out")]
    assert scope.left_out == 4 and "not this job's" in scope.why


def test_a_run_folder_is_read_whole_within_limits_else_bounded(tmp_path):
    from firstfault.lsp.folders import ScopeLimits

    run = tmp_path / "runs" / "job-7"
    _files(run, "rank0.log", "rank1.log", "launcher.out")
    assert job_scope(run / "rank1.log", [tmp_path]).paths == (str(run),)
    _files(run, *[f"deep/a/b/c/d/e/rank{index}.log" for index in range(3)])
    scope = job_scope(run / "rank1.log", [tmp_path], ScopeLimits(max_files=2, max_depth=4))
    assert scope.paths[0] == str(run / "rank1.log") and len(scope.paths) == 2
    assert scope.left_out == 4 and "deeper than 4" in scope.why and "past the limits" in scope.why
