"""How the logs tie the first fault's rank and host to its line (`primary.initiating.rank_from`,
`host_from`): its prefix, its file's name, a local rank and its node's offset, a Kubeflow pod, a
declaration, NCCL's lines, or the reasoning that joined it; `ask "why rank N?"` says it. Null when no
rank (or host) is named."""
from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.ask import answer
from firstfault.ask.intents import intent_of
from firstfault.pipeline import diagnose_paths
from firstfault.render.contract import to_contract

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def initiating(path) -> dict:
    contract = to_contract(diagnose_paths([str(path)]))
    return (contract.get("primary") or {}).get("initiating") or contract.get("initiating") or {}


@pytest.mark.parametrize("case, rank, told", [
    ("dev/ddp-gpu0-foreign-contexts-oom-rank0", 0, "the line's own rank prefix"),
    ("dev/real-12-plain-ws4", 1, "the name of its file"),
    ("dev/real-15-logdir-ws5", 2, "local rank 2 (the name of its file) on a node whose ranks start at 0"),
    ("real/native-cxx-terminate-twonode-ws6-r4", 4, "local rank 1 (the launcher's prefix on the line) on a node whose ranks start at 3"),
    ("dev/pcluster-fairseq-rdzv-endpoint-is-head-node", None, "the srun task label of the line (a task per rank)"),
    ("upstream/preempted-sigterm-k8s-scheduler-preempted-worker-pod-sigkill", None, "its torchrun agent's rendezvous result"),
    ("dev/autograd-inplace-bifpn-fusion-weights", 0, "the reasoning: the failing line carries no rank; rank 0 is the only process"),
])
def test_the_first_faults_rank_says_how_the_logs_tie_it(case, rank, told):
    place = initiating(FIXTURES / case / "logs")
    if rank is not None:
        assert place["rank"] == rank
    assert place["rank"] is not None and place["rank_from"].startswith(told)


@pytest.mark.parametrize("case, told", [
    ("dev/ddp-2node-nccl-mgmt-nic-unroutable", "the host prefix on the line"),
    ("dev/flyte-elastic-2pod-worker-oom-survivors-block", "the name of its file, a host the logs name"),
    ("dev/ddp-8gpu-gpu7-mmu-fault-cudnn-internal-hang", "its file's NCCL lines, which name one host"),
    ("real/checkpoint-truncated-srun-ws7", "the reasoning: rank 0 ran on host vm: Slurm reports srun task 0 on that host"),
])
def test_the_first_faults_host_says_how_the_logs_tie_it(case, told):
    place = initiating(FIXTURES / case / "logs")
    assert place["host"] is not None and place["host_from"].startswith(told)


def test_a_rank_declared_by_its_files_start_up_lines_says_so(tmp_path):
    # fairseq's start-up line in each of two files whose names say nothing
    (tmp_path / "out-3f9a1c.log").write_text("| distributed init (rank 0): env://\nepoch 1 step 1 loss 2.3\n")
    (tmp_path / "out-b07e55.log").write_text("| distributed init (rank 1): env://\nTraceback (most recent call last):\n"
                                             '  File "train.py", line 9, in <module>\n'
                                             "IndexError: list index out of range\n")
    place = initiating(tmp_path)
    assert place["rank"] == 1 and place["rank_from"] == "its file's own start-up lines, which declare the rank"


def test_a_rank_a_kubeflow_pods_name_gives_says_so(tmp_path):
    # a PyTorchJob whose pods run the script itself: worker-0 is node 1, and its one process rank 1
    (tmp_path / "train-master-0.log").write_text("epoch 1 step 1 loss 2.3\nepoch 1 step 2 loss 2.2\n")
    (tmp_path / "train-worker-0.log").write_text("epoch 1 step 1 loss 2.3\nTraceback (most recent call last):\n"
                                                 '  File "train.py", line 9, in <module>\n'
                                                 "IndexError: list index out of range\n")
    place = initiating(tmp_path)
    assert place["rank"] == 1 and place["rank_from"].startswith("its Kubeflow pod's name")


def test_no_rank_no_provenance():
    # every rank raised the same error alike: no single rank started it, and nothing ties one
    place = initiating(FIXTURES / "real/bf16-model-fp32-batches-plain-ws4-r0/logs")
    assert place["rank"] is None and place["rank_from"] is None
    assert place["host"] is None and place["host_from"] is None


def test_ask_why_this_rank_says_how_the_rank_is_known():
    contract = to_contract(diagnose_paths([str(FIXTURES / "dev/real-12-plain-ws4/logs")]))
    told = answer(intent_of("why rank 1?"), contract)
    assert "Rank 1, told by the name of its file." in told.lines
