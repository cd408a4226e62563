"""Fleet mode: the same engine over thousands of jobs, on Dask, into one Parquet table.

    jobs.py         which jobs are under the roots, and their stamps (for incremental scans)
    task.py         one Dask task: diagnose one job with firstfault.pipeline -> its table row
    cluster.py      the Dask client: LocalCluster, an existing scheduler, a scheduler file
    scan.py         map the task over the jobs, stream the rows into the table
    table.py        the Parquet table (schema, parts, compaction, latest row per job)
    sql.py          DuckDB over the table (`fleet sql`)
    fingerprint.py  class + masked first-fault line -> a stable fingerprint
    hardware.py     which failures count against a host, and how much (the one list)
    stats.py        the binomial tail of the host test
    hosts.py        suspect hosts: the test against the fleet's base rate
    host_commands.py  drain / exclude / cordon / taint commands
    report.py       the report document (firstfault.fleet-report/1); render.py: terminal, Markdown
    synthetic.py    a synthetic fleet with planted bad hosts; synthetic_logs.py: its log formats

Needs the `fleet` extra (dask[distributed], pyarrow, duckdb); docs/fleet.md documents it all.
"""
