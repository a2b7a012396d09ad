"""A whole-trace replay shaped like Microsoft's Philly job log: 82,247 jobs over 109 days in 14
virtual clusters, replayed on 67 nodes of 8 GPUs, the cluster ``--cluster-from-trace`` picks
for the published trace. Its jobs ask for more GPU time than the cluster has, so the backlog
grows to tens of thousands of jobs: the case that made whole Philly replays too slow to finish.

The published file sits behind Git LFS and cannot be fetched everywhere, so this writes a job
log of the same size, span and shape in the job-level CSV form berth reads for Philly
(``timestamp,duration,num_gpus,gpu_time,cluster``): GPU counts and durations drawn from the
distributions of the ATC'19 analysis (most jobs on one GPU, a tail to 64; durations from
minutes to weeks), arrivals with a daily cycle. It then times ``berth simulate`` as a whole
process, several runs, and prints the medians with the machine's load.

    python benchmarks/philly_shape.py --repeats 3
    python benchmarks/philly_shape.py --write philly-shape.csv   # only the trace
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from backlog import write_cluster  # the backlog benchmark's servers, beside this file

JOBS = 82_247
DAYS = 109
NODES = 67
VIRTUAL_CLUSTERS = 14
#: GPUs per job and their shares, after the ATC'19 analysis (Fig. 2): single-GPU jobs
#: dominate, multi-node jobs are few but hold much of the GPU time.
GPUS = np.array([1, 2, 4, 8, 16, 32, 64])
SHARES = np.array([0.70, 0.09, 0.09, 0.08, 0.025, 0.01, 0.005])


def write_trace(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    days = rng.uniform(0, DAYS, JOBS)
    # Fewer submissions at night: accept each arrival with a daily cycle's probability.
    hour = (days % 1.0) * 24
    keep = rng.uniform(0, 1, JOBS) < 0.6 + 0.4 * np.sin((hour - 8) / 24 * 2 * np.pi)
    days = np.where(keep, days, rng.uniform(0, DAYS, JOBS))
    timestamps = np.sort((days * 86400).round().astype(np.int64))
    gpus = rng.choice(GPUS, JOBS, p=SHARES / SHARES.sum())
    durations = np.clip(rng.lognormal(np.log(1800), 2.0, JOBS), 60, 30 * 86400).astype(np.int64)
    clusters = rng.integers(0, VIRTUAL_CLUSTERS, JOBS)
    with path.open("w") as out:
        out.write("timestamp,duration,num_gpus,gpu_time,cluster\n")
        for t, d, g, c in zip(timestamps, durations, gpus, clusters, strict=True):
            out.write(f"{t},{d},{g},{d * g},vc{c:02d}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs (default 3)")
    parser.add_argument("--write", type=Path, help="only write the trace to this file")
    parser.add_argument(
        "--berth", default=str(Path(sys.executable).with_name("berth")), help="berth to run"
    )
    args = parser.parse_args()
    if args.write:
        write_trace(args.write)
        return 0
    folder = Path(tempfile.mkdtemp(prefix="berth-philly-"))
    trace, cluster = folder / "philly-shape.csv", folder / "cluster.yaml"
    write_trace(trace)
    write_cluster(cluster, NODES)
    command = [args.berth, "simulate", "--trace", str(trace), "--format", "philly"]
    command += ["--cluster", str(cluster), "--quiet", "--force", "--out", str(folder / "out")]
    seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True)
        seconds.append(time.perf_counter() - started)
        print(f"{seconds[-1]:.1f} s", file=sys.stderr)
    summary = json.loads((folder / "out" / "summary.json").read_text())
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print("| jobs | nodes | whole process (median) | jobs completed |")
    print("|---:|---:|---:|---:|")
    completed = summary.get("jobs", {}).get("completed", "?")
    print(f"| {JOBS:,} | {NODES} × 8 GPUs | {statistics.median(seconds):.1f} s | {completed} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
