"""Small builders shared by the engine tests (plugins, actions, framework).

Quantities are canonical: cpu in millicores, memory in MiB, ``nvidia.com/gpu`` in milli-GPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from berth.api.objects import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    LabelSelector,
    Node,
    Pod,
    PodAffinityTerm,
    PodGroup,
    Queue,
    Requirement,
    Taint,
    WeightedPodAffinityTerm,
)
from berth.framework.config import SchedulerConfig, load_config, parse_config
from berth.framework.scheduler import Scheduler
from berth.resources import GPU

HOST = HOSTNAME_LABEL
ZONE = ZONE_LABEL


def node(
    name: str,
    cpu: int = 4000,
    mem: int = 8192,
    pods: int = 110,
    gpu: int = 0,
    zone: str | None = None,
    labels: dict[str, str] | None = None,
    taints: Iterable[Taint] = (),
    extra: dict[str, int] | None = None,
    unschedulable: bool = False,
) -> Node:
    allocatable = {"cpu": cpu, "memory": mem, "pods": pods}
    if gpu:
        allocatable[GPU] = gpu
    allocatable.update(extra or {})
    all_labels = dict(labels or {})
    if zone is not None:
        all_labels[ZONE] = zone
    return Node(name, labels=all_labels, allocatable=allocatable, taints=tuple(taints),
                unschedulable=unschedulable)


def pod(
    name: str,
    cpu: int = 1000,
    mem: int = 1024,
    gpu: int = 0,
    extra: dict[str, int] | None = None,
    **fields: Any,
) -> Pod:
    """A pod requesting ``pods: 1`` plus the given amounts (zero amounts are left out)."""
    requests = {"cpu": cpu, "memory": mem, GPU: gpu, **(extra or {})}
    requests = {k: v for k, v in requests.items() if v}
    requests["pods"] = 1
    return Pod(name, requests=requests, **fields)


def best_effort(name: str, **fields: Any) -> Pod:
    return Pod(name, requests={"pods": 1}, **fields)


def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, tuple(values))


def sel(**labels: str) -> LabelSelector:
    """matchLabels as ``In`` requirements."""
    return LabelSelector(tuple(Requirement(k, "In", (v,)) for k, v in labels.items()))


def term(
    selector: LabelSelector, key: str = HOST, namespaces: tuple[str, ...] = ()
) -> PodAffinityTerm:
    return PodAffinityTerm(selector, key, namespaces)


def weighted(weight: int, selector: LabelSelector, key: str = HOST) -> WeightedPodAffinityTerm:
    return WeightedPodAffinityTerm(weight, PodAffinityTerm(selector, key))


def config(
    plugins: Iterable[str | dict[str, Any]], actions: str = "enqueue, allocate, backfill"
) -> SchedulerConfig:
    """A one-tier configuration with the given plugins."""
    items = [p if isinstance(p, dict) else {"name": p} for p in plugins]
    return parse_config({"actions": actions, "tiers": [{"plugins": items}]}, "test")


def scheduler(
    nodes: Iterable[Node],
    cfg: SchedulerConfig | None = None,
    queues: Iterable[Queue] = (),
    groups: Iterable[PodGroup] = (),
    bound: Iterable[tuple[Pod, str]] = (),
) -> Scheduler:
    s = Scheduler(cfg if cfg is not None else load_config(None))
    for n in nodes:
        s.add_node(n)
    for q in queues:
        s.add_queue(q)
    for g in groups:
        s.add_group(g)
    for p, where in bound:
        s.place_bound(p, where)
    return s


def run(s: Scheduler, pods: Iterable[Pod] = (), now: float = 0.0) -> dict[str, str]:
    """Submit ``pods``, run one session and return {pod name: node}."""
    for p in pods:
        s.submit(p)
    return {b.pod.name: b.node for b in s.run_session(now)}


def place_one(
    nodes: Iterable[Node],
    new: Pod,
    bound: Iterable[tuple[Pod, str]] = (),
    cfg: SchedulerConfig | None = None,
) -> tuple[str | None, Scheduler]:
    """Schedule a single pod; returns (node or None, scheduler) for reason checks."""
    s = scheduler(nodes, cfg, bound=bound)
    binds = run(s, [new])
    return binds.get(new.name), s


def feasible(s: Scheduler, p: Pod) -> set[str]:
    """Names of the nodes that pass every filter for ``p`` right now (nothing is bound)."""
    search = s.search
    cls = search.compile(p)
    rows = search.feasible(cls, slice(0, s.state.n), cls.filters)
    return {s.state.names[int(r)] for r in rows}
