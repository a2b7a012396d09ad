"""Fill until full: the FGD paper's experiment (Weng et al., USENIX ATC'23, §6).

The workload is a pod list in shuffled order, extended by pods sampled from it with replacement
until its total GPU request reaches ``target`` (130%) of the cluster's GPUs (or trimmed at
random down to it). Each pod arrives once, in that order, and never leaves; the scheduler's
filters and scorers place it, or it is dropped. What is recorded is the share of the cluster's
GPUs allocated as a function of the GPU request that has arrived, and the fragmentation left
(measured against the original pod list's shapes).

The run uses the configuration's filters and scorers directly (no actions, queues or gangs:
every pod is a job of one), which is what makes ~8,000 placements on 1,213 nodes take seconds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from berth.api.manifest import ManifestError, load_file
from berth.api.objects import Node, Pod
from berth.cluster.devices import record_devices
from berth.cluster.fragmentation import FragmentationTracker, target_workload
from berth.cluster.state import ClusterState
from berth.defaults import FILL_TARGET as DEFAULT_TARGET
from berth.executors import LOCAL, Executor, raise_failures, ray_map
from berth.framework.config import SchedulerConfig, parse_config
from berth.framework.framework import Framework
from berth.framework.registry import PLUGINS
from berth.framework.search import NodeSearch
from berth.resources import GPU
from berth.sim.cluster_input import load_cluster, trace_table
from berth.sim.inputs import InputError
from berth.traces import TraceError, iter_jobs

#: Arrived-workload points (percent of the cluster's GPUs) the curve is sampled at.
STEP_PERCENT = 1


def policy_config(policy: str) -> SchedulerConfig:
    """A configuration that filters as usual and scores with ``policy`` alone."""
    filters = [{"name": n} for n in ("resource-fit", "node-affinity", "taint-toleration")]
    raw = {"actions": "allocate", "tiers": [{"plugins": [*filters, {"name": policy}]}]}
    return parse_config(raw, f"<policy {policy}>")


def gpu_of(pod: Pod) -> int:
    return pod.requests.get(GPU, 0)


def fill_workload(pods: list[Pod], capacity: int, seed: int, target: float) -> list[Pod]:
    """``pods`` shuffled, then extended by copies sampled with replacement (named
    ``<pod>-tuned-<i>``) while the total GPU request stays within ``target`` × ``capacity``;
    when the pods already ask more, random ones are left out until it fits."""
    rng = np.random.default_rng(seed)
    order = [pods[i] for i in rng.permutation(len(pods))]
    goal = target * capacity
    total = sum(gpu_of(p) for p in order)
    while total > goal and order:
        total -= gpu_of(order.pop(int(rng.integers(len(order)))))
    extra = 0
    while pods:
        source = pods[int(rng.integers(len(pods)))]
        if total + gpu_of(source) > goal:
            break
        total += gpu_of(source)
        order.append(
            dataclasses.replace(
                source, name=f"{source.name}-tuned-{extra}", annotations=dict(source.annotations)
            )
        )
        extra += 1
    return order


@dataclass(slots=True)
class FillRun:
    """One run: allocation (and fragmentation) sampled at each arrived-workload step."""

    label: str
    seed: int
    nodes: int
    capacity: int  # milli-GPU
    arrived: list[float]  # percent of capacity requested so far, at each sample
    allocated: list[float]  # percent of capacity allocated at that point
    fragmented: list[float]  # percent of capacity idle but unusable by the workload
    pods: int
    placed: int
    dropped: int
    wall_seconds: float

    @property
    def final_allocation(self) -> float:
        return self.allocated[-1] if self.allocated else 0.0

    def summary(self) -> dict[str, object]:
        capacity_gpus = self.capacity / 1000
        return {
            "policy": self.label,
            "seed": self.seed,
            "nodes": self.nodes,
            "gpus": capacity_gpus,
            "pods": self.pods,
            "placed": self.placed,
            "dropped": self.dropped,
            "arrived_percent": round(self.arrived[-1], 3) if self.arrived else 0.0,
            "gpu_allocation_percent": round(self.final_allocation, 3),
            "gpus_unallocated": round(capacity_gpus * (1 - self.final_allocation / 100), 1),
            "fragmentation_percent": round(self.fragmented[-1], 3) if self.fragmented else 0.0,
            "wall_seconds": round(self.wall_seconds, 3),
        }


def fill(
    nodes: list[Node],
    pods: list[Pod],
    config: SchedulerConfig,
    seed: int,
    target: float = DEFAULT_TARGET,
    label: str = "",
) -> FillRun:
    """Place the fill workload of ``pods`` on ``nodes`` pod by pod; see the module doc."""
    state = ClusterState(seed=seed)
    state.add_nodes(nodes)
    capacity = int(state.allocatable[: state.n, state.gpu_column].sum())
    if capacity <= 0:
        raise ValueError("the cluster has no GPUs: fill until full measures GPU allocation")
    workload = fill_workload(pods, capacity, seed, target)
    started = time.perf_counter()
    framework = Framework(config)
    framework.on_workload(pods)
    tracker = FragmentationTracker(target_workload(pods, gpu_only=True))
    search = NodeSearch(state, framework.filters, framework.scorers, config.search, seed=seed)
    arrived: list[float] = []
    allocated: list[float] = []
    fragmented: list[float] = []
    asked = placed = 0
    next_step = 0.0

    def sample() -> None:
        arrived.append(100.0 * asked / capacity)
        allocated.append(100.0 * float(state.total_requested()[state.gpu_column]) / capacity)
        fragmented.append(100.0 * tracker.total(state) / capacity)

    for pod in workload:
        while 100.0 * asked / capacity >= next_step:
            sample()
            next_step += STEP_PERCENT
        asked += gpu_of(pod)
        cls = search.compile(pod)
        row = search.place(cls)
        if row is None:
            continue
        placement = state.bind(pod, row, cls.request, framework.pick_devices(cls, state, row))
        pod.bound_node = state.names[row]
        if placement is not None:
            record_devices(pod, pod.bound_node, placement)
        placed += 1
    sample()
    return FillRun(
        label=label or config.source,
        seed=seed,
        nodes=state.n,
        capacity=capacity,
        arrived=arrived,
        allocated=allocated,
        fragmented=fragmented,
        pods=len(workload),
        placed=placed,
        dropped=len(workload) - placed,
        wall_seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------------- inputs and sweeps


@dataclass(frozen=True, slots=True)
class FillSpec:
    """One run by paths, cheap to hand to a worker process (which loads the inputs itself)."""

    cluster: str
    workload: str
    policy: str  # a policy name, or a scheduler configuration file
    seed: int
    target: float = DEFAULT_TARGET


def load_fill_inputs(cluster: str, workload: str) -> tuple[list[Node], list[Pod]]:
    """Nodes from a machine list or manifests; pods from a trace's job table or manifests.
    Raises InputError with one short line for anything unusable."""

    try:
        manifests = load_cluster(cluster)
        if manifests.errors:
            raise ManifestError(manifests.errors)
        nodes = list(manifests.nodes)
        if not nodes:
            raise InputError(f"{cluster}: no nodes")
        table = trace_table(workload)
        if table is not None and table[1] != "jobs":
            raise InputError(
                f"{workload}: holds {table[1]} ({table[0]}), not pods; --workload takes a pod "
                "list (a trace's jobs) or manifests"
            )
        if table is not None:
            pods = [pod for job in iter_jobs(workload, table[0]) for pod in job.pods]
        else:
            loaded = load_file(workload)
            if loaded.errors:
                raise ManifestError(loaded.errors)
            pods = list(loaded.pods)
    except (TraceError, OSError) as exc:
        raise InputError(str(exc)) from exc
    if not pods:
        raise InputError(f"{workload}: no pods")
    return nodes, pods


def spec_config(policy: str) -> SchedulerConfig:
    """A policy name, or the path of a scheduler configuration."""
    from berth.framework.config_files import load_config

    if policy in PLUGINS:
        return policy_config(policy)
    return load_config(policy)


_LOADED: dict[tuple[str, str], tuple[list[Node], list[Pod]]] = {}


def fill_inputs(cluster: str, workload: str) -> tuple[list[Node], list[Pod]]:
    """``load_fill_inputs``, once per process: the command checks the inputs with it before
    any run, and its runs (in this process, in worker processes forked from it, or shipped
    to Ray from it) take them from here instead of reading them again."""
    key = (cluster, workload)
    if key not in _LOADED:
        _LOADED[key] = load_fill_inputs(cluster, workload)
    return _LOADED[key]


def run_spec(spec: FillSpec) -> FillRun:
    """One run in this process; inputs are loaded once per process and copied per run."""
    return run_loaded(fill_inputs(spec.cluster, spec.workload), (spec, spec_config(spec.policy)))


def run_loaded(
    loaded: tuple[list[Node], list[Pod]], run: tuple[FillSpec, SchedulerConfig]
) -> FillRun:
    """One run on inputs already loaded (the pods are copied: a run writes into them)."""
    spec, config = run
    nodes, pods = loaded
    fresh = [dataclasses.replace(p, annotations=dict(p.annotations)) for p in pods]
    return fill(nodes, fresh, config, spec.seed, spec.target, spec.policy)


def run_specs(
    specs: list[FillSpec],
    jobs: int = 1,
    finished: Callable[[int], None] | None = None,
    executor: Executor = LOCAL,
) -> list[FillRun]:
    """Every run, in ``jobs`` processes or on a Ray cluster; results in the order of
    ``specs``. ``finished`` hears how many runs are done after each one. On Ray every input is
    loaded once, here, and every configuration resolved here."""
    if executor.remote:
        keys = {(spec.cluster, spec.workload) for spec in specs}
        shared = {key: fill_inputs(*key) for key in sorted(keys)}
        configs = {policy: spec_config(policy) for policy in {spec.policy for spec in specs}}
        tasks = [((s.cluster, s.workload), (s, configs[s.policy])) for s in specs]
        labels = [f"{spec.policy} seed {spec.seed}" for spec in specs]
        results = ray_map(
            executor,
            run_loaded,
            shared,
            tasks,
            labels,
            None if finished is None else (lambda done, _label: finished(done)),
            read_only=True,  # run_loaded copies the pods it writes into
        )
        raise_failures(results)
        return results
    if jobs <= 1 or len(specs) <= 1:
        runs = []
        for spec in specs:
            runs.append(run_spec(spec))
            if finished is not None:
                finished(len(runs))
        return runs
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        runs = []
        for run in pool.map(run_spec, specs, chunksize=1):
            runs.append(run)
            if finished is not None:
                finished(len(runs))
        return runs


def mean_curves(runs: list[FillRun]) -> dict[str, dict[str, list[float]]]:
    """Per policy: the arrived grid and the mean allocation and fragmentation over its seeds
    (runs cut to their shortest common grid)."""
    by_policy: dict[str, list[FillRun]] = {}
    for run in runs:
        by_policy.setdefault(run.label, []).append(run)
    curves = {}
    for policy, group in by_policy.items():
        size = min(len(r.arrived) for r in group)
        curves[policy] = {
            "arrived": [float(np.mean([r.arrived[i] for r in group])) for i in range(size)],
            "allocated": [float(np.mean([r.allocated[i] for r in group])) for i in range(size)],
            "fragmented": [float(np.mean([r.fragmented[i] for r in group])) for i in range(size)],
        }
    return curves
