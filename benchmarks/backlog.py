"""Simulation speed against the length of the backlog: does a session cost what changed, or
the number of waiting jobs?

For each backlog size N, an ITP-format trace of N GPU jobs arriving within the first hour is
written, and replayed on 32 nodes of 8 GPUs with four weighted queues (``--queues
a:1,b:2,c:3,d:4``) and the shipped Volcano configuration (proportion, DRF, overcommit), up to
12 simulated hours (``--hours``). In that window about the same number of jobs start and end
whatever N is, so the events per second should not depend on N. The simulation is timed
(loading excluded), several runs each, medians printed as a Markdown table.

    python benchmarks/backlog.py --sizes 1000 10000 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from berth.traces.model import TraceOptions
from berth.traces.queues import parse_queue_rule

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "volcano-scheduler.conf"
NODES = 32


def write_trace(path: Path, jobs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    submitted = np.sort(rng.uniform(0, 3600, jobs)).round().astype(int)
    durations = np.clip(rng.lognormal(np.log(3600), 1.0, jobs), 120, 20 * 86400).astype(int)
    gpus = rng.choice([1, 1, 1, 2, 4, 8, 16], jobs)
    with path.open("w") as out:
        out.write("job_id,submission_time,duration,num_gpu\n")
        for i in range(jobs):
            out.write(f"job-{i:06d},{submitted[i]},{durations[i]},{gpus[i]}\n")


def write_cluster(path: Path, nodes: int = NODES) -> None:
    """``nodes`` servers of 8 GPUs, as one NodePool."""
    pool = {
        "apiVersion": "berth.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": {
            "count": nodes,
            "template": {
                "status": {
                    "allocatable": {
                        "cpu": "64",
                        "memory": "512Gi",
                        "nvidia.com/gpu": "8",
                        "pods": "110",
                    }
                }
            },
        },
    }
    path.write_text(yaml.safe_dump(pool))


def run(trace: Path, cluster: Path, horizon: float) -> tuple[int, float]:
    spec = InputSpec(
        cluster=str(cluster),
        trace=str(trace),
        trace_format="itp",
        trace_options=TraceOptions(queue_rule=parse_queue_rule("a:1,b:2,c:3,d:4")),
        until=horizon,
    )
    inputs = load_inputs(spec, CONFIG)
    started = time.perf_counter()
    result = simulate(inputs, 0)
    return result.events, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000], help="backlog sizes"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per size (default 3)")
    parser.add_argument(
        "--hours", type=float, default=12.0, help="simulated hours per run (default 12)"
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="berth-backlog-"))
    cluster = folder / "cluster.yaml"
    write_cluster(cluster)
    rows = []
    for size in args.sizes:
        trace = folder / f"backlog-{size}.csv"
        write_trace(trace, size, seed=size)
        figures = [run(trace, cluster, args.hours * 3600) for _ in range(args.repeats)]
        events = figures[0][0]
        seconds = statistics.median(s for _, s in figures)
        rows.append((size, events, seconds))
        print(f"{size}: {events} events, {seconds:.2f} s", file=sys.stderr)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print("| waiting jobs | events | seconds (median) | events/s |")
    print("|---:|---:|---:|---:|")
    for size, events, seconds in rows:
        print(f"| {size:,} | {events:,} | {seconds:.2f} | {events / seconds:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
