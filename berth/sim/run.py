"""A simulation run: its inputs loaded and validated before any simulation state exists, then
simulated. ``berth simulate`` and ``berth compare`` (and tests) share this; writing the results
is ``berth.outputs``'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from berth.api.documents import is_empty_file
from berth.api.manifest import (
    ManifestError,
    Manifests,
    cross_check,
    load_files,
    parse_documents,
)
from berth.api.workloads import workload_pods
from berth.cluster.state import ClusterState
from berth.durations import format_duration
from berth.framework.config import ConfigError, SchedulerConfig
from berth.framework.config_files import DEFAULT_NAME, load_config
from berth.framework.framework import Framework
from berth.sim.cluster_input import load_cluster, node_list_format
from berth.sim.engine import SimConfig, SimResult, Simulation
from berth.sim.inputs import InputError, InputSpec
from berth.traces import TraceError, TraceOptions
from berth.traces.synthetic import DAY, builtin_documents

#: What an empty ``--config`` file gets: refused, as kubectl and kube-scheduler refuse an empty
#: file, rather than read as the default, which a file that was meant to hold something is not.
EMPTY_CONFIGURATION = (
    "empty: no scheduler configuration in it (for the built-in one, give --config default or "
    "leave --config out)"
)


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
    if config_path is not None and str(config_path) != DEFAULT_NAME and is_empty_file(config_path):
        raise ConfigError(f"{config_path}: {EMPTY_CONFIGURATION}")
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
        if spec.workloads:  # services (say) beside the trace's jobs
            manifests.extend(load_files(list(spec.workloads), spec.lenient))
        label = spec.trace
    else:
        if spec.cluster is None and not spec.cluster_from_trace:
            raise InputError(
                "--workload needs nodes: give --cluster FILE, or --cluster-from-trace to size "
                "a cluster from the workload's demand"
            )
        if spec.cluster and node_list_format(spec.cluster):
            manifests = _cluster(spec.cluster, spec.trace_options)  # a machine list: nodes
            manifests.extend(load_files(list(spec.workloads), spec.lenient))
        else:
            manifests = load_files(
                [*([spec.cluster] if spec.cluster else []), *spec.workloads], spec.lenient
            )
        label = spec.cluster or spec.workloads[0]
        if spec.cluster is None and not manifests.errors:
            notes.append(_size_from_workload(manifests, spec.trace_options))
    if manifests.errors:
        raise ManifestError(manifests.errors)
    if not manifests.nodes:
        raise InputError(f"{label}: no Node or NodePool objects: nothing to schedule on")
    sim_config.check_nodes({node.name for node in manifests.nodes})
    sim_config.check_loaning(manifests.nodes, config.period)
    # A pod its workload adopts is one of the workload's (berth.sim.adoption), not one more.
    pods = sum(not pod.owner for pod in manifests.pods) + sum(
        job.replicas for job in manifests.jobs
    )
    pods += workload_pods(manifests.workloads, len(manifests.nodes))
    if pods > spec.max_pods:
        raise InputError(
            f"{label}: the workload makes {pods:,} pods, more than --max-pods {spec.max_pods:,} "
            "(about 2.5 KB each to simulate); raise --max-pods to run it"
        )
    warnings = [str(w) for w in manifests.warnings] + warnings + hypernode_warnings(manifests)
    if spec.trace_options.network_topology is not None and not manifests.hypernodes:
        warnings.append(
            "--network-topology: the cluster has no HyperNodes, so the jobs' network topology "
            "constrains nothing (give HyperNode manifests with --cluster)"
        )
    if check_only:
        manifests = Manifests()
    return Inputs(manifests, config, sim_config, label, until, warnings, notes)


def hypernode_warnings(manifests: Manifests) -> list[str]:
    """What resolving the HyperNodes over the nodes turns up: nodes claimed twice in a tier,
    HyperNodes that hold no node (a member selector that matches nothing)."""
    if not manifests.hypernodes:
        return []
    state = ClusterState()
    state.add_nodes(manifests.nodes)
    state.hypernodes = manifests.hypernodes
    topology = state.topology()
    assert topology is not None
    lines = [f"HyperNodes: {line}" for line in topology.overlaps]
    held = {int(i) for level in topology.member for i in np.unique(level) if i >= 0}
    empty = [name for i, name in enumerate(topology.names) if i not in held]
    if empty:
        listed = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        lines.append(
            f"HyperNodes: {listed} hold no node (their members match none, or only nodes an "
            "earlier HyperNode of the tier kept)"
        )
    return lines


def _cluster(path: str, options: TraceOptions) -> Manifests:
    """Manifests, or a machine list (openb, PAI, Alibaba 2018) recognised by its header."""
    try:
        return load_cluster(path, options)
    except TraceError as exc:
        raise InputError(str(exc)) from exc


def _size_from_workload(manifests: Manifests, options: TraceOptions) -> str:
    """Nodes for a workload given without a cluster (a converted trace, say), by the rule
    ``--cluster-from-trace`` applies to traces; a Volcano Job counts as its tasks' pods, a
    workload object as the pods of its first version."""
    from berth.sim.cluster_sizing import SizingRule, size_cluster

    pods = list(manifests.pods)
    for job in manifests.jobs:
        for task in job.tasks:
            pod = replace(task.template, submit_time=job.submit_time)
            pods += [pod] * task.replicas
    seen: set[tuple[str, str]] = set()
    for workload in sorted(manifests.workloads, key=lambda w: w.submit_time):
        if workload.template is None or (workload.kind, workload.key) in seen:
            continue
        seen.add((workload.kind, workload.key))
        pod = replace(workload.template.pod, submit_time=workload.submit_time)
        pods += [pod] * workload_pods([workload], 1)
    if not pods:
        raise InputError("--cluster-from-trace: the workload has no pods to size a cluster for")
    rule = SizingRule(options.gpus_per_node, options.cpu_per_gpu, options.memory_per_gpu)
    nodes, note = size_cluster(pods, rule)
    manifests.nodes.extend(nodes)
    return note


def until_cuts_nothing(until: float, quiet_from: float) -> str:
    """What to say of an end (``--until``) past everything the run held
    (``SimResult.quiet_from``): the numbers over time are averaged over the idle rest too."""
    end, last = format_duration(until), format_duration(quiet_from)
    if end == last:  # close enough to look the same when rounded: in seconds, then
        end, last = f"{until:,.0f}s", f"{quiet_from:,.0f}s"
    return (
        f"--until {end} cuts nothing: the run's last event was at {last}, with no pod left "
        f"running (averages over time span the whole {end})"
    )


def simulate(
    inputs: Inputs,
    seed: int,
    until: float | None = None,
    progress: Callable[[float], None] | None = None,
    explain: list[str] | None = None,
) -> SimResult:
    """Run ``inputs``; ``explain`` names (glob patterns) the pods whose decisions to explain."""
    simulation = Simulation(
        inputs.manifests,
        inputs.config,
        seed=seed,
        until=inputs.until if until is None else until,
        sim_config=inputs.sim_config,
        explain=explain,
    )
    return simulation.run(progress)
