"""The colocation experiment: online services and Alibaba 2017 batch tasks on one cluster.

    make experiment-colocation     # or: .venv/bin/python docs/experiments/colocation/run.py

A cluster of Alibaba 2018 machines (96 cores each, as in ``machine_meta.csv``) runs online
services (Deployments whose cpu follows the 2018 machines' daily shape) and a sample of the
Alibaba 2017 batch tasks, for 12 hours, three ways:

- ``separate``: no colocation; the nodes are split into an online pool and a batch pool;
- ``requests``: one pool, batch placed on what online services have not requested;
- ``colocation``: batch as BE pods on batch resources (Koordinator's formula), with cpu
  suppression, memory eviction and load-aware placement.

It writes the generated inputs, each run's output folder and ``results.json`` / ``results.md``
(the table in docs/experiments/colocation.md) under ``--out`` (default
out/experiments/colocation). ``--tables-only`` rebuilds the tables from an earlier run.

The traces are the developers' copies beside the repository when they are there; otherwise
``alibaba-2017-batch`` and ``alibaba-2018-machine-usage`` are fetched into berth's trace cache
(about 2 GB of downloads), and the daily shape is taken from the first USAGE_ROWS rows of the
full machine_usage, where the copies hold a 100,000-row, 10-machine extract of it.
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
from itertools import islice
from pathlib import Path

import numpy as np
import yaml

from berth.executors import SweepError, add_executor_argument

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SHARED = ROOT.parent / "shared" / "traces"
#: Rows of the published machine_usage read for the daily shape (without the shared extract).
USAGE_ROWS = 100_000
MODES = ("separate", "requests", "colocation")

NODES = 20
CORES = 96
MEMORY_GIB = 384  # machine_meta gives memory normalised to 100; a stated assumption
WINDOW = 12 * 3600  # seconds of the batch trace replayed (from its time 0)
#: Online services: pods of 4 cores / 16 GiB, requesting this share of the cluster.
ONLINE_SHARE = 0.8
ONLINE_SERVICES = 12
ONLINE_POD_CPU, ONLINE_POD_GIB = 4, 16
#: Mean cpu use of the services' requests (spread over services), and memory use.
ONLINE_CPU_MEANS = (0.2, 0.25, 0.3, 0.35, 0.4)
ONLINE_MEMORY_USE = 0.6
#: Nodes of the online pool when the pools are separate (its requests fit at ~94%).
ONLINE_POOL = 17
#: Fraction of the trace's batch instances kept: a task is kept with probability TASK_SAMPLE
#: and then SAMPLE / TASK_SAMPLE of its instances; a task's instances are bundled into pods of
#: at most BUNDLE_CORES (they run side by side anyway), so the run has thousands of pods, not
#: hundreds of thousands.
SAMPLE = 0.02
TASK_SAMPLE = 0.1
BUNDLE_CORES = 12
TRACE_MEMORY_GIB = 64  # a machine, for the trace's normalised memory (berth's default)
SEED = 7


# ----------------------------------------------------------------------------- inputs


def trace_file(shared: str, name: str) -> Path:
    """The developers' copy ``shared`` when it is there, else trace ``name`` from berth's cache
    (downloaded first if it is not there yet)."""
    path = SHARED / shared
    if path.is_file():
        return path
    from berth.traces.catalog import FetchError
    from berth.traces.fetch import resolve_trace

    try:
        return resolve_trace(name)
    except FetchError as exc:
        sys.exit(f"error: {exc}")


def daily_shape():
    from berth.traces.errors import TraceLog
    from berth.traces.formats.alibaba2018 import read_usage
    from berth.traces.model import TraceOptions
    from berth.traces.usage_shape import diurnal_shape

    path = trace_file("alibaba-2018/machine_usage_subset.csv", "alibaba-2018-machine-usage")
    samples = read_usage(path, TraceOptions(), TraceLog())
    if not path.is_relative_to(SHARED):  # the whole published table
        samples = islice(samples, USAGE_ROWS)
    return diurnal_shape(samples)


def cluster(mode: str) -> list[dict]:
    nodes = []
    for i in range(NODES):
        labels = {"pool": "online" if i < ONLINE_POOL else "batch"} if mode == "separate" else {}
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"m-{i:03d}", "labels": labels},
                "status": {
                    "allocatable": {"cpu": str(CORES), "memory": f"{MEMORY_GIB}Gi", "pods": "250"}
                },
            }
        )
    return nodes


def online(mode: str, shape) -> list[dict]:
    replicas = int(NODES * CORES * ONLINE_SHARE / ONLINE_POD_CPU / ONLINE_SERVICES)
    docs = []
    for i in range(ONLINE_SERVICES):
        curve = shape.curve(ONLINE_CPU_MEANS[i % len(ONLINE_CPU_MEANS)], ONLINE_MEMORY_USE)
        spec = {
            "priority": 9000,
            "containers": [
                {
                    "name": "app",
                    "image": f"svc-{i}:1",
                    "resources": {
                        "requests": {"cpu": str(ONLINE_POD_CPU), "memory": f"{ONLINE_POD_GIB}Gi"}
                    },
                }
            ],
        }
        if mode == "separate":
            spec["nodeSelector"] = {"pool": "online"}
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"svc-{i}"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": f"svc-{i}"}},
                    "template": {
                        "metadata": {
                            "labels": {"app": f"svc-{i}", "koordinator.sh/qosClass": "LS"},
                            "annotations": {
                                "berth.io/usage-curve": curve.render(),
                                "berth.io/usage-period": "86400",
                            },
                        },
                        "spec": spec,
                    },
                },
            }
        )
    return docs


def batch_tasks() -> list[tuple[int, str, int, int, float, int]]:
    """(submit, name, pods, cores per pod in millicores, GiB per pod, duration) of the sampled
    tasks created in the window that finished (their duration is known)."""
    rng = np.random.default_rng(SEED)
    out = []
    with open(trace_file("alibaba-2017/batch_task.csv", "alibaba-2017-batch"), newline="") as f:
        for row in csv.reader(f):
            if not row or not row[0].lstrip("-").isdigit():
                continue  # the header, in the copy that has one
            created, ended = int(row[0]), int(row[1] or 0)
            if not row[6] or not row[7] or ended <= created or not 0 <= created < WINDOW:
                continue
            cpu = int(float(row[6]) * 10)  # hundredths of a core -> millicores
            if cpu <= 0:
                continue
            if rng.random() >= TASK_SAMPLE:
                continue
            wanted = int(row[4]) * SAMPLE / TASK_SAMPLE
            kept = int(wanted) + int(rng.random() < wanted - int(wanted))
            if not kept:
                continue
            per_pod = max(1, min(kept, BUNDLE_CORES * 1000 // cpu))
            pods = -(-kept // per_pod)
            gib = float(row[7]) * TRACE_MEMORY_GIB * per_pod
            out.append((created, f"t-{row[2]}-{row[3]}", pods, cpu * per_pod, gib, ended - created))
    return out


def batch(mode: str, tasks) -> list[dict]:
    docs = []
    for submit, name, pods, millicores, gib, duration in tasks:
        memory = f"{max(1, round(gib * 1024))}Mi"
        if mode == "colocation":
            requests = {
                "kubernetes.io/batch-cpu": str(millicores),
                "kubernetes.io/batch-memory": memory,
            }
            labels = {"koordinator.sh/qosClass": "BE"}
            priority = 5000  # koord-batch
        else:
            requests = {"cpu": f"{millicores}m", "memory": memory}
            labels = {}
            priority = 0  # an ordinary pod
        spec = {
            "priority": priority,
            "containers": [{"name": "task", "image": "batch", "resources": {"requests": requests}}],
        }
        if mode == "separate":
            spec["nodeSelector"] = {"pool": "batch"}
        docs.append(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": name, "annotations": {"berth.io/submit-time": str(submit)}},
                "spec": {
                    "minAvailable": 1,
                    "tasks": [
                        {
                            "name": "instance",
                            "replicas": pods,
                            "template": {
                                "metadata": {
                                    "labels": labels,
                                    "annotations": {
                                        "berth.io/duration": str(duration),
                                        "berth.io/utilization": "1",
                                    },
                                },
                                "spec": spec,
                            },
                        }
                    ],
                },
            }
        )
    return docs


def config(mode: str) -> dict:
    scorers = [{"name": "predicates"}]
    if mode == "colocation":
        scorers.append({"name": "load-aware"})
    return {
        "actions": "enqueue, allocate, backfill",
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": scorers}],
        "simulation": {"colocation": {"metricReportIntervalSeconds": 60}},
    }


def write_inputs(folder: Path, mode: str, shape, tasks) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "cluster": (folder / "cluster.yaml", cluster(mode)),
        "online": (folder / "online.yaml", online(mode, shape)),
        "batch": (folder / "batch.yaml", batch(mode, tasks)),
        "config": (folder / "config.yaml", [config(mode)]),
    }
    for path, docs in files.values():
        with path.open("w") as f:
            yaml.safe_dump_all(docs, f, sort_keys=False, width=120)
    return {name: path for name, (path, _) in files.items()}


# ----------------------------------------------------------------------------- runs


def simulate(inputs: dict[str, Path], out: Path) -> float:
    argv = [
        str(Path(sys.executable).parent / "berth"),
        "simulate",
        *simulate_args(inputs),
        "--out", str(out),
        "--force",
        "--quiet",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - started


def simulate_args(inputs: dict[str, Path]) -> list[str]:
    """``berth simulate``'s arguments for one mode, without where its outputs go."""
    return [
        "--cluster", str(inputs["cluster"]),
        "--workload", str(inputs["online"]),
        "--workload", str(inputs["batch"]),
        "--config", str(inputs["config"]),
        "--until", str(WINDOW),
    ]  # fmt: skip


def measures(out: Path, seconds: float, cores: dict[str, int]) -> dict:
    """The run's figures; ``cores`` gives each batch job's millicores per pod."""
    summary = json.loads((out / "summary.json").read_text())
    coloc = summary["colocation"]
    online_evicted = batch_done = batch_evicted = 0
    batch_core_seconds = 0.0
    waits = []
    with (out / "pods.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            evicted = row["phase"] == "Evicted"
            if row["name"].startswith("svc-"):
                online_evicted += evicted
                continue
            batch_evicted += evicted
            if row["start_time"]:
                waits.append(float(row["start_time"]) - float(row["submit_time"]))
            if row["phase"] == "Succeeded":
                batch_done += 1
                run = float(row["end_time"]) - float(row["start_time"])
                batch_core_seconds += cores[row["job"]] / 1000 * run
    return {
        "cpu_utilization_avg": coloc["cpu_utilization_avg"],
        "cpu_utilization_node_p99": coloc["cpu_utilization_node_p99"],
        "memory_utilization_avg": coloc["memory_utilization_avg"],
        "online_slo_violation_fraction": coloc["online_slo_violation_fraction"],
        "online_evicted": online_evicted,
        "be_evictions": coloc["be_evictions"],
        "batch_pods_evicted": batch_evicted,
        "batch_pods_done": batch_done,
        "batch_core_hours": batch_core_seconds / 3600,
        "batch_wait_mean": float(np.mean(waits)) if waits else None,
        "batch_wait_p95": float(np.percentile(waits, 95)) if waits else None,
        "seconds": seconds,
    }


# ----------------------------------------------------------------------------- tables


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def minutes(value: float | None) -> str:
    return "–" if value is None else f"{value / 60:.1f} min"


def table(results: dict) -> str:
    rows = [
        ("average cpu utilisation", lambda r: pct(r["cpu_utilization_avg"])),
        ("p99 node cpu utilisation", lambda r: pct(r["cpu_utilization_node_p99"])),
        ("average memory utilisation", lambda r: pct(r["memory_utilization_avg"])),
        ("batch work done (core-hours)", lambda r: f"{r['batch_core_hours']:,.0f}"),
        ("batch pods completed", lambda r: f"{r['batch_pods_done']:,}"),
        ("batch queueing, mean", lambda r: minutes(r["batch_wait_mean"])),
        ("batch queueing, p95", lambda r: minutes(r["batch_wait_p95"])),
        ("BE evictions (memory / cpu)", lambda r: _evictions(r["be_evictions"])),
        ("online pods evicted", lambda r: str(r["online_evicted"])),
        ("online SLO proxy (pod-time on hot nodes)",
         lambda r: pct(r["online_slo_violation_fraction"])),
        ("simulation time", lambda r: f"{r['seconds']:.0f} s"),
    ]  # fmt: skip
    lines = ["| | " + " | ".join(MODES) + " |", "|---|" + "---:|" * len(MODES)]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(results[m]) for m in MODES) + " |")
    return "\n".join(lines) + "\n"


def _evictions(counts: dict) -> str:
    return f"{counts.get('memory', 0)} / {counts.get('cpu', 0)}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "out/experiments/colocation",
        help="results, tables and plots (default: %(default)s)",
    )
    add_executor_argument(parser)
    parser.add_argument(
        "--tables-only", action="store_true", help="rebuild tables and plots from --out's results"
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    results_path = out / "results.json"
    if args.tables_only:
        results = json.loads(results_path.read_text())
    else:
        started = time.perf_counter()
        shape = daily_shape()
        tasks = batch_tasks()
        cores = {t[1]: t[3] for t in tasks}
        print(
            f"{len(tasks):,} batch tasks sampled, {sum(t[2] for t in tasks):,} pods; {NODES} nodes",
            flush=True,
        )
        results = {}
        written = {mode: write_inputs(out / "inputs" / mode, mode, shape, tasks) for mode in MODES}
        if args.executor.remote:  # the modes at once, as tasks on a Ray cluster
            from berth.remote_simulate import run_simulations

            try:
                took = run_simulations(
                    args.executor,
                    [simulate_args(written[mode]) for mode in MODES],
                    [out / mode for mode in MODES],
                    list(MODES),
                )
            except SweepError as exc:
                sys.exit(str(exc))
            walls = dict(zip(MODES, took, strict=True))
        for mode in MODES:
            if args.executor.remote:
                seconds = walls[mode]
            else:
                seconds = simulate(written[mode], out / mode)
            results[mode] = measures(out / mode, seconds, cores)
            print(
                f"{mode}: {pct(results[mode]['cpu_utilization_avg'])} cpu, {seconds:.0f} s",
                flush=True,
            )
        results["_run"] = {
            "total_seconds": time.perf_counter() - started,
            "machine": (
                f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
            ),
        }
        out.mkdir(parents=True, exist_ok=True)
        results_path.write_text(json.dumps(results, indent=2) + "\n")
    text = table(results)
    (out / "results.md").write_text(text)
    print(text)
    run = results["_run"]
    print(f"total {run['total_seconds']:.0f} s on {run['machine']}")


if __name__ == "__main__":
    main()
