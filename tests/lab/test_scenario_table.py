"""The scenario table and the `lab` command, without running anything (no torch needed)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from firstfault.cli import main
from firstfault.kb.loader import load_knowledge_base
from firstfault.lab.layouts import LAYOUTS, MPIRUN_LAYOUTS
from firstfault.lab.runner import LabError, choose, expected_truth
from firstfault.lab.scenarios import SCENARIOS, get


def test_at_least_twenty_scenarios_with_unique_names():
    names = [scenario.name for scenario in SCENARIOS]
    assert len(names) >= 20
    assert len(set(names)) == len(names)


def test_every_layout_is_some_scenario_default():
    """So that the suite's runs (each scenario's default) use every layout; the mpirun layouts need
    Open MPI installed and have a real run of their own (test_scenarios.py)."""
    assert {scenario.default_layout for scenario in SCENARIOS} == set(LAYOUTS) - set(MPIRUN_LAYOUTS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.name)
def test_scenario_names_a_known_class_and_runs_by_default(scenario):
    kb = load_knowledge_base()
    for failure_id in (scenario.expect_class, *scenario.also_acceptable):
        assert failure_id == "healthy" or failure_id in kb, failure_id
    assert set(scenario.layouts) <= set(LAYOUTS)
    assert scenario.evidence, "every scenario says which log text proves its fault fired"
    choose(scenario, None, None, None)  # the defaults are a valid run
    # and so is the suite's run at the fewest ranks (tests/lab/test_scenarios.py)
    assert 2 <= scenario.min_world_size <= scenario.default_world_size
    choose(scenario, None, scenario.min_world_size, min(scenario.default_rank, scenario.min_world_size - 1))


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s.fixable], ids=lambda scenario: scenario.name)
def test_fix_verified_by_the_lab_is_marked_in_the_knowledge_base(scenario):
    entry = load_knowledge_base().get(scenario.fix_entry)
    assert entry.get("verified") == {"by": "lab", "scenario": scenario.name}


def test_truth_comes_from_the_injection():
    straggler = get("straggler")
    truth = expected_truth(straggler, world_size=4, rank=2, second_rank=None, fixed=False, node_of_rank={})
    assert truth["class"] == "collective-timeout-straggler"
    assert truth["initiating_rank"] == 2
    assert truth["collateral_ranks"] == [0, 1, 3]
    fixed = expected_truth(straggler, world_size=4, rank=2, second_rank=None, fixed=True, node_of_rank={})
    assert fixed["class"] == "healthy" and fixed["initiating_rank"] is None
    two = get("exc-two-ranks")
    truth = expected_truth(two, world_size=4, rank=1, second_rank=3, fixed=False, node_of_rank={})
    assert truth["initiating_rank"] == 1 and truth["collateral_ranks"] == [0, 2]
    sigterm = get("sigterm-handled")
    truth = expected_truth(sigterm, world_size=4, rank=1, second_rank=None, fixed=False,
                           node_of_rank={0: 1, 1: 1, 2: 0, 3: 0})
    assert truth["initiating_rank"] is None and truth["collateral_ranks"] == [2, 3]


@pytest.mark.parametrize(("layout", "world_size", "rank"), [("tee", 3, 1), ("twonode", 3, 0), ("plain", 2, 2), ("plain", 1, 0)])
def test_impossible_runs_are_refused(layout, world_size, rank):
    with pytest.raises(LabError):
        choose(get("exc-batch-mismatch") if layout != "tee" else get("rendezvous-missing-member"), layout, world_size, rank)


def test_lab_list_shows_every_scenario(capsys):
    assert main(["lab", "list"]) == 0
    out = capsys.readouterr().out
    for scenario in SCENARIOS:
        assert scenario.name in out
    assert f"{len(SCENARIOS)} scenarios" in out


def test_lab_run_without_torch_says_how_to_install_it():
    code = ("import sys; sys.modules['torch'] = None; from firstfault.cli import main; "
            "sys.exit(main(['lab', 'run', 'straggler']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    # the CPU wheel: PyPI's default torch is the CUDA build (GBs) and the lab runs on CPU
    assert result.stderr.strip() == ("firstfault lab needs PyTorch (the CPU build is enough): pip install torch "
                                     "--index-url https://download.pytorch.org/whl/cpu && pip install 'firstfault[lab]'")


def test_lab_run_with_a_python_that_does_not_exist_says_so(capsys):
    assert main(["lab", "run", "exc-index-error", "--python", "/no/such/venv/bin/python"]) == 2
    err = capsys.readouterr().err
    assert "--python /no/such/venv/bin/python: no such executable" in err and "hint:" in err


def test_lab_run_unknown_scenario_is_a_tool_error(capsys):
    assert main(["lab", "run", "no-such-scenario"]) == 2
    assert "firstfault lab list" in capsys.readouterr().err


@pytest.mark.parametrize("primary, problems", [
    ({"failure_id": "host-oom-killed", "entry_id": "host-memory-enomem", "initiating": {"rank": 1}}, []),
    ({"failure_id": "host-oom-killed", "entry_id": "host-oom-killed", "initiating": {"rank": 1}},
     ["class host-oom-killed, expected host-memory-enomem or collective-timeout-peer-crash"]),
    ({"failure_id": "collective-timeout-peer-crash", "entry_id": "collective-timeout-peer-crash",
      "initiating": {"rank": 0}}, ["initiating rank 0, expected 1"]),
])
def test_the_lab_judges_the_class_as_eval_does_by_class_or_entry(primary, problems):
    """An entry that specialises a core class (host-memory-enomem of host-oom-killed) is the class the
    lab expects when the diagnosis names that entry: `firstfault eval` counts it so, and so must the lab."""
    from firstfault.lab.runner import judge

    expect = {"class": "host-memory-enomem", "also_acceptable": ["collective-timeout-peer-crash"], "initiating_rank": 1}
    assert judge({"status": "failure", "primary": primary}, expect) == problems
