"""The fleet page (/fleet) and its JSON twin (/api/fleet/report): the fleet report of one table.

The table is the one `firstfault fleet serve TABLE` was started with (it sets
FIRSTFAULT_FLEET_TABLE; the variable works for `firstfault serve` too). The page never takes a
path from the request: a web page must not be able to make the server read a file it names.
"""
from __future__ import annotations

import os

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from ..fleet.table import TABLE_VARIABLE
from .app import render
from .fleet_charts import class_chart, weekly_chart
from .limits import InputRejected

router = APIRouter()


def fleet_table() -> str | None:
    return os.environ.get(TABLE_VARIABLE) or None


def _report(min_jobs: int, alpha: float) -> dict | None:
    from ..fleet.cluster import INSTALL_HINT, missing_requirements

    table = fleet_table()
    if table is None:
        return None
    if missing_requirements(("pyarrow",)):
        raise InputRejected(503, "fleet_extra_missing", "the fleet page needs pyarrow", INSTALL_HINT)
    if not 1 <= min_jobs <= 1000 or not 0 < alpha < 1:
        raise InputRejected(422, "invalid_request", "min_jobs must be 1..1000 and alpha between 0 and 1")
    from ..fleet.report import build_report
    from ..fleet.table import parts, read_rows

    if not parts(table):
        raise InputRejected(404, "no_fleet_table", f"no fleet table at {table}", "scan one: firstfault fleet scan JOBS_ROOT --out TABLE")
    return build_report(read_rows(table), table=table, min_jobs=min_jobs, alpha=alpha)


@router.get("/fleet", include_in_schema=False)
def fleet_page(request: Request, min_jobs: int = 3, alpha: float = 0.01):
    report = _report(min_jobs, alpha)
    if report is None:
        return render(request, "fleet.html", page="fleet", report=None)
    return render(request, "fleet.html", page="fleet", report=report, weekly=weekly_chart(report),
                  classes=class_chart(report))


MIN_JOBS = Query(3, description="a suspect host started host-level failures in at least this many jobs")
ALPHA = Query(0.01, description="family-wise error rate of the host test (Bonferroni over the hosts)")


@router.get("/api/fleet/report", tags=["fleet"], summary="The fleet report of the server's fleet table",
            description="The JSON document of `firstfault fleet report --format json` (schema firstfault.fleet-report/1) "
                        "for the table the server was started with (`firstfault fleet serve TABLE`).")
def fleet_report_api(min_jobs: int = MIN_JOBS, alpha: float = ALPHA):
    report = _report(min_jobs, alpha)
    if report is None:
        raise InputRejected(404, "no_fleet_table", "this server has no fleet table",
                            "start it with: firstfault fleet serve TABLE")
    return JSONResponse(report)
