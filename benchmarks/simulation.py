"""Produce the README's simulation-speed figures with `berth bench --sim` on the public traces
beside the project (../shared/traces): ITP cluster04, all ten ITP clusters one after another,
and the openb default pod list on its own node list. Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


def bench(trace: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "berth.cli", "bench", "--sim", "--trace", str(trace), "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def row(label: str, results: list[dict]) -> str:
    jobs = sum(r["jobs"] for r in results)
    events = sum(r["events"] for r in results)
    seconds = sum(r["seconds"] for r in results)
    nodes = "/".join(str(r["nodes"]) for r in results) if len(results) < 3 else "sized per cluster"
    return (
        f"| {label} | {jobs:,} | {nodes} | {events:,} | {seconds:.1f} | "
        f"{events / seconds:,.0f} | {jobs / seconds:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traces", type=Path, default=TRACES)
    args = parser.parse_args()
    itp = sorted((args.traces / "itp").glob("cluster*.csv"))
    print("| trace | jobs | nodes | events | wall s | events/s | jobs/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(
        row("ITP cluster04 (60 days)", [bench(args.traces / "itp" / "cluster04.csv")]), flush=True
    )
    print(row("ITP, all ten clusters", [bench(path) for path in itp]), flush=True)
    openb = args.traces / "alibaba-openb-2023" / "openb_pod_list_default.csv"
    print(row("openb default (8K pods, 1,523 nodes)", [bench(openb)]), flush=True)


if __name__ == "__main__":
    main()
