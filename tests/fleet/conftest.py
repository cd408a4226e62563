"""Shared fixtures of the fleet tests: a small synthetic fleet with planted truth, a real Dask
LocalCluster (two worker processes), and the Parquet table of one real scan of that fleet."""
from __future__ import annotations

import json

import pytest

for module in ("dask", "distributed", "pyarrow", "duckdb"):
    pytest.importorskip(module, reason="the fleet tests need the fleet extra: pip install -e '.[fleet]'")

# 72 jobs over 12 hosts, 3 planted bad hosts (one of each kind) failing 60 % of their jobs after
# their onset, a decoy whose team's code fails often: with this seed every generator outcome
# occurs (healthy, 5 code/data kinds, 3 hardware kinds).
SMALL_FLEET = {"jobs": 72, "hosts": 12, "bad_hosts": 3, "seed": 3}
SMALL_RATES = {"bad_host_fault": 0.6, "decoy_share": 0.2, "code": 0.15}

# The engine files some planted faults under their core class (failure_id): the generator's
# kind -> the class the table holds.
ENGINE_CLASS = {"nccl-ib-async-error": "nccl-ib-timeout", "python-import-error": "user-code-exception"}


@pytest.fixture(scope="session")
def small_fleet(tmp_path_factory):
    from firstfault.fleet.synthetic import Rates, make_fleet

    root = tmp_path_factory.mktemp("fleet")
    truth = make_fleet(root, **SMALL_FLEET, rates=Rates(**SMALL_RATES))
    assert json.loads((root / "truth.json").read_text())["bad_hosts"] == truth["bad_hosts"]
    return root, truth


@pytest.fixture(scope="session")
def dask_client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40) as cluster, \
            Client(cluster) as client:
        yield client


@pytest.fixture(scope="session")
def scanned(small_fleet, dask_client, tmp_path_factory):
    """(scan result, table path, truth) of one real scan of the small fleet."""
    from firstfault.fleet.scan import scan_fleet

    root, truth = small_fleet
    table = tmp_path_factory.mktemp("tables") / "fleet.parquet"
    result = scan_fleet([str(root / "jobs")], str(table), client=dask_client)
    return result, table, truth


@pytest.fixture(scope="session")
def rows(scanned):
    from firstfault.fleet.table import read_rows

    return read_rows(scanned[1])
