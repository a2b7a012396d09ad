"""What ``berth simulate`` does, as functions the CLI, tests and later comparisons share:
load and validate every input before anything runs, simulate, write the output directory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from berth.api.manifest import ManifestError, Manifests, cross_check, load_files, parse_documents
from berth.framework.config import SchedulerConfig, load_config
from berth.framework.framework import Framework
from berth.metrics.summary import summarize, write_summary
from berth.metrics.tables import write_jobs_csv, write_pods_csv
from berth.report.html import write_report
from berth.sim.engine import SimConfig, SimResult, Simulation
from berth.traces.synthetic import builtin_documents


class InputError(ValueError):
    """Inputs that are individually valid but cannot make a run (e.g. no nodes)."""


@dataclass
class Inputs:
    manifests: Manifests
    config: SchedulerConfig
    sim_config: SimConfig
    builtin: bool


def load_inputs(
    cluster: str | Path | None,
    workloads: Sequence[str | Path],
    config_path: str | Path | None,
    seed: int,
) -> Inputs:
    """Everything a run needs, validated. Raises ManifestError (all problems at once),
    ConfigError or InputError before any simulation state exists."""
    config = load_config(config_path)
    Framework(config)  # plugin arguments are checked here, before any input is read
    sim_config = SimConfig.from_raw(config.simulation, config.source)
    builtin = cluster is None and not workloads
    if builtin:
        cluster_docs, workload_docs = builtin_documents(seed)
        manifests = parse_documents(cluster_docs + workload_docs, "<builtin>")
        cross_check(manifests)
    else:
        if cluster is None:
            raise InputError("--cluster is required when --workload is given")
        manifests = load_files([cluster, *workloads])
    if manifests.errors:
        raise ManifestError(manifests.errors)
    if not manifests.nodes:
        raise InputError(f"{cluster}: no Node or NodePool objects: nothing to schedule on")
    return Inputs(manifests, config, sim_config, builtin)


def simulate(
    inputs: Inputs,
    seed: int,
    until: float | None,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    simulation = Simulation(
        inputs.manifests, inputs.config, seed=seed, until=until, sim_config=inputs.sim_config
    )
    return simulation.run(progress)


def write_outputs(result: SimResult, out_dir: str | Path) -> tuple[dict[str, Any], Path]:
    """summary.json, pods.csv, jobs.csv, timeseries.csv and report.html (+ PNGs) in out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(
        result.pods,
        result.groups,
        result.series,
        seed=result.seed,
        events=result.events,
        wall_seconds=result.wall_seconds,
        end_time=result.end_time,
    )
    write_summary(out / "summary.json", summary)
    group_queue = {g.key: g.queue for g in result.groups}
    write_pods_csv(out / "pods.csv", result.pods, group_queue)
    tasks: dict[str, int] = {}
    for pod in result.pods:
        key = f"{pod.namespace}/{pod.group}"
        tasks[key] = tasks.get(key, 0) + 1
    write_jobs_csv(out / "jobs.csv", result.groups, tasks)
    result.series.write_csv(out / "timeseries.csv")
    report = write_report(out, summary, result.series, result.pods, result.groups, result.reasons)
    return summary, report
