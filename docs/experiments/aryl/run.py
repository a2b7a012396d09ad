"""The Aryl experiment: capacity loaning and elastic training on Microsoft ITP traces.

    make experiment-aryl                  # or: .venv/bin/python docs/experiments/aryl/run.py

Each ITP cluster in CLUSTERS is replayed whole (``--trace ... --cluster-from-trace``: the
training pool berth sizes for it) beside inference.yaml (16 inference servers of 8 GPUs and a
chat service following the built-in azure-llm-conv day), in five modes:

- ``baseline``: rigid jobs, lending off (off.yaml);
- ``elastic``: a share of the jobs elastic, lending off, no scaling policy;
- ``loaning``: rigid jobs, idle inference servers lent to training (loan.yaml);
- ``loaning+aryl``: loaning, elastic jobs under the aryl policy (loan-aryl.yaml);
- ``loaning+edl``: loaning, elastic jobs under the edl policy (loan-edl.yaml);

the elastic ones at each share in FRACTIONS (``--elastic-fraction``: jobs chosen by a hash of
their names) and with the range RANGE (``--elastic-range``). It writes ``results.md`` (the
tables of docs/experiments/aryl.md) and a figure per cluster into the output directory, and
keeps each run's outputs there.

Options: ``--traces DIR`` (default ../shared/traces/itp when it is there, else the
``itp-clusterNN`` traces, fetched into berth's cache on first use), ``--out DIR`` (default
out/experiments/aryl), ``--clusters cluster03,cluster04``, ``--fractions 0.5``, ``--jobs N``
(parallel runs, default 2), ``--tables-only`` (rebuild results.md from an earlier run).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from berth.executors import Executor, SweepError, add_executor_argument

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CLUSTERS = ("cluster03", "cluster04", "cluster06")
FRACTIONS = (0.25, 0.5, 1.0)
#: An elastic job's gang and maximum as multiples of the workers its trace row asked for: it
#: starts with half and may grow to twice, its trace duration being its run time as asked.
RANGE = "0.5:2"
#: mode → (configuration, elastic jobs?)
MODES = {
    "baseline": ("off.yaml", False),
    "elastic": ("off.yaml", True),
    "loaning": ("loan.yaml", False),
    "loaning+aryl": ("loan-aryl.yaml", True),
    "loaning+edl": ("loan-edl.yaml", True),
}
INFERENCE_JOB = "deployment-chat"  # the chat service's row in jobs.csv
#: The developers' copies of the ITP files, beside the repository.
SHARED = ROOT.parent / "shared" / "traces" / "itp"


@dataclass(frozen=True)
class Run:
    cluster: str
    mode: str
    fraction: float  # 0 for the rigid modes

    @property
    def name(self) -> str:
        tail = f"-{round(self.fraction * 100)}" if self.fraction else ""
        return f"{self.cluster}/{self.mode}{tail}"


def runs(clusters: list[str], fractions: list[float]) -> list[Run]:
    out = []
    for cluster in clusters:
        for mode, (_, elastic) in MODES.items():
            for fraction in fractions if elastic else [0.0]:
                out.append(Run(cluster, mode, fraction))
    return out


def argv(run: Run, traces: Path, out: Path) -> list[str]:
    return [
        str(ROOT / ".venv" / "bin" / "berth"),
        "simulate",
        *simulate_args(run, traces),
        "--out", str(out / run.name),
        "--quiet",
    ]  # fmt: skip


def simulate_args(run: Run, traces: Path) -> list[str]:
    """``berth simulate``'s arguments for one run, without where its outputs go."""
    config = MODES[run.mode][0]
    return [
        "--trace", str(traces / f"{run.cluster}.csv"),
        "--cluster-from-trace",
        "--workload", str(HERE / "inference.yaml"),
        "--config", str(HERE / config),
        "--elastic-fraction", str(run.fraction),
        *(["--elastic-range", RANGE] if run.fraction else []),
    ]  # fmt: skip


def trace_folder(clusters: list[str]) -> Path:
    """The folder of the clusters' csv files: the shared copies when they are there, else
    berth's trace cache (one archive holds every cluster: ``berth trace get``)."""
    from berth.traces.fetch import trace_folder as folder

    return folder(SHARED, f"itp-{clusters[0]}")


def simulate(run: Run, traces: Path, out: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv(run, traces, out), capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{run.name}: berth simulate failed:\n{done.stderr}")
    seconds = time.perf_counter() - started
    (out / run.name / "wall.txt").write_text(f"{seconds:.1f}\n")
    print(f"{run.name}: {seconds:.0f} s", flush=True)
    return seconds


def on_ray(todo: list[Run], traces: Path, out: Path, executor: Executor) -> None:
    """Every run as a task on a Ray cluster; each run's folder and wall.txt as locally."""
    from berth.remote_simulate import run_simulations

    seconds = run_simulations(
        executor,
        [simulate_args(run, traces) for run in todo],
        [out / run.name for run in todo],
        [run.name for run in todo],
        lambda done, name: print(f"{name} ({done}/{len(todo)})", flush=True),
    )
    for run, took in zip(todo, seconds, strict=True):
        (out / run.name / "wall.txt").write_text(f"{took:.1f}\n")


def measure(run: Run, out: Path) -> dict[str, float]:
    """Queueing and JCT of the trace's jobs (jobs.csv), loaning's and the policy's figures."""
    folder = out / run.name
    queueing, jct = [], []
    with open(folder / "jobs.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["name"] == INFERENCE_JOB or not row["start_time"]:
                continue
            submit = float(row["submit_time"])
            queueing.append(float(row["start_time"]) - submit)
            if row["end_time"]:
                jct.append(float(row["end_time"]) - submit)
    summary = json.loads((folder / "summary.json").read_text())
    loaning = summary["loaning"]
    pools = loaning["pools"]
    scaling = summary.get("scaling") or {}
    evictions = summary["evictions"]
    return {
        "jobs": len(queueing),
        "queue_mean": float(np.mean(queueing)),
        "queue_p95": float(np.percentile(queueing, 95)),
        "jct_mean": float(np.mean(jct)),
        "jct_p95": float(np.percentile(jct, 95)),
        "cluster_gpus": summary["allocation"]["nvidia.com/gpu"],
        "training_gpus": pools["training"]["gpu_allocation"],
        "inference_gpus": pools["inference"]["gpu_allocation"],
        "lent_gpus_mean": loaning["lent_gpus"]["mean"],
        "lent_allocation": pools["lent"]["gpu_allocation"] if "lent" in pools else 0.0,
        "reclaims": len(loaning["reclaim_events"]),
        "jobs_preempted": loaning["jobs_preempted"],
        "gpu_hours_lost": loaning["gpu_hours_lost"],
        "scaled_in": evictions.get("scaled_in", 0),
        "preempted": evictions.get("preempted", 0) + evictions.get("reclaimed", 0),
        "inference_wait_max": loaning["inference_wait"]["max"],
        "resizes": scaling.get("targets_raised", 0) + scaling.get("targets_cut", 0),
        "wall": float((folder / "wall.txt").read_text()),
    }


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def table(cluster: str, rows: list[tuple[Run, dict[str, float]]]) -> list[str]:
    base = next(m for r, m in rows if r.mode == "baseline")
    lines = [
        f"### {cluster} ({base['jobs']:,} jobs)",
        "",
        "| mode | elastic | queueing mean / p95 | ratio | JCT mean / p95 | ratio | GPUs allocated: "
        "cluster / training pool / inference pool | lent GPUs (mean) | jobs preempted | GPU-h lost "
        "| workers scaled in | longest inference wait | run |",
        "|---|---:|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run, m in rows:
        lines.append(
            f"| {run.mode} | {round(run.fraction * 100)}% "
            f"| {hours(m['queue_mean'])} / {hours(m['queue_p95'])} "
            f"| {base['queue_mean'] / m['queue_mean']:.2f}× "
            f"| {hours(m['jct_mean'])} / {hours(m['jct_p95'])} "
            f"| {base['jct_mean'] / m['jct_mean']:.2f}× "
            f"| {m['cluster_gpus']:.1%} / {m['training_gpus']:.1%} / {m['inference_gpus']:.1%} "
            f"| {m['lent_gpus_mean']:.1f} "
            f"| {m['jobs_preempted']:,} | {m['gpu_hours_lost']:,.0f} | {m['scaled_in']:,} "
            f"| {m['inference_wait_max']:.0f} s | {m['wall']:.0f} s |"
        )
    return lines + [""]


def figure(cluster: str, rows: list[tuple[Run, dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = next(m for r, m in rows if r.mode == "baseline")
    labels = [r.mode + (f" {round(r.fraction * 100)}%" if r.fraction else "") for r, _ in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.bar(x - 0.2, [base["queue_mean"] / m["queue_mean"] for _, m in rows], 0.4,
           label="queueing, baseline / mode")  # fmt: skip
    ax.bar(x + 0.2, [base["jct_mean"] / m["jct_mean"] for _, m in rows], 0.4,
           label="JCT, baseline / mode")  # fmt: skip
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(1.5, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(x, labels, rotation=35, ha="right")
    ax.set_ylabel("improvement over the baseline (×)")
    ax.set_title(f"ITP {cluster}: mean queueing and JCT against rigid jobs without loaning")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--traces",
        type=Path,
        help=f"folder of the ITP clusterNN.csv files (default: {SHARED} when it is there, else "
        "berth's trace cache, downloading the itp traces into it)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "out" / "experiments" / "aryl",
        help="results, tables and plots (default: %(default)s)",
    )
    parser.add_argument(
        "--clusters", default=",".join(CLUSTERS), help="comma list (default: %(default)s)"
    )
    parser.add_argument(
        "--fractions",
        default=",".join(map(str, FRACTIONS)),
        help="shares of multi-worker jobs made elastic, comma list (default: %(default)s)",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="runs at a time on this machine (default: %(default)s)"
    )
    add_executor_argument(parser)
    parser.add_argument(
        "--tables-only", action="store_true", help="rebuild tables and plots from --out's results"
    )
    args = parser.parse_args()
    clusters = args.clusters.split(",")
    fractions = [float(f) for f in args.fractions.split(",")]
    todo = runs(clusters, fractions)
    if not args.tables_only:
        args.traces = args.traces or trace_folder(clusters)
        for cluster in clusters:
            if not (args.traces / f"{cluster}.csv").exists():
                sys.exit(f"{args.traces / cluster}.csv: not found (--traces DIR)")
        started = time.perf_counter()
        if args.executor.remote:
            try:
                on_ray(todo, args.traces, args.out, args.executor)
            except SweepError as exc:
                sys.exit(str(exc))
        else:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                list(pool.map(lambda r: simulate(r, args.traces, args.out), todo))
        print(f"{len(todo)} runs in {time.perf_counter() - started:.0f} s")
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; {args.jobs} runs at a time. Elastic jobs: "
        f"--elastic-range {RANGE}.",
        "",
    ]
    for cluster in clusters:
        rows = [(r, measure(r, args.out)) for r in todo if r.cluster == cluster]
        lines += table(cluster, rows)
        figure(cluster, rows, args.out / f"{cluster}-ratios.png")
    (args.out / "results.md").write_text("\n".join(lines))
    print(f"{args.out / 'results.md'}")


if __name__ == "__main__":
    main()
