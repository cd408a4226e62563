"""Make the synthetic fleet of the fleet benchmark: N jobs over H hosts with planted faulty hosts.

    .venv/bin/python bench/fleet_make.py bench/data/fleet-2000 --jobs 2000 --hosts 200 --bad-hosts 4

The generator is `firstfault.fleet.synthetic` (also behind `firstfault fleet demo`): each job is
one folder of per-node torchrun consoles and per-node kernel logs in the formats of the lab's
real runs and of the knowledge base's examples; truth.json beside jobs/ says which hosts were
planted bad (a GPU that falls off the bus, a flapping InfiniBand port, ECC errors) and what
happened in every job.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from firstfault.fleet.synthetic import make_fleet  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to (re)create: jobs/ and truth.json")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--bad-hosts", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    started = time.perf_counter()
    truth = make_fleet(args.out, jobs=args.jobs, hosts=args.hosts, bad_hosts=args.bad_hosts, seed=args.seed)
    outcomes: dict[str, int] = {}
    for job in truth["jobs"].values():
        outcomes[job["outcome"]] = outcomes.get(job["outcome"], 0) + 1
    print(f"{args.jobs} jobs over {args.hosts} hosts in {time.perf_counter() - started:.1f} s -> {args.out}")
    print("planted bad hosts: " + ", ".join(f"{host} ({value['kind']})" for host, value in truth["bad_hosts"].items()))
    print("outcomes: " + ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items(), key=lambda item: -item[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
