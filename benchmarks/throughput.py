"""Produce the README's throughput table: every `berth bench` scenario at 1K, 5K and 10K nodes
with 10 running pods per node, best of three runs each (the machine is shared; the best run is
the least disturbed one). Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys

SCENARIOS = ("basic", "spread", "anti-affinity", "gang", "mixed")


def measure(scenario: str, nodes: int, pods: int, repeats: int) -> dict:
    best: dict | None = None
    for seed in range(repeats):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "berth.cli",
                "bench",
                "--scenario",
                scenario,
                "--nodes",
                str(nodes),
                "--running",
                str(nodes * 10),
                "--pods",
                str(pods),
                "--seed",
                str(seed),
                "--json",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out)
        if best is None or result["pods_per_second"] > best["pods_per_second"]:
            best = result
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"<!-- {platform.machine()}, Python {platform.python_version()} -->")
    print("| scenario | " + " | ".join(f"{n:,} nodes" for n in args.nodes) + " |")
    print("|---|" + "---:|" * len(args.nodes))
    for scenario in SCENARIOS:
        cells = []
        for nodes in args.nodes:
            r = measure(scenario, nodes, args.pods, args.repeats)
            note = f" ({r['unschedulable']:,} unschedulable)" if r["unschedulable"] else ""
            cells.append(f"{r['pods_per_second']:,.0f}{note}")
        print(f"| {scenario} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
