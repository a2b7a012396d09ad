"""Random clusters and workloads as plain data, builders that turn them into fresh berth objects,
and an independent checker of what a placement must respect at the moment it is made.

The strategies draw plain tuples/dicts (never berth objects) so one drawn scenario can be built
twice, e.g. for two simulation runs that must agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import strategies as st

from berth.actions.eviction import Evictor
from berth.api.keys import HOSTNAME_LABEL, QUEUE_NAME_ANNOTATION, ZONE_LABEL
from berth.api.manifest import Manifests
from berth.api.objects import Node, Pod, PodGroup, Queue
from berth.api.selectors import (
    Affinity,
    LabelSelector,
    PodAffinityTerm,
    Requirement,
    SpreadConstraint,
    Taint,
    Toleration,
)
from berth.cluster.pod_terms import carried_terms
from berth.cluster.state import ClusterState
from berth.framework.scheduler import Scheduler
from berth.framework.session import Session
from berth.plugins.node_affinity import node_affinity_mask
from berth.resources import MIB

ZONES = ("za", "zb", "zc")
APPS = ("a", "b", "c")
NAMESPACES = ("default", "ns2")
TAINT = Taint("dedicated", "infra", "NoSchedule")
TOLERATION = Toleration("dedicated", "Equal", "infra", "NoSchedule")
#: Queues jobs are put in: one without limits, one with a capability, one that does not exist.
CAPABILITIES = {"default": {}, "capped": {"cpu": 3000, "nvidia.com/gpu": 2000}}
QUEUES = ("default",) * 4 + ("capped", "capped", "ghost")

# -- strategies -----------------------------------------------------------------------------------


@st.composite
def node_specs(draw: st.DrawFn, index: int) -> dict[str, Any]:
    gpu = draw(st.sampled_from([0, 0, 0, 1000, 2000, 4000, 8000]))
    return {
        "name": f"node-{index:02d}",
        "cpu": draw(st.sampled_from([1000, 2000, 4000, 8000, 16000])),
        "memory": draw(st.sampled_from([2048, 4096, 8192, 32768])),
        "gpu": gpu,
        "pods": draw(st.sampled_from([2, 4, 8, 110, 110])),
        "zone": draw(st.sampled_from(ZONES + (None,))),
        "kind": "gpu" if gpu else "cpu",
        "tainted": draw(st.integers(0, 3)) == 0,
        "unschedulable": draw(st.integers(0, 9)) == 0,
    }


@st.composite
def clusters(draw: st.DrawFn, min_nodes: int = 1, max_nodes: int = 12) -> list[dict[str, Any]]:
    count = draw(st.integers(min_nodes, max_nodes))
    return [draw(node_specs(i)) for i in range(count)]


@st.composite
def pod_templates(draw: st.DrawFn, best_effort_ok: bool = True) -> dict[str, Any]:
    best_effort = best_effort_ok and draw(st.integers(0, 7)) == 0
    app = draw(st.sampled_from(APPS))
    template: dict[str, Any] = {
        "app": app,
        "best_effort": best_effort,
        "cpu": 0 if best_effort else draw(st.sampled_from([100, 250, 500, 1000, 2000, 4000])),
        "memory": 0 if best_effort else draw(st.sampled_from([128, 512, 1024, 4096])),
        "gpu": 0 if best_effort else draw(st.sampled_from([0, 0, 0, 0, 1000, 2000])),
        "selector": None,
        "tolerates": draw(st.booleans()),
        "anti": None,
        "spread": None,
        "duration": draw(st.one_of(st.none(), st.floats(5, 400).map(lambda x: round(x, 1)))),
    }
    choice = draw(st.integers(0, 3))
    if choice == 1:
        template["selector"] = {ZONE_LABEL: draw(st.sampled_from(ZONES))}
    elif choice == 2:
        template["selector"] = {"node.test/kind": draw(st.sampled_from(["cpu", "gpu"]))}
    if draw(st.integers(0, 2)) == 0:
        # Mostly hostname; sometimes zone-wide.
        topology = draw(st.sampled_from([HOSTNAME_LABEL, HOSTNAME_LABEL, ZONE_LABEL]))
        template["anti"] = (draw(st.sampled_from(APPS)), topology)
    if draw(st.integers(0, 2)) == 0:
        template["spread"] = (
            draw(st.integers(1, 2)),
            draw(st.sampled_from(["DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"])),
            draw(st.sampled_from([ZONE_LABEL, HOSTNAME_LABEL])),
        )
    return template


@st.composite
def job_specs(
    draw: st.DrawFn, index: int, gangs: bool = True, best_effort_gangs: bool = True
) -> dict[str, Any]:
    is_gang = gangs and draw(st.integers(0, 2)) == 0
    replicas = draw(st.integers(1, 5)) if is_gang else 1
    min_member = draw(st.integers(1, replicas)) if is_gang else 1
    template = draw(pod_templates(best_effort_ok=best_effort_gangs or not is_gang))
    # Gang members may differ a little: most share the template, some get their own size.
    pods = []
    for _ in range(replicas):
        pod = dict(template)
        if not template["best_effort"] and draw(st.integers(0, 3)) == 0:
            pod["cpu"] = draw(st.sampled_from([100, 500, 1000, 2000]))
        if is_gang and best_effort_gangs and draw(st.integers(0, 5)) == 0:
            pod.update(best_effort=True, cpu=0, memory=0, gpu=0)  # a gang mixing both kinds
        pods.append(pod)
    return {
        "name": f"job-{index:02d}",
        "namespace": draw(st.sampled_from(NAMESPACES)),
        "queue": draw(st.sampled_from(QUEUES)),
        # Seconds the PodGroup arrives after its pods; None: it never does (orphaned pods).
        "group_delay": draw(st.sampled_from([0.0] * 6 + [5.0, 50.0, None])) if is_gang else 0.0,
        "gang": is_gang,
        "min_member": min_member,
        "submit": draw(st.sampled_from([0.0, 0.0, 0.5, 3.0, 10.0, 60.0, 150.5, 300.0])),
        "pods": pods,
    }


@st.composite
def workloads(
    draw: st.DrawFn, max_jobs: int = 14, gangs: bool = True, best_effort_gangs: bool = True
) -> list[dict[str, Any]]:
    count = draw(st.integers(1, max_jobs))
    return [draw(job_specs(i, gangs, best_effort_gangs)) for i in range(count)]


#: Volcano's own default configuration, which enforces queue capability through proportion.
VOLCANO_CONFIG: dict[str, Any] = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": "overcommit"},
                {"name": "drf"},
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder"},
                {"name": "binpack"},
            ]
        },
    ],
    "period": 2,
}


@st.composite
def raw_configs(draw: st.DrawFn) -> dict[str, Any] | None:
    """Scheduler configurations as raw mappings: the default, a Volcano-style one, or sampled
    node search (with a small minFeasibleNodes so that 2+ node clusters really sample)."""
    kind = draw(st.sampled_from(["default", "volcano", "sampled"]))
    if kind == "default":
        return None
    if kind == "volcano":
        return VOLCANO_CONFIG
    return {
        "actions": draw(st.sampled_from(["enqueue, allocate, backfill", "allocate, backfill"])),
        "search": {
            "mode": "sampled",
            "minFeasibleNodes": draw(st.integers(1, 4)),
            "percentageOfNodesToScore": draw(st.sampled_from([0, 10, 50, 100])),
            "shuffle": draw(st.booleans()),
        },
    }


# -- builders -------------------------------------------------------------------------------------


def plain_pod(cpu: int, duration: float | None = None) -> dict[str, Any]:
    """A pod template that asks only for ``cpu`` (and a little memory): no constraints."""
    return {
        "app": "a",
        "best_effort": False,
        "cpu": cpu,
        "memory": 128,
        "gpu": 0,
        "selector": None,
        "tolerates": True,
        "anti": None,
        "spread": None,
        "duration": duration,
    }


def populate(scheduler: Any, manifests: Manifests) -> None:
    """Give a scheduler the manifests' nodes, queues and groups (pods come later)."""
    for node in manifests.nodes:
        scheduler.add_node(node)
    for queue in manifests.queues:
        scheduler.add_queue(queue)
    for group in manifests.groups:
        scheduler.add_group(group)


def build_node(spec: dict[str, Any]) -> Node:
    labels = {"node.test/kind": spec["kind"]}
    if spec["zone"] is not None:
        labels[ZONE_LABEL] = spec["zone"]
    labels[HOSTNAME_LABEL] = spec["name"]
    allocatable = {"cpu": spec["cpu"], "memory": spec["memory"], "pods": spec["pods"]}
    if spec["gpu"]:
        allocatable["nvidia.com/gpu"] = spec["gpu"]
    return Node(
        name=spec["name"],
        labels=labels,
        allocatable=allocatable,
        taints=(TAINT,) if spec["tainted"] else (),
        unschedulable=spec["unschedulable"],
    )


def app_selector(app: str) -> LabelSelector:
    return LabelSelector((Requirement("app", "In", (app,)),))


def build_pod(job: dict[str, Any], index: int, spec: dict[str, Any]) -> Pod:
    requests = {"pods": 1}
    for name, key in (("cpu", "cpu"), ("memory", "memory"), ("nvidia.com/gpu", "gpu")):
        if spec[key]:
            requests[name] = spec[key]
    affinity = Affinity()
    if spec["anti"] is not None:
        app, topology = spec["anti"]
        affinity = Affinity(anti_required=(PodAffinityTerm(app_selector(app), topology),))
    spread: tuple[SpreadConstraint, ...] = ()
    if spec["spread"] is not None:
        skew, when, topology = spec["spread"]
        spread = (SpreadConstraint(skew, topology, when, app_selector(spec["app"])),)
    name = f"{job['name']}-{index}" if job["gang"] else job["name"]
    return Pod(
        name=name,
        namespace=job["namespace"],
        labels={"app": spec["app"]},
        annotations={} if job["gang"] else {QUEUE_NAME_ANNOTATION: job["queue"]},
        requests=requests,
        node_selector=dict(spec["selector"] or {}),
        affinity=affinity,
        tolerations=(TOLERATION,) if spec["tolerates"] else (),
        spread=spread,
        group=job["name"] if job["gang"] else "",
        submit_time=job["submit"],
        duration=spec["duration"],
        # As read from a manifest: a container without requests is scored as 100m / 200 MiB.
        nonzero_requests=(100, 200 * MIB) if spec["best_effort"] else None,
    )


def build_group(job: dict[str, Any]) -> PodGroup | None:
    if not job["gang"] or job["group_delay"] is None:
        return None
    return PodGroup(
        name=job["name"],
        namespace=job["namespace"],
        min_member=job["min_member"],
        queue=job["queue"],
        submit_time=job["submit"] + job["group_delay"],
    )


def orphans(jobs: list[dict[str, Any]]) -> set[str]:
    """Keys of the pods whose PodGroup never arrives: they must never be placed."""
    return {
        f"{job['namespace']}/{job['name']}-{i}"
        for job in jobs
        if job["gang"] and job["group_delay"] is None
        for i in range(len(job["pods"]))
    }


def build_manifests(cluster: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> Manifests:
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for job in jobs:
        group = build_group(job)
        if group is not None:
            groups.append(group)
        pods.extend(build_pod(job, i, spec) for i, spec in enumerate(job["pods"]))
    return Manifests(
        nodes=[build_node(spec) for spec in cluster],
        pods=pods,
        groups=groups,
        queues=[Queue(name, capability=dict(cap)) for name, cap in CAPABILITIES.items()],
    )


# -- checks ---------------------------------------------------------------------------------------


def check_accounting(state: ClusterState) -> None:
    """No node over-committed in any resource, and free is exactly allocatable - requested."""
    n = state.n
    allocatable = state.allocatable[:n]
    requested = state.requested[:n]
    free = state.free[:n]
    over = np.argwhere(requested > allocatable)
    assert not len(over), [
        (state.names[r], state.axis.names[c], int(requested[r, c]), int(allocatable[r, c]))
        for r, c in over
    ]
    assert (requested >= 0).all()
    assert np.array_equal(free, allocatable - requested)
    scored = np.zeros((n, 2), dtype=np.int64)
    differs = 0
    for row in range(n):
        for pod in state.pods_on[row].values():
            vec = state.request_vector(pod.requests)
            nonzero = pod.nonzero_requests or (int(vec[0]), int(vec[1]))
            scored[row] += nonzero
            differs += nonzero != (int(vec[0]), int(vec[1]))
    assert np.array_equal(requested[:, :2] + state.nonzero_extra[:n], scored)
    assert state.nonzero_differs == differs


def check_holding(s: Scheduler) -> None:
    """Between sessions the scheduler's index of jobs holding pods is exactly the jobs with
    bound pods, and a session lists them in the order of its job table."""
    assert set(s.holding) == {key for key, job in s.jobs.items() if job.bound}
    session = Session(s.state, s.framework, s.search, s.waiting, s.queues, 0.0, holding=s.holding)
    assert session.running_jobs() == [job for job in s.jobs.values() if job.bound]


def decisions(s: Scheduler, now: float) -> tuple[list, list]:
    """One session's binds and evictions (pod key, node), the holding index checked after it."""
    binds = s.run_session(now)
    check_holding(s)
    return [(b.pod.key, b.node) for b in binds], [(e.pod.key, e.node) for e in s.evictions]


def asked_pod_by_pod() -> Any:
    """Preempt and reclaim without the ranking plugins' shortcuts: the victims asked of the
    plugins pod by pod, and every node search made."""
    return patch.object(Evictor, "_anywhere", lambda *_: (None, None))


def check_counters(state: ClusterState) -> None:
    """Selector counters and the terms bound pods carry agree with a recount of the pods on
    each node."""
    n = state.n
    namespaces = state.namespace_labels
    for key, counts in state.selector_counts.items():
        expected = [
            sum(1 for p in state.pods_on[r].values() if key.matches(p, namespaces))
            for r in range(n)
        ]
        assert list(counts[:n]) == expected, key
    for term, counts in state.carried.items():
        expected = [
            sum(carried_terms(p).count(term) for p in state.pods_on[r].values()) for r in range(n)
        ]
        assert list(counts[:n]) == expected, term


def _term_matches(term: PodAffinityTerm, owner: Pod, other: Pod) -> bool:
    namespaces = term.namespaces or (owner.namespace,)
    return other.namespace in namespaces and term.selector.matches(other.labels)


def _domain(state: ClusterState, row: int, key: str) -> str | None:
    labels = state.nodes[row].labels
    if key == HOSTNAME_LABEL:
        return labels.get(key, state.names[row])
    return labels.get(key)


def _bound_pods(state: ClusterState) -> list[tuple[int, Pod]]:
    return [(r, p) for r in range(state.n) for p in state.pods_on[r].values()]


def placement_violations(
    state: ClusterState, pod: Pod, row: int, request: np.ndarray | None
) -> list[str]:
    """What ``pod`` on ``row`` would break, judged on the state just before it is accounted."""
    node = state.nodes[row]
    problems: list[str] = []
    if not state.schedulable[row]:
        problems.append(f"{node.name} is unschedulable")
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            problems.append(f"{node.name} does not match nodeSelector {key}={value}")
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            t.tolerates(taint) for t in pod.tolerations
        ):
            problems.append(f"{node.name} taint {taint.key} not tolerated")
    vec = state.request_vector(pod.requests) if request is None else request
    short = vec > state.free[row, : len(vec)]
    if short.any():
        problems.append(f"{node.name} lacks {[state.axis.names[c] for c in np.flatnonzero(short)]}")
    bound = _bound_pods(state)
    # Required anti-affinity, the pod's own terms and (symmetrically) those of bound pods.
    for term in pod.affinity.anti_required:
        here = _domain(state, row, term.topology_key)
        if here is None:
            continue
        for r, other in bound:
            if _domain(state, r, term.topology_key) == here and _term_matches(term, pod, other):
                problems.append(f"anti-affinity of {pod.key}: {other.key} on {state.names[r]}")
    for r, other in bound:
        for term in other.affinity.anti_required:
            here = _domain(state, row, term.topology_key)
            if (
                here is not None
                and _domain(state, r, term.topology_key) == here
                and (_term_matches(term, other, pod))
            ):
                problems.append(f"anti-affinity of {other.key} on {state.names[r]} vs {pod.key}")
    # DoNotSchedule spread: skew after placing must stay within maxSkew.
    eligible = node_affinity_mask(pod, state)
    for constraint in pod.spread:
        if constraint.when_unsatisfiable != "DoNotSchedule":
            continue
        key = constraint.topology_key
        target = _domain(state, row, key)
        if target is None:
            problems.append(f"{node.name} lacks spread key {key}")
            continue
        counts: dict[str, int] = {}
        for r in range(state.n):
            domain = _domain(state, r, key)
            if eligible[r] and domain is not None:
                counts.setdefault(domain, 0)
        for r, other in bound:
            domain = _domain(state, r, key)
            if (
                eligible[r]
                and domain is not None
                and other.namespace == pod.namespace
                and (constraint.selector.matches(other.labels))
            ):
                counts[domain] += 1
        floor = min(counts.values()) if len(counts) >= constraint.min_domains else 0
        self_match = int(constraint.selector.matches(pod.labels))
        skew = counts.get(target, 0) + self_match - floor
        if skew > constraint.max_skew:
            problems.append(f"spread {key} skew {skew} > {constraint.max_skew} for {pod.key}")
    return problems


def queue_of(manifests: Manifests) -> dict[str, str]:
    """Pod key -> the queue its job is in (orphaned pods have none)."""
    group_queue = {g.key: g.queue for g in manifests.groups}
    result = {}
    for pod in manifests.pods:
        if not pod.group:
            result[pod.key] = pod.annotations.get(QUEUE_NAME_ANNOTATION, "default")
        elif f"{pod.namespace}/{pod.group}" in group_queue:
            result[pod.key] = group_queue[f"{pod.namespace}/{pod.group}"]
    return result


@dataclass
class BindRecorder:
    """Wraps ``ClusterState.bind``/``unbind`` on one instance: checks every placement (tentative
    ones included) before it is accounted, and tracks what each queue holds against its
    capability. Violations are kept, not raised, so the run under test is not disturbed."""

    state: ClusterState
    queues: dict[str, str] = field(default_factory=dict)  # pod key -> queue
    violations: list[str] = field(default_factory=list)
    calls: int = 0
    held: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Set while a statement rolls back: putting an evicted pod back is no new placement, and
    #: the state it returns to is only whole once the rollback is done.
    restoring: bool = False

    def __post_init__(self) -> None:
        original_bind, original_unbind = self.state.bind, self.state.unbind

        def bind(
            pod: Pod,
            row: int,
            vector: np.ndarray | None = None,
            devices: Any = None,
            claims: Any = None,
        ) -> Any:
            self.calls += 1
            if not self.restoring:
                self.violations += placement_violations(self.state, pod, row, vector)
            queue = self.queues.get(pod.key)
            if queue is None:
                self.violations.append(f"{pod.key} placed without its PodGroup")
            else:
                if queue not in CAPABILITIES:
                    self.violations.append(f"{pod.key} placed from missing queue {queue}")
                held = self.held.setdefault(queue, {})
                for name, amount in pod.requests.items():
                    held[name] = held.get(name, 0) + amount
                for name, cap in CAPABILITIES.get(queue, {}).items():
                    if held.get(name, 0) > cap:
                        self.violations.append(
                            f"queue {queue} holds {held[name]} {name} > capability {cap}"
                        )
            return original_bind(pod, row, vector, devices, claims)

        def unbind(pod: Pod, row: int, vector: np.ndarray | None = None) -> Any:
            queue = self.queues.get(pod.key)
            if queue is not None:
                held = self.held[queue]
                for name, amount in pod.requests.items():
                    held[name] -= amount
            return original_unbind(pod, row, vector)

        self.state.bind = bind  # type: ignore[method-assign]
        self.state.unbind = unbind  # type: ignore[method-assign]


def session_outcome(scheduler: Any, now: float) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """One session of ``scheduler`` at ``now``: its binds (pod, node), sorted, and the reasons
    it left its waiting jobs, as text (what two ways of scheduling must agree on)."""
    binds = sorted((b.pod.name, b.node) for b in scheduler.run_session(now))
    return binds, {key: str(reason) for key, reason in scheduler.last_reasons.given.items()}


def sessions_agree(
    pair: list[tuple[Any, list[Pod]]],
    steps: list[tuple[str, int]],
    outcome: Any,
) -> None:
    """Two schedulers built alike (each with its pods) go through the same ``steps``: a
    session, or the release of the a-th bound pod, with a session first and last; after each
    session ``outcome(scheduler, pods, first, now)`` must be the same for both, ``first``
    telling which of the two ways is being run."""
    now = 0.0
    for kind, a in [("session", 0), *steps, ("session", 0)]:
        outcomes = []
        for first, (scheduler, pods) in zip((True, False), pair, strict=True):
            if kind == "release":
                bound = [p for p in pods if p.bound_node]
                if bound:
                    victim = bound[a % len(bound)]
                    scheduler.release(victim)
                    victim.bound_node = ""
                    pods.remove(victim)
            else:
                outcomes.append(outcome(scheduler, pods, first, now))
        now += 10.0
        if outcomes:
            assert outcomes[0] == outcomes[1]
