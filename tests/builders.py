"""Small builders shared by the tests (plugins, actions, framework; documents for the
simulator and the real API server).

Quantities are canonical (cpu in millicores, ``nvidia.com/gpu`` in milli-GPU, memory in bytes),
except that the ``mem`` arguments of ``node`` and ``pod`` are MiB, for readable tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from berth.api.hypernodes import HyperNode, HyperNodeMember
from berth.api.keys import HOSTNAME_LABEL, QUEUE_NAME_ANNOTATION, ZONE_LABEL
from berth.api.objects import GroupPhase, Node, Pod, PodGroup, Queue
from berth.api.selectors import (
    LabelSelector,
    PodAffinityTerm,
    Requirement,
    Taint,
    WeightedPodAffinityTerm,
)
from berth.framework.config import SchedulerConfig, parse_config
from berth.framework.config_files import load_config
from berth.framework.scheduler import Scheduler
from berth.framework.session import Session
from berth.resources import GPU, MIB, to_canonical

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
    allocatable = {"cpu": cpu, "memory": mem * MIB, "pods": pods}
    if gpu:
        allocatable[GPU] = gpu
    allocatable.update(extra or {})
    all_labels = dict(labels or {})
    if zone is not None:
        all_labels[ZONE] = zone
    return Node(
        name,
        labels=all_labels,
        allocatable=allocatable,
        taints=tuple(taints),
        unschedulable=unschedulable,
    )


def pod(
    name: str,
    cpu: int = 1000,
    mem: int = 1024,
    gpu: int = 0,
    extra: dict[str, int] | None = None,
    **fields: Any,
) -> Pod:
    """A pod requesting ``pods: 1`` plus the given amounts (zero amounts are left out)."""
    requests = {"cpu": cpu, "memory": mem * MIB, GPU: gpu, **(extra or {})}
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


#: gang without its votes on victims, as berth's default has it: priority (preempt) and the
#: queue plugins (reclaim) choose, and the eviction actions keep gangs whole.
GANG = {"name": "gang", "enablePreemptable": False, "enableReclaimable": False}


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


def session_of(s: Scheduler, now: float = 0.0) -> Session:
    """A session opened over the scheduler's state as ``run_session`` opens one (its actions
    not run), for tests that look at what the plugins made of it."""
    return Session(
        s.state,
        s.framework,
        s.search,
        s.waiting,
        s.queues,
        now,
        queue_allocated=s.queue_allocated,
        all_jobs=s.jobs,
    )


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


def queued(p: Pod, queue: str) -> Pod:
    """``p`` in ``queue`` (the annotation implicit groups take their queue from)."""
    p.annotations[QUEUE_NAME_ANNOTATION] = queue
    return p


@dataclass
class Case:
    """One table row for the queueing tests: a cluster, what already runs on it, what arrives,
    and what one session must decide. ``binds`` is checked exactly; ``evictions`` (pod name →
    reason), ``phases`` (group name, or namespace/name, → phase) and ``reasons`` (pod name →
    pending reason) only for the names they list, except that no pod outside ``evictions`` may
    be evicted. A row ported from Volcano's tests whose expectation is berth's deliberate
    difference says so in ``differs`` (documented in docs/configuration.md)."""

    nodes: list[Node]
    pods: list[Pod] = field(default_factory=list)
    bound: list[tuple[Pod, str]] = field(default_factory=list)
    groups: list[PodGroup] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    binds: dict[str, str] | set[str] = field(default_factory=dict)
    evictions: dict[str, str] = field(default_factory=dict)
    phases: dict[str, GroupPhase] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    now: float = 0.0
    differs: str = ""
    #: Volcano HyperNodes (``berth.api.hypernodes.HyperNode``) over ``nodes``.
    hypernodes: list[Any] = field(default_factory=list)


def check(case: Case, cfg: SchedulerConfig) -> Scheduler:
    """Run ``case`` for one session under ``cfg`` and assert its expectations."""
    s = scheduler(case.nodes, cfg, queues=case.queues, groups=case.groups, bound=case.bound)
    s.state.hypernodes = list(case.hypernodes)
    binds = run(s, case.pods, now=case.now)
    if isinstance(case.binds, set):
        assert set(binds) == case.binds
    else:
        assert binds == case.binds
    assert {e.pod.name: e.reason for e in s.evictions} == case.evictions
    for name, phase in case.phases.items():
        key = name if "/" in name else f"default/{name}"
        assert s.jobs[key].group.phase == phase, name
    by_name = {p.name: p for p in case.pods}
    for name, reason in case.reasons.items():
        assert s.pending_reason(by_name[name]) == reason, name
    return s


# -- Volcano's test vocabulary ----------------------------------------------------------------
#
# Volcano's scheduler tests give quantities as Kubernetes strings ("1", "500m", "1G", "4Gi") and
# switch on only the extension points a test names (a switch left unset is off there, unlike
# in a configuration file, where it defaults to on). These builders carry both over unchanged.


def amounts(cpu: str = "", mem: str = "", scalars: dict[str, str] | None = None) -> dict[str, int]:
    """Canonical amounts from Kubernetes quantities (zero amounts left out)."""
    result = {"cpu": to_canonical("cpu", cpu or "0"), "memory": to_canonical("memory", mem or "0")}
    for name, value in (scalars or {}).items():
        result[name] = to_canonical(name, value)
    return {k: v for k, v in result.items() if v}


def vnode(
    name: str,
    cpu: str,
    mem: str,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    scalars: dict[str, str] | None = None,
) -> Node:
    allocatable = {**amounts(cpu, mem, scalars), "pods": pods}
    return Node(name, labels=dict(labels or {}), allocatable=allocatable)


def vpod(
    name: str,
    cpu: str = "",
    mem: str = "",
    group: str = "",
    scalars: dict[str, str] | None = None,
    **fields: Any,
) -> Pod:
    """A pod as Volcano's BuildPod makes it: the requests given (none: best-effort)."""
    requests = {**amounts(cpu, mem, scalars), "pods": 1}
    return Pod(name, requests=requests, group=group, **fields)


#: Volcano's per-plugin switches, by the names its tests set.
SWITCHES = (
    "JobOrder",
    "TaskOrder",
    "JobReady",
    "JobPipelined",
    "JobStarving",
    "QueueOrder",
    "Preemptable",
    "Reclaimable",
    "Preemptive",
    "Predicate",
    "NodeOrder",
    "JobEnqueued",
    "Overused",
    "Allocatable",
)


def only(name: str, *enabled: str, **options: Any) -> dict[str, Any]:
    """A plugin entry with only the ``enabled`` switches on, as in Volcano's tests."""
    unknown = set(enabled) - set(SWITCHES)
    assert not unknown, unknown
    entry: dict[str, Any] = {"name": name, **options}
    for switch in SWITCHES:
        entry[f"enable{switch}"] = switch in enabled
    return entry


def tiers(*plugin_tiers: list[str | dict[str, Any]], actions: str) -> SchedulerConfig:
    """A configuration of several tiers (Volcano's layout)."""
    raw = [
        {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]}
        for tier in plugin_tiers
    ]
    return parse_config({"actions": actions, "tiers": raw}, "test")


# -- HyperNodes, as Volcano's network-topology tests build them ----------------------------------


def hypernode(name: str, tier: int, *members: str) -> HyperNode:
    """A HyperNode naming its members exactly: nodes ("s0-n1") or HyperNodes ("s0"), as
    Volcano's tests name them."""
    chosen = (HyperNodeMember("Node" if "-n" in m else "HyperNode", exact=m) for m in members)
    return HyperNode(name, tier, tuple(chosen))


def three_tiers() -> list[HyperNode]:
    """Racks s3..s6 of two nodes, s1 over s3 and s4, s2 over s5 and s6, s0 over s1 and s2."""
    racks = [hypernode(f"s{i}", 1, f"s{i}-n1", f"s{i}-n2") for i in range(3, 7)]
    return racks + [
        hypernode("s1", 2, "s3", "s4"),
        hypernode("s2", 2, "s5", "s6"),
        hypernode("s0", 3, "s1", "s2"),
    ]


def elastic_job_doc(
    requests: dict[str, str],
    *,
    replicas: int = 4,
    min_available: int = 2,
    annotations: dict[str, str] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """An elastic Volcano Job ``train`` (``berth.io/elastic``) of one task of ``replicas``
    workers, each requesting ``requests``; ``metadata`` adds fields (namespace, uid)."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "annotations": {"berth.io/elastic": "true", **(annotations or {})},
            **metadata,
        },
        "spec": {
            "minAvailable": min_available,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "w",
                                    "image": "trainer:1.0",
                                    "resources": {"requests": requests},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }


def node_doc(name: str, **allocatable: str) -> dict[str, Any]:
    """A Node document of 4 cores, 8Gi and 110 pods, with ``allocatable`` added (or
    replacing those), e.g. ``**{"nvidia.com/gpu": "1"}``."""
    amounts = {"cpu": "4", "memory": "8Gi", "pods": "110", **allocatable}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": amounts},
    }


def timed_pod_doc(name: str, on: str, seconds: int, requests: dict[str, str]) -> dict[str, Any]:
    """A Pod document that runs ``seconds`` (``berth.io/duration``), bound to node ``on``
    already (empty: it waits to be scheduled)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {"berth.io/duration": str(seconds)}},
        "spec": {
            "nodeName": on,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}],
        },
    }
