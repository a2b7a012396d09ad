"""Start-up: how long the commands a newcomer types first take as whole processes.

Times ``berth --help``, ``berth validate`` and ``berth simulate`` on the shipped examples
(``examples/cluster.yaml`` and ``examples/workload.yaml``: 10 nodes, 5 pods, six report
figures), and the imports alone: a Python process importing what ``berth simulate`` imports,
less an empty Python process. Several runs of each, alternating; medians, with the machine's
load. The outputs go to a temporary folder.

    python benchmarks/startup.py --repeats 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: What ``berth simulate`` imports before it reads its inputs.
SIMULATE_IMPORTS = "import berth.cli, berth.outputs, berth.sim.run"


def commands(berth: str, python: str, out: Path) -> dict[str, list[str]]:
    cluster, workload = str(EXAMPLES / "cluster.yaml"), str(EXAMPLES / "workload.yaml")
    return {
        "berth --help": [berth, "--help"],
        "berth validate (examples)": [berth, "validate", cluster, workload],
        "berth simulate (examples)": [berth, "simulate", "--cluster", cluster]
        + ["--workload", workload, "--quiet", "--force", "--out", str(out)],
        "imports of berth simulate": [python, "-c", SIMULATE_IMPORTS],
        "empty Python": [python, "-c", "pass"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument(
        "--berth", default=str(Path(sys.executable).with_name("berth")), help="berth to run"
    )
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    out = Path(tempfile.mkdtemp(prefix="berth-startup-"))
    runs = commands(args.berth, sys.executable, out)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):  # alternating, so that the machine's moods fall on all
        for name, command in runs.items():
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            seconds[name].append(time.perf_counter() - started)
            if done.returncode != 0:
                sys.exit(f"{name} failed ({done.returncode}): {done.stderr.strip()}")
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    medians["imports of berth simulate"] -= medians.pop("empty Python")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"| command | median of {args.repeats} (s) |")
    print("|---|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
