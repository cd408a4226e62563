"""A real hung torchrun job (gloo, CPU), its stacks and flight-recorder dumps captured live."""
import importlib.util
import socket
import sys
from pathlib import Path

import pytest

from firstfault.dumps import analyze_files

pytestmark = pytest.mark.live


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_live_hang_is_named_by_dumps_and_stacks(tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install torch): no live torchrun job")
    if not Path(sys.executable).with_name("torchrun").exists():
        pytest.skip("torchrun is not next to this Python")
    sys.path.insert(0, str(Path(__file__).parent))
    from capture import capture

    found = capture(tmp_path, nproc=3, hang_rank=1, timeout_s=90, port=_free_port())
    assert found["faulthandler"] and found["fr"], found
    report = analyze_files(sorted(str(path) for path in tmp_path.iterdir()))
    assert report.flight_recorder.silent_ranks == (1,)
    assert report.flight_recorder.waiting_ranks == (0, 2)
    assert report.stacks.odd_ranks == (1,)
    assert report.named_ranks == (1,)
    if found["pyspy"]:  # py-spy installed and allowed to ptrace
        assert "load_batch" in (tmp_path / "pyspy_rank1.txt").read_text()
