"""`firstfault run`'s launcher handling: environment, node rank, file names, exit status; options documented."""
from __future__ import annotations

import io
import re
from pathlib import Path

from firstfault import cli
from firstfault.watch.launch import Tee, child_environment, exit_status, is_torchrun, node_rank


def test_torchrun_is_asked_for_prefixes_unless_it_chose_its_own_output():
    assert is_torchrun(["torchrun", "train.py"]) and is_torchrun(["python", "-m", "torch.distributed.run", "t.py"])
    assert not is_torchrun(["srun", "python", "train.py"])
    env = child_environment(["torchrun", "--nproc-per-node", "2", "train.py", "-t", "5"], Path("/logs"), base={})
    assert env["PET_TEE"] == "3" and env["PYTHONUNBUFFERED"] == "1"
    assert env["FIRSTFAULT_ERROR_DIR"] == "/logs/errors"
    assert "PET_TEE" not in child_environment(["torchrun", "--redirects", "3", "train.py"], Path("/l"), base={})
    assert child_environment(["torchrun", "t.py"], Path("/l"), base={"PYTHONUNBUFFERED": "0"})["PYTHONUNBUFFERED"] == "0"


def test_node_rank_only_for_multi_node_jobs():
    assert node_rank(["torchrun", "--nnodes", "1", "--node-rank", "3", "t.py"], {}) == 0
    assert node_rank(["torchrun", "--nnodes=2", "--node_rank=1", "t.py"], {}) == 1
    assert node_rank(["torchrun", "--nnodes", "2", "t.py"], {"PET_NODE_RANK": "1"}) == 1
    assert node_rank(["torchrun", "--nnodes", "2", "t.py"], {"PET_NODE_RANK": "\u00b9"}) == 0  # no number


def test_tee_splits_by_local_rank(tmp_path):
    console = io.BytesIO()
    tee = Tee(tmp_path, node=1)
    tee.copy(io.BytesIO(b"[default0]:step 1\n[default1]:step 1\nagent line\n[rank3]:Traceback\n"), console)
    tee.close()
    assert console.getvalue() == b"[default0]:step 1\n[default1]:step 1\nagent line\n[rank3]:Traceback\n"  # unchanged
    # the files keep each line, stamped with when it arrived where it carries no time of its own
    assert re.fullmatch(rb"\[default0\]:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} step 1\n", (tmp_path / "node1-local0.log").read_bytes())
    assert (tmp_path / "node1-local1.log").exists()
    assert re.fullmatch(rb"\d{4}-\d\d-\d\d [\d:]{8},\d{3} agent line\n\[rank3\]:Traceback\n", (tmp_path / "console.log").read_bytes())


def test_exit_status_as_a_shell_reports_it():
    assert exit_status(0) == 0 and exit_status(3) == 3 and exit_status(-9) == 137


def test_every_option_is_documented():
    parser = cli.build_parser()
    choices = parser._subparsers._group_actions[0].choices
    for name in ("watch", "run"):
        options = [action for action in choices[name]._actions if action.dest != "help"]
        assert options and all(action.help for action in options), name
