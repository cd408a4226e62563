"""Logs posted publicly often have their host names and addresses redacted (`xxx`, `<hostname>`,
`node-X`, `x.x.x.x`). A placeholder names no host: read as one, every node of a job would be the
same node, and a local rank would be taken for a global one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from firstfault.ingest.attribution import is_placeholder_host
from firstfault.pipeline import diagnose_paths

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "dev" / "ds-zero2-4node-v100-one-node-cuda-oom"


@pytest.mark.parametrize("name", ["xxx", "XXXX", "***", "<hostname>", "<ip>", "[redacted]", "redacted", "hostname",
                                  "node-x", "node-X", "nodeX", "x.x.x.x", "xxx.xxx.xxx.xxx", "your-hostname"])
def test_a_redactions_placeholder_is_no_host(name):
    assert is_placeholder_host(name)


@pytest.mark.parametrize("name", ["localhost", "gpu-node-3", "node1", "node-0", "x", "n", "server-1", "10.0.0.1",
                                  "dgx-a100-18", "ip-10-0-1-2", "host", "xgpu01", "box", "", None])
def test_a_hosts_name_is_no_placeholder(name):
    assert not is_placeholder_host(name)


@pytest.mark.parametrize("placeholder", ["node-x", "xxx"])
def test_redacted_nodes_are_not_one_node(tmp_path, placeholder):
    """A 4-node DeepSpeed run (pdsh prefixes, NCCL lines) whose node names were all redacted: the
    OOM line names GPU 5 on one of four nodes, so which rank it was the logs no longer say (the
    run as it is says rank 29 on node-3); no placeholder is given as its host."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for path in (CASE / "logs").iterdir():
        text = re.sub(r"\bnode-[0-3]\b", placeholder, path.read_text(encoding="utf-8"))
        text = re.sub(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", "x.x.x.x", text)
        (logs / path.name).write_text(text, encoding="utf-8")
    as_is = diagnose_paths([str(CASE / "logs")])
    assert (as_is.primary.failure_id, as_is.initiating.rank, as_is.initiating.host) == ("cuda-oom", 29, "node-3")
    redacted = diagnose_paths([str(logs)])
    assert redacted.primary.failure_id == "cuda-oom"
    assert redacted.initiating.rank in (None, 29)  # not GPU 5 taken for rank 5
    assert redacted.initiating.host is None
    assert not any(is_placeholder_host(host) for host in redacted.inputs.hosts)


def test_a_redacted_nodes_deepspeed_workers_are_not_taken_for_the_first_nodes(tmp_path):
    """A 2-node DeepSpeed run whose host names were redacted in its lines (the dmesg file is still in
    the node's folder): the kernel killed pid P, DeepSpeed's launcher lists that node's workers, but
    which node's ranks they are the lines no longer say (the run as it is: rank 13, local rank 5 of
    node 1); local rank 5 is not rank 5."""
    case = CASE.parent / "hostoom-zero3-offload-params-optim-13b-2node"
    for path in (case / "logs").rglob("*"):
        if path.is_file():
            target = tmp_path / "logs" / path.relative_to(case / "logs")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(re.sub(r"\bdgx-a100-1[78]\b", "xxx", path.read_text(encoding="utf-8")), encoding="utf-8")
    assert diagnose_paths([str(case / "logs")]).initiating.rank == 13
    redacted = diagnose_paths([str(tmp_path / "logs")])
    assert redacted.primary.failure_id == "host-oom-killed"
    assert redacted.initiating.rank in (None, 13)
