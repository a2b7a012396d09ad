"""The network-topology figures of docs/topology.md.

1. ``berth bench --scenario topology``: gangs of 64 workers that must share a spine, placed on
   10,000 nodes racked in three tiers (pods/s, best of --repeat runs).
2. An ITP replay (cluster04, 60 days, on the project's traces beside it) on a racked cluster
   of 88 eight-GPU servers (racks of 8, spines of 4 racks): how often a job of several workers
   lands within one rack, under berth's default configuration (no topology plugin), with
   network-topology-aware and every multi-worker job in soft mode, and in hard mode within a
   rack; with the mean queueing delay of those jobs, which hard mode pays for.

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

from berth.api.hypernodes import PoolTier, pool_switch_labels
from berth.framework.config import DEFAULT_CONFIG

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
POOL = "itp"
NODES = 88
TIERS = (PoolTier("rack", 8), PoolTier("spine", 4))
RACK = "topology.berth.io/rack"


def berth(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "berth.cli", *args], check=True, capture_output=True, text=True
    ).stdout


def bench(repeat: int) -> dict:
    runs = [
        json.loads(
            berth(
                "bench",
                "--scenario",
                "topology",
                "--nodes",
                "10000",
                "--running",
                "20000",
                "--pods",
                "640",
                "--json",
            )  # fmt: skip
        )
        for _ in range(repeat)
    ]
    return max(runs, key=lambda r: r["pods_per_second"])


def cluster_file(folder: Path) -> Path:
    pool = {
        "apiVersion": "berth.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": POOL},
        "spec": {
            "count": NODES,
            "template": {
                "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}}
            },
            "topology": {"tiers": [{"name": t.name, "size": t.size} for t in TIERS]},
        },
    }
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump(pool))
    return path


def config_file(folder: Path) -> Path:
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    config["tiers"][-1]["plugins"].append({"name": "network-topology-aware"})
    path = folder / "topology.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def locality(out: Path) -> tuple[int, int, float]:
    """(jobs of several pods that ran, how many within one rack, their mean queueing delay)."""
    width = len(str(NODES - 1))
    racks = {
        f"{POOL}-{i:0{width}d}": labels[RACK]
        for i, labels in enumerate(pool_switch_labels(POOL, NODES, TIERS))
    }
    nodes: dict[str, list[str]] = defaultdict(list)
    with (out / "pods.csv").open() as f:
        for row in csv.DictReader(f):
            nodes[row["job"]].append(row["node"])
    jobs = within = 0
    waits = []
    with (out / "jobs.csv").open() as f:
        for row in csv.DictReader(f):
            placed = nodes[row["name"]]
            if len(placed) < 2 or not all(placed) or not row["start_time"]:
                continue
            jobs += 1
            within += len({racks[n] for n in placed}) == 1
            waits.append(float(row["start_time"]) - float(row["submit_time"]))
    return jobs, within, sum(waits) / max(len(waits), 1)


def replay(trace: Path) -> list[tuple[str, int, int, float, int]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cluster, config = cluster_file(folder), config_file(folder)
        runs = {
            "default configuration": [],
            "network-topology-aware, soft": ["--config", str(config), "--network-topology", "soft"],
            "network-topology-aware, hard:1": [
                "--config",
                str(config),
                "--network-topology",
                "hard:1",
            ],  # fmt: skip
        }
        for label, extra in runs.items():
            out = folder / label.replace(" ", "_").replace(",", "").replace(":", "")
            berth(
                "simulate", "--trace", str(trace), "--cluster", str(cluster), "--seed", "1",
                "--out", str(out), *extra,
            )  # fmt: skip
            summary = json.loads((out / "summary.json").read_text())
            pending = summary["jobs"]["pending"]
            rows.append((label, *locality(out), pending))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    result = bench(args.repeat)
    print("| scenario | nodes | running | pods | wall s | pods/s |")
    print("|---|---:|---:|---:|---:|---:|")
    print(
        f"| 64-worker gangs, hard within a spine, 3 tiers | {result['nodes']:,} | "
        f"{result['running']:,} | {result['scheduled']:,} | {result['seconds']:.2f} | "
        f"{result['pods_per_second']:,.0f} |",
        flush=True,
    )
    print()
    print("| ITP cluster04, 60 days | multi-worker jobs run | within one rack | share | "
          "mean queueing delay s | jobs never started |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for label, jobs, within, wait, pending in replay(args.traces / "itp" / "cluster04.csv"):
        share = 100.0 * within / max(jobs, 1)
        print(f"| {label} | {jobs} | {within} | {share:.1f}% | {wait:,.0f} | {pending} |")


if __name__ == "__main__":
    main()
