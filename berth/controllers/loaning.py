"""The cost of taking a lent node back from training (capacity loaning, docs/loaning.md),
shared by the simulator (``berth.sim.loaning``) and ``berth serve`` (``berth.k8s.loaning``).
Nodes go cheapest first. Aryl's cost (``reclaimCost: jobs``) is, over the jobs with pods on the
node, the share of each job that is stopped; ``work`` is the GPU-seconds of work the stopped
jobs lose, so a job that has just started goes before one that has run for days. Either way,
pods free to remove (an elastic job's workers above its minimum) cost nothing."""

from __future__ import annotations

from collections.abc import Callable

from berth.api.objects import Pod
from berth.api.selectors import Toleration
from berth.framework.scheduler import Scheduler
from berth.resources import GPU

#: Whether a pod can leave its job without costing the job its work. Rigid pods cannot.
FreeToRemove = Callable[[Pod], bool]

#: How the reason of a pod evicted by a reclaim begins (``berth.metrics.summary`` counts them).
LENT_NODE_TAKEN_BACK = "lent node "


def rigid(pod: Pod) -> bool:
    """No pod of a rigid job is free to remove (the predicate without elastic jobs)."""
    return False


def server_costs(
    pods_by_node: dict[str, list[Pod]],
    job_pods: dict[str, list[Pod]],
    free_to_remove: FreeToRemove = rigid,
) -> dict[str, float]:
    """Each node's preemption cost: over the pods on it that are not free to remove, the
    share of its job each holds (its GPUs / the job's bound GPUs; 1 / the job's bound pods for
    a job without GPUs). ``job_pods`` maps a job key to its bound pods."""
    weights: dict[str, float] = {}
    for pods in job_pods.values():
        gpus = sum(p.requests.get(GPU, 0) for p in pods)
        for pod in pods:
            weights[pod.ref] = pod.requests.get(GPU, 0) / gpus if gpus else 1 / len(pods)
    return {
        node: sum(weights.get(p.ref, 0.0) for p in pods if not free_to_remove(p))
        for node, pods in pods_by_node.items()
    }


def reclaim_costs(
    kind: str,
    pods_by_node: dict[str, list[Pod]],
    job_pods: dict[str, list[Pod]],
    free_to_remove: FreeToRemove,
    keeps_work: FreeToRemove,
    now: float,
) -> dict[str, float]:
    """Each node's preemption cost as ``reclaimCost`` asks: ``jobs``, ``server_costs``; ``work``,
    the work a reclaim throws away. That is, over the jobs with a pod on the node that is not
    free to remove, the GPU-seconds their bound pods have run since they started (a job
    stopped loses all of its pods' work: a gang restarts whole), but for pods whose job keeps
    its work (an elastic job resumes from its checkpoint). A pod without GPUs counts as one."""
    if kind != "work":
        return server_costs(pods_by_node, job_pods, free_to_remove)
    job_lost = {
        key: sum(
            (now - p.start_time) * (p.requests.get(GPU, 0) / 1000 or 1.0)
            for p in pods
            if p.start_time is not None and not keeps_work(p)
        )
        for key, pods in job_pods.items()
    }
    return {
        node: sum(
            job_lost.get(key, 0.0) for key in {p.job_key for p in pods if not free_to_remove(p)}
        )
        for node, pods in pods_by_node.items()
    }


def keep_off(
    scheduler: Scheduler,
    restarted: set[str],
    victims: list[Pod],
    keeps_work: FreeToRemove,
    lent: Toleration,
) -> None:
    """With ``relendRestarted: false``: add the rigid jobs among ``victims``' (a reclaim
    restarts them) to ``restarted``, which are not lent to again, and take the lent nodes'
    toleration off their waiting pods (``JobInfo.respecified``)."""
    keys = {p.job_key for p in victims if not keeps_work(p)}
    restarted |= keys
    for key in keys:
        job = scheduler.jobs.get(key)
        if job is None:
            continue
        for pod in job.pending:
            if lent in pod.tolerations:
                pod.tolerations = without(pod.tolerations, lent)
                scheduler.respecified(job)


def without(tolerations: tuple[Toleration, ...], toleration: Toleration) -> tuple[Toleration, ...]:
    return tuple(t for t in tolerations if t != toleration)


def reclaim_order(costs: dict[str, float]) -> list[str]:
    """Nodes cheapest first; equal costs by name, so a run stays deterministic."""
    return sorted(costs, key=lambda node: (costs[node], node))
