"""What ``berth simulate`` does, as functions the CLI, ``berth compare`` and tests share: load
and validate every input before anything runs, simulate, write the output directory."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from berth.api.manifest import (
    ManifestError,
    Manifests,
    cross_check,
    load_files,
    parse_documents,
)
from berth.api.objects import JobPhase, PodPhase
from berth.framework.config import SchedulerConfig, load_config
from berth.framework.framework import Framework
from berth.metrics.summary import eviction_cause, summarize, write_summary
from berth.metrics.tables import JobOutcome, write_jobs_csv, write_pods_csv
from berth.report.html import write_report
from berth.sim.cluster_input import load_cluster, node_list_format
from berth.sim.engine import SimConfig, SimResult, Simulation
from berth.traces import Selection, TraceError, TraceOptions
from berth.traces.synthetic import DAY, builtin_documents


class InputError(ValueError):
    """Inputs that are individually valid but cannot make a run (e.g. no nodes)."""


#: The most pods a run builds unless told otherwise: about 5 GB of memory at the roughly 2.5 KB
#: a simulated pod costs (objects, events, accounting).
DEFAULT_MAX_PODS = 2_000_000


@dataclass(frozen=True, slots=True)
class InputSpec:
    """Where a run's cluster and workload come from. Paths and settings only, so it is cheap to
    hand to a worker process, which loads the inputs itself."""

    cluster: str | None = None
    workloads: tuple[str, ...] = ()
    trace: str | None = None
    trace_format: str | None = None
    cluster_from_trace: bool = False
    trace_options: TraceOptions = field(default_factory=TraceOptions)
    selection: Selection | None = None  # which trace jobs to keep (None: all)
    max_pods: int = DEFAULT_MAX_PODS
    seed: int = 0
    until: float | None = None

    @property
    def builtin(self) -> bool:
        return self.cluster is None and not self.workloads and self.trace is None


@dataclass
class Inputs:
    manifests: Manifests
    config: SchedulerConfig
    sim_config: SimConfig
    label: str
    until: float | None
    warnings: list[str]  # unknown fields, configuration plugins berth lacks, skipped rows
    notes: list[str]  # how the inputs were read (e.g. how a cluster was sized)


def load_inputs(
    spec: InputSpec, config_path: str | Path | None, check_only: bool = False
) -> Inputs:
    """Everything a run needs, validated. Raises ManifestError (all problems at once),
    ConfigError, PluginArgumentError or InputError before any simulation state exists."""
    config = load_config(config_path)
    Framework(config)  # plugin arguments are checked here, before any input is read
    sim_config = SimConfig.from_raw(config.simulation, config.source)
    warnings = list(config.warnings)
    notes: list[str] = []
    until = spec.until
    if spec.builtin:
        cluster_docs, workload_docs = builtin_documents(spec.seed)
        manifests = parse_documents(cluster_docs + workload_docs, "<builtin>")
        cross_check(manifests)
        label = "built-in scenario"
        if until is None:
            until = DAY  # its services never finish; one simulated day is the scenario
    elif spec.trace is not None:
        from berth.sim.trace_input import trace_manifests

        manifests, trace_warnings, notes = trace_manifests(spec)
        warnings += trace_warnings
        label = spec.trace
    else:
        if spec.cluster is None and not spec.cluster_from_trace:
            raise InputError(
                "--workload needs nodes: give --cluster FILE, or --cluster-from-trace to size "
                "a cluster from the workload's demand"
            )
        if spec.cluster and node_list_format(spec.cluster):
            manifests = _cluster(spec.cluster)  # a machine list: nodes only
            manifests.extend(load_files(list(spec.workloads)))
        else:
            manifests = load_files([*([spec.cluster] if spec.cluster else []), *spec.workloads])
        label = spec.cluster or spec.workloads[0]
        if spec.cluster is None and not manifests.errors:
            notes.append(_size_from_workload(manifests, spec.trace_options))
    if manifests.errors:
        raise ManifestError(manifests.errors)
    if not manifests.nodes:
        raise InputError(f"{label}: no Node or NodePool objects: nothing to schedule on")
    warnings = [str(w) for w in manifests.warnings] + warnings
    if check_only:
        manifests = Manifests()
    return Inputs(manifests, config, sim_config, label, until, warnings, notes)


def _cluster(path: str) -> Manifests:
    """Manifests, or a machine list (openb, PAI, Alibaba 2018) recognised by its header."""
    try:
        return load_cluster(path)
    except TraceError as exc:
        raise InputError(str(exc)) from exc


def _size_from_workload(manifests: Manifests, options: TraceOptions) -> str:
    """Nodes for a workload given without a cluster (a converted trace, say), by the rule
    ``--cluster-from-trace`` applies to traces; a Volcano Job counts as its tasks' pods."""
    from berth.sim.cluster_sizing import SizingRule, size_cluster

    pods = list(manifests.pods)
    for job in manifests.jobs:
        for task in job.tasks:
            pod = replace(task.template, submit_time=job.submit_time)
            pods += [pod] * task.replicas
    if not pods:
        raise InputError("--cluster-from-trace: the workload has no pods to size a cluster for")
    rule = SizingRule(options.gpus_per_node, options.cpu_per_gpu, options.memory_per_gpu)
    nodes, note = size_cluster(pods, rule)
    manifests.nodes.extend(nodes)
    return note


#: What a folder berth wrote holds; a folder with only these may be written over.
RUN_MARKERS = ("summary.json", "compare.json")


def prepare_output(out_dir: str | Path, force: bool = False) -> str | None:
    """Check before anything runs that results can be written to ``out_dir`` (created when
    they are written): a folder holding an earlier berth run is written over (the note returned
    says so); one holding anything else is refused unless ``force``, so no file of the user's
    is lost."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    note = None
    if out.is_dir():
        entries = {entry.name for entry in out.iterdir()}
        if entries & set(RUN_MARKERS):
            note = f"writing over the earlier run in {out}"
        elif entries and force:
            note = f"writing into {out}, which holds other files (--force)"
        elif entries:
            raise InputError(
                f"--out {out}: holds files berth did not write; choose a new or empty folder, "
                "or give --force to write into it"
            )
        existing = out
    else:
        existing = next(parent for parent in out.absolute().parents if parent.exists())
        if not existing.is_dir():
            raise InputError(f"--out {out}: cannot create ({existing} is not a folder)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: cannot write in {existing}")
    return note


def simulate(
    inputs: Inputs,
    seed: int,
    until: float | None = None,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    simulation = Simulation(
        inputs.manifests,
        inputs.config,
        seed=seed,
        until=inputs.until if until is None else until,
        sim_config=inputs.sim_config,
    )
    return simulation.run(progress)


def job_outcomes(result: SimResult) -> dict[str, JobOutcome]:
    """Per group: pods made, the batch Job's phase and retries, preemptions, and a reason
    (the scheduler's for a group still waiting, the Job's last condition for one that ended)."""
    outcomes = {group.key: JobOutcome() for group in result.groups}
    for pod in result.pods:
        outcome = outcomes.get(f"{pod.namespace}/{pod.group}")
        if outcome is None:
            continue
        outcome.tasks += 1
        cause = eviction_cause(result.reasons.get(pod.key, ""))
        if pod.phase == PodPhase.EVICTED and cause != "other":
            outcome.preemptions += 1
        if pod.phase == PodPhase.PENDING and not outcome.reason:
            outcome.reason = result.reasons.get(pod.key, "")
    for key, reason in result.scheduler.last_reasons.items():
        if key in outcomes:
            outcomes[key].reason = str(reason)
    for job in result.jobs:
        outcome = outcomes.get(job.key)
        if outcome is None:
            continue
        outcome.phase, outcome.retries = str(job.phase), job.retries
        if (
            job.phase != JobPhase.RUNNING
            and job.conditions
            and job.key not in (result.scheduler.last_reasons)
        ):
            outcome.reason = job.conditions[-1][2]
    return outcomes


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
        reasons=result.reasons,
    )
    write_summary(out / "summary.json", summary)
    group_queue = {g.key: g.queue for g in result.groups}
    write_pods_csv(out / "pods.csv", result.pods, group_queue, result.reasons)
    write_jobs_csv(out / "jobs.csv", result.groups, job_outcomes(result))
    result.series.write_csv(out / "timeseries.csv")
    report = write_report(out, summary, result.series, result.pods, result.groups, result.reasons)
    return summary, report
