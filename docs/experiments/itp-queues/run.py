"""The ITP queues experiment: three scheduler configurations on Microsoft ITP traces.

    make experiment-itp                  # or: .venv/bin/python docs/experiments/itp-queues/run.py

For each ITP cluster in CLUSTERS, one ``berth compare`` run replays the whole trace on the
cluster ``--cluster-from-trace`` sizes for it, with the jobs spread over three weighted queues,
under fifo.yaml, gang-drf.yaml and preempt-reclaim.yaml. Then it writes ``results.md`` (the
tables pasted into docs/experiments/itp-queues.md) next to each cluster's compare.html.

Options: ``--traces DIR`` (default ../shared/traces/itp when it is there, else the
``itp-clusterNN`` traces, fetched into berth's cache on first use), ``--out DIR`` (default
out/experiments/itp-queues), ``--clusters cluster03,cluster06``, ``--tables-only`` (rebuild
results.md from an earlier run without simulating).
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
from pathlib import Path

import numpy as np

from berth.executors import add_executor_argument

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: Configurations in comparison order; the first is the baseline of compare's ratios.
CONFIGS = ("fifo.yaml", "gang-drf.yaml", "preempt-reclaim.yaml")
NAMES = tuple(Path(c).stem for c in CONFIGS)
#: Jobs to queues by a hash of the job name, in proportion to the weights (docs/traces.md).
QUEUES = "prod:3,research:2,dev:1"
#: The two ITP clusters with the largest share of multi-GPU jobs that replay in about a minute.
CLUSTERS = ("cluster03", "cluster06")
#: The developers' copies of the ITP files, beside the repository.
SHARED = ROOT.parent / "shared/traces/itp"


def trace_folder(clusters: list[str]) -> Path:
    """The folder of the clusters' csv files: the shared copies when they are there, else
    berth's trace cache (one archive holds every cluster: ``berth trace get``)."""
    from berth.traces.fetch import trace_folder as folder

    return folder(SHARED, f"itp-{clusters[0]}")


def config_paths() -> list[Path]:
    return [HERE / name for name in CONFIGS]


def compare_argv(trace: Path, out: Path, *extra: str) -> list[str]:
    """The ``berth compare`` arguments (without the program name) for one trace."""
    argv = ["compare", "--trace", str(trace), "--cluster-from-trace", "--queues", QUEUES]
    for path in config_paths():
        argv += ["--config", str(path)]
    return argv + ["--out", str(out), *extra]


def check_configs() -> None:
    """Load every configuration through berth's loader (and its plugin argument checks)."""
    from berth.framework.config import load_config
    from berth.framework.framework import Framework

    for path in config_paths():
        config = load_config(path)
        Framework(config)
        if config.warnings:
            raise SystemExit(f"{path}: {config.warnings}")


# ----------------------------------------------------------------------------- tables


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = float(seconds)
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{s / 60:.0f}m"
    if s < 86_400:
        return f"{s / 3600:.1f}h"
    return f"{s / 86_400:.1f}d"


def fmt_pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def run_facts(run: Path) -> dict:
    """summary.json plus what compare's table leaves out: evicted jobs and eviction reasons,
    per-queue and per-size queueing delay, and the GPU capacity."""
    summary = json.loads((run / "summary.json").read_text())
    pods = read_csv(run / "pods.csv")
    jobs = read_csv(run / "jobs.csv")
    evicted = [p for p in pods if p["phase"] == "Evicted"]
    reclaimed = sum(1 for p in evicted if p["reason"].startswith("reclaimed"))
    preempted = sum(1 for p in evicted if p["reason"].startswith("preempted"))
    evicted_jobs = {p["job"] for p in evicted}
    delays: dict[str, list[float]] = {}
    for job in jobs:
        if not job["start_time"]:
            continue
        delay = float(job["start_time"]) - float(job["submit_time"])
        delays.setdefault(f"queue {job['queue']}", []).append(delay)
        size = "gang (>1 pod)" if int(job["min_member"]) > 1 else "1 pod"
        delays.setdefault(size, []).append(delay)
    not_started: dict[str, int] = {}
    for job in jobs:
        if not job["start_time"]:
            not_started[job["queue"]] = not_started.get(job["queue"], 0) + 1
    with open(run / "timeseries.csv", newline="") as handle:
        first = next(csv.DictReader(handle))
    return {
        "summary": summary,
        "evicted_pods": len(evicted),
        "evicted_jobs": len(evicted_jobs),
        "reclaimed": reclaimed,
        "preempted": preempted,
        "delays": delays,
        "not_started": not_started,
        "gpus": int(float(first["capacity_gpu"]) / 1000),
    }


def delay_stats(values: list[float]) -> tuple[float, float, float]:
    data = np.asarray(values, dtype=float)
    return float(data.mean()), float(np.percentile(data, 50)), float(np.percentile(data, 95))


def cluster_tables(name: str, out: Path, wall: float | None) -> str:
    facts = {config: run_facts(out / config) for config in NAMES}
    s = {config: facts[config]["summary"] for config in NAMES}
    lines = [f"### {name}", ""]
    gpus = facts[NAMES[0]]["gpus"]
    jobs = s[NAMES[0]]["jobs"]["submitted"]
    timing = f", compare wall time {wall:.1f} s" if wall is not None else ""
    lines += [
        f"{jobs:,} jobs; cluster sized by `--cluster-from-trace`: {gpus // 8} nodes × 8 GPUs "
        f"({gpus} GPUs){timing}. Report: `{out}/compare.html`.",
        "",
        "| metric | " + " | ".join(NAMES) + " |",
        "|---|" + "---:|" * len(NAMES),
    ]

    def row(label: str, cell) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(c) for c in NAMES) + " |")

    row("jobs completed", lambda c: f"{s[c]['jobs']['completed']:,}")
    row("jobs never started (pending at end)", lambda c: f"{s[c]['jobs']['pending']}")
    row("jobs 'Running' at end (none of their pods is)", lambda c: f"{s[c]['jobs']['running']}")
    for stat in ("mean", "p50", "p95"):
        row(f"queueing delay {stat}", lambda c, k=stat: fmt_duration(s[c]["queueing_delay"][k]))
    for stat in ("mean", "p50", "p95"):
        row(f"JCT {stat}", lambda c, k=stat: fmt_duration(s[c]["jct"][k]))
    row("makespan", lambda c: fmt_duration(s[c]["makespan"]))
    row("GPU allocation (time-weighted)", lambda c: fmt_pct(s[c]["allocation"]["nvidia.com/gpu"]))
    row("idle GPUs stranded", lambda c: fmt_pct(s[c]["fragmentation"].get("nvidia.com/gpu")))
    row("fairness (Jain, time-weighted)", lambda c: f"{s[c]['fairness']:.3f}")
    row(
        "pods evicted (jobs)",
        lambda c: f"{facts[c]['evicted_pods']} ({facts[c]['evicted_jobs']})",
    )
    row("…by reclaim / by preempt", lambda c: f"{facts[c]['reclaimed']} / {facts[c]['preempted']}")
    row("run wall seconds", lambda c: f"{s[c]['wall_seconds']:.1f}")
    lines += ["", "Queueing delay by queue and job size (mean / p50 / p95, started jobs):", ""]
    lines += ["| jobs | " + " | ".join(NAMES) + " |", "|---|" + "---:|" * len(NAMES)]
    groups = ["queue prod", "queue research", "queue dev", "1 pod", "gang (>1 pod)"]
    for group in groups:
        cells = []
        for c in NAMES:
            values = facts[c]["delays"].get(group, [])
            if not values:
                cells.append("–")
                continue
            mean, p50, p95 = delay_stats(values)
            cells.append(f"{fmt_duration(mean)} / {fmt_duration(p50)} / {fmt_duration(p95)}")
        count = len(facts[NAMES[0]]["delays"].get(group, []))
        label = f"{group} ({count:,})" if count else group
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    never = {c: facts[c]["not_started"] for c in NAMES if facts[c]["not_started"]}
    if never:
        parts = "; ".join(
            f"{c}: " + ", ".join(f"{q} {n}" for q, n in sorted(v.items())) for c, v in never.items()
        )
        heading = "Jobs without a start time (never minMember pods running at once), by queue"
        lines += ["", f"{heading}: {parts}."]
    return "\n".join(lines) + "\n"


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        total = Path("/proc/meminfo").read_text().split()[1]
        memory = f", {int(total) / 1024 / 1024:.0f} GiB"
    except (OSError, IndexError, ValueError):
        pass
    return (
        f"{os.cpu_count()} vCPUs ({platform.machine()}{', ' + model if model else ''}){memory}, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def write_results(out: Path, clusters: list[str], walls: dict[str, float], total: float | None):
    parts = [
        "# ITP queues experiment: results",
        "",
        f"Machine: {machine()}.",
        f"Queues: `--queues {QUEUES}`. Configurations: {', '.join(CONFIGS)}.",
    ]
    if total is not None:
        parts.append(f"Total wall time of the experiment: {total:.1f} s.")
    parts.append("")
    for name in clusters:
        parts.append(cluster_tables(name, out / name, walls.get(name)))
    text = "\n".join(parts)
    (out / "results.md").write_text(text)
    return text


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
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
        default=ROOT / "out/experiments/itp-queues",
        help="results, tables and plots (default: %(default)s)",
    )
    parser.add_argument(
        "--clusters", default=",".join(CLUSTERS), help="comma list (default: %(default)s)"
    )
    add_executor_argument(parser)
    parser.add_argument(
        "--tables-only", action="store_true", help="rebuild tables and plots from --out's results"
    )
    args = parser.parse_args(argv)
    clusters = [c.strip() for c in args.clusters.split(",") if c.strip()]
    berth = Path(sys.executable).parent / "berth"
    walls: dict[str, float] = {}
    total = None
    if not args.tables_only:
        check_configs()
        args.traces = args.traces or trace_folder(clusters)
        missing = [c for c in clusters if not (args.traces / f"{c}.csv").is_file()]
        if missing:
            names = ", ".join(missing)
            print(f"error: no {names} in {args.traces} (--traces DIR)", file=sys.stderr)
            return 1
        started = time.perf_counter()
        for name in clusters:
            t0 = time.perf_counter()
            argv_ = compare_argv(args.traces / f"{name}.csv", args.out / name)
            argv_ += ["--executor", str(args.executor)]
            print("$ berth " + " ".join(argv_), flush=True)
            subprocess.run([str(berth), *argv_], check=True)
            walls[name] = time.perf_counter() - t0
            print(f"{name}: {walls[name]:.1f} s", flush=True)
        total = time.perf_counter() - started
    print(write_results(args.out, clusters, walls, total))
    print(f"wrote {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
