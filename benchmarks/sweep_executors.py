"""What Ray costs a sweep: the openb fill sweep (``berth fill``'s runs, as the openb
fragmentation experiment makes them) on local processes and on Ray, on this machine.

Four set-ups, each on the same runs, in rounds (medians over ``--repeats`` rounds):

- local: ``--jobs`` worker processes (today's default);
- ray, one node of ``--jobs`` CPUs (a cluster started by ``ray start`` on loopback);
- ray, one node of one CPU, then two nodes of one CPU each (what a second node buys).

Per-run overhead is (ray − local) / runs × workers: the extra wall time each run costs on a
worker. Usage: ``python benchmarks/sweep_executors.py [--seeds 10] [--pods default]``; needs
``pip install 'berth[ray]'`` and the openb lists (``berth trace get openb``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from berth.executors import parse_executor
from berth.sim.fill import FillSpec, run_specs
from berth.traces.fetch import trace_folder

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces" / "alibaba-openb-2023"
POLICIES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "gpu-bestfit", "fgd")


def _ray(*args: str) -> None:
    binary = Path(sys.executable).with_name("ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    subprocess.run([str(binary), *args], check=True, env=env, capture_output=True, timeout=300)


def _cluster(nodes: int, cpus: int, port: int) -> str:
    common = ["--num-cpus", str(cpus), "--node-ip-address", "127.0.0.1"]
    _ray("start", "--head", "--port", str(port), "--include-dashboard", "false", *common)
    for _ in range(nodes - 1):
        _ray("start", "--address", f"127.0.0.1:{port}", *common)
    return f"127.0.0.1:{port}"


def _timed(specs: list[FillSpec], jobs: int, executor: str) -> float:
    started = time.perf_counter()
    run_specs(specs, jobs, None, parse_executor(executor))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per policy (default 10)")
    parser.add_argument("--pods", default="default", help="openb pod list (default: default)")
    parser.add_argument("--jobs", type=int, default=2, help="local processes (default 2)")
    parser.add_argument("--data", type=Path, help="folder of the openb lists (default: cache)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; medians (default 3)")
    args = parser.parse_args()
    data = args.data or trace_folder(SHARED, "openb-nodes-gpu")
    specs = [
        FillSpec(
            str(data / "openb_node_list_gpu_node.csv"),
            str(data / f"openb_pod_list_{args.pods}.csv"),
            policy,
            seed,
        )
        for policy in POLICIES
        for seed in range(args.seeds)
    ]
    os.environ["RAY_AUTH_MODE"] = "disabled"
    port = 6390
    figures: dict[str, float] = {"runs": len(specs)}
    times: dict[str, list[float]] = {}
    setups = ((f"ray_1x{args.jobs}", 1, args.jobs), ("ray_1x1", 1, 1), ("ray_2x1", 2, 1))
    for _ in range(args.repeats):  # rounds of every setup, so drifting load hits all alike
        times.setdefault("local", []).append(_timed(specs, args.jobs, "local"))
        for name, nodes, cpus in setups:
            address = _cluster(nodes, cpus, port)
            try:
                _timed(specs[:2], 1, f"ray={address}")  # workers started
                times.setdefault(name, []).append(_timed(specs, 1, f"ray={address}"))
            finally:
                _ray("stop", "--force")
    figures.update({name: statistics.median(values) for name, values in times.items()})
    per_run = (figures[f"ray_1x{args.jobs}"] - figures["local"]) / len(specs) * args.jobs
    figures["overhead_per_run_s"] = per_run
    figures["overhead_percent"] = 100 * (figures[f"ray_1x{args.jobs}"] / figures["local"] - 1)
    figures["two_nodes_speedup"] = figures["ray_1x1"] / figures["ray_2x1"]
    figures["load_average"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}, indent=2))


if __name__ == "__main__":
    main()
