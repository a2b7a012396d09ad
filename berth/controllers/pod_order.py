"""Which pods a controller deletes or updates first, in Kubernetes' and OpenKruise's orders.

Deleting the least useful pod first means: not yet on a node, then pending, not ready, cheaper
to delete (``controller.kubernetes.io/pod-deletion-cost``), doubled up on a node with its
siblings, ready for the shortest time, restarted most, created last. Kubernetes compares the
two times by powers of two of their age (``LogarithmicScaleDown``) and breaks ties within a
power by pod UID, which is random there; berth's UIDs are counted, so it breaks them by a hash
of the UID instead, which is as arbitrary and still repeats from run to run.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from berth.api.keys import DELETION_COST_ANNOTATION, HOSTNAME_LABEL
from berth.api.objects import Pod, PodPhase

_PHASE_ORDINAL = {PodPhase.PENDING: 0, PodPhase.BOUND: 0, PodPhase.RUNNING: 2}
_INT32 = 2**31


def is_ready(pod: Pod) -> bool:
    return pod.phase == PodPhase.RUNNING and pod.ready_since is not None


def deletion_cost(pod: Pod) -> int:
    """The pod's deletion cost; 0 when absent or not a 32-bit integer (Kubernetes ignores
    such values)."""
    text = pod.annotations.get(DELETION_COST_ANNOTATION)
    if text is None:
        return 0
    try:
        value = int(text)
    except ValueError:
        return 0
    return value if -_INT32 <= value < _INT32 else 0


def _assigned(pod: Pod) -> int:
    return 0 if pod.phase == PodPhase.PENDING else 1


def _phase(pod: Pod) -> int:
    return _PHASE_ORDINAL.get(pod.phase, 1)


def _uid_order(pod: Pod) -> bytes:
    return hashlib.sha256(pod.ref.encode()).digest()


def _log_rank(since: float, now: float) -> int:
    age = now - since
    return int(math.log2(age * 1e9)) if age > 0 else -1


def _newer_first(
    a: float | None, b: float | None, now: float | None, a_pod: Pod, b_pod: Pod
) -> int:
    """-1 when ``a`` goes first: the later time first, compared by power of two of its age
    when ``now`` is given (ties within a power by the UID hash)."""
    if a == b:
        return 0
    if a is None or b is None:
        return -1 if a is None else 1
    if now is None:
        return -1 if a > b else 1
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if _uid_order(a_pod) < _uid_order(b_pod) else 1
    return -1 if diff < 0 else 1


def _compare(a: Pod, b: Pod, steps: Sequence[Callable[[Pod, Pod], int]]) -> int:
    for step in steps:
        verdict = step(a, b)
        if verdict:
            return verdict
    return 0


def _by(key: Callable[[Pod], object]) -> Callable[[Pod, Pod], int]:
    def step(a: Pod, b: Pod) -> int:
        ka, kb = key(a), key(b)
        return 0 if ka == kb else (-1 if ka < kb else 1)  # type: ignore[operator]

    return step


def _order(
    pods: Iterable[Pod],
    *,
    ranks: Mapping[str, float] | None,
    now: float | None,
    cost: bool,
    available: Callable[[Pod], bool] | None = None,
) -> list[Pod]:
    """Sort by the steps the orders below share; ``cost`` and ``ranks`` add the deletion cost
    and rank steps, ``available`` OpenKruise's availability step, ``now`` the logarithmic
    comparison of times."""
    keys: list[Callable[[Pod], object]] = [_assigned, _phase]
    if available is not None:
        keys.append(available)
    keys.append(is_ready)
    if cost:
        rank = ranks or {}
        keys += [deletion_cost, lambda p: -rank.get(p.ref, 0)]
    pods = list(pods)
    # The steps that are plain keys come first: each pod's are worked out once, as a tuple.
    prefix = {id(p): tuple(key(p) for key in keys) for p in pods}
    steps = [
        _by(lambda p: prefix[id(p)]),
        lambda a, b: (
            _newer_first(a.ready_since, b.ready_since, now, a, b)
            if is_ready(a) and is_ready(b)
            else 0
        ),
        _by(lambda p: -p.restarts),
        lambda a, b: _newer_first(a.submit_time, b.submit_time, now, a, b),
    ]
    return sorted(pods, key=functools.cmp_to_key(lambda a, b: _compare(a, b, steps)))


def kube_deletion_order(
    pods: Iterable[Pod], ranks: Mapping[str, float] | None = None, now: float | None = None
) -> list[Pod]:
    """Kubernetes' ActivePodsWithRanks (ReplicaSet scale-down, Job): ``ranks`` by pod ref
    (higher goes first), ``now`` turns on the logarithmic comparison of times."""
    return _order(pods, ranks=ranks, now=now, cost=True)


def kube_active_order(pods: Iterable[Pod]) -> list[Pod]:
    """Kubernetes' ActivePods (no deletion cost, no ranks, plain time comparisons): the order
    in which Jobs shed pods and OpenKruise updates a CloneSet's or SidecarSet's pods."""
    return _order(pods, ranks=None, now=None, cost=False)


def kruise_deletion_order(
    pods: Iterable[Pod],
    ranks: Mapping[str, float] | None = None,
    available: Callable[[Pod], bool] | None = None,
) -> list[Pod]:
    """OpenKruise's ActivePodsWithRanks (CloneSet scale-in): as Kubernetes', with
    availability after phase and plain time comparisons."""
    return _order(pods, ranks=ranks, now=None, cost=True, available=available)


def related_on_node(pods: Sequence[Pod], related: Iterable[Pod]) -> dict[str, float]:
    """Kubernetes' ReplicaSet rank: how many related pods share each pod's node."""
    per_node: dict[str, int] = {}
    for pod in related:
        if pod.bound_node:
            per_node[pod.bound_node] = per_node.get(pod.bound_node, 0) + 1
    return {pod.ref: float(per_node.get(pod.bound_node, 0)) for pod in pods if pod.bound_node}


def same_node_ranks(pods: Sequence[Pod]) -> dict[str, float]:
    """OpenKruise's same-node ranker: on a node holding k > 1 of the pods, all but the last
    of them in deletion order get ranks k-1 … 1, so doubled-up pods go first."""
    by_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.bound_node:
            by_node.setdefault(pod.bound_node, []).append(pod)
    ranks: dict[str, float] = {}
    for together in by_node.values():
        if len(together) <= 1:
            continue
        ordered = kruise_deletion_order(together)[:-1]
        for index, pod in enumerate(ordered):
            ranks[pod.ref] = float(len(ordered) - index)
    return ranks


def spread_ranks(
    pods: Sequence[Pod],
    topology_keys: Sequence[str],
    node_labels: Callable[[str], Mapping[str, str] | None],
) -> dict[str, float]:
    """OpenKruise's spread ranker for pods with topology spread constraints: within each
    domain of each key, pods are ranked by deletion order, weighted by log(domains + 2), so
    scale-in takes from the most crowded domains first."""
    nodes: list[str] = []
    on_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if not pod.bound_node:
            continue
        if pod.bound_node not in on_node:
            if node_labels(pod.bound_node) is None:
                continue
            nodes.append(pod.bound_node)
            on_node[pod.bound_node] = []
        on_node[pod.bound_node].append(pod)
    same_node = same_node_ranks(pods)
    ranks: dict[str, float] = {}
    for key in topology_keys:
        domains: dict[str, list[Pod]] = {}
        for node in nodes:
            value = (node_labels(node) or {}).get(key)
            if value is not None:
                domains.setdefault(value, []).extend(on_node[node])
        weight = math.log(len(domains) + 2)
        for members in domains.values():
            ordered = kruise_deletion_order(members, None if key == HOSTNAME_LABEL else same_node)
            for index, pod in enumerate(ordered):
                ranks[pod.ref] = ranks.get(pod.ref, 0.0) + (len(ordered) - index) * weight
    return ranks
