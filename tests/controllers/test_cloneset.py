"""The CloneSet controller: OpenKruise's ``TestScale`` (``cloneset_scale_test.go``) ported,
then scale-in order, in-place update and recreate step by step."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.keys import DELETION_COST_ANNOTATION
from berth.api.objects import PodPhase
from berth.api.workloads import Workload
from berth.controllers.cloneset import SPECIFIED_DELETE_LABEL, CloneSetController
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import cloneset, load, template


def cs(**kwargs: Any) -> Workload:
    return load(cloneset(**kwargs))[0]


def controller(h: Harness) -> CloneSetController:
    return next(c for c in h.controllers if isinstance(c, CloneSetController))


def ready_set(h: Harness, replicas: int, **kwargs: Any) -> Workload:
    obj = h.apply(cs(replicas=replicas, **kwargs))
    h.run_all(obj)
    return obj


@pytest.mark.parametrize(
    "min_ready,specified,remaining,modified",
    [
        (9999, False, 5, False),  # ready but not available: no ready pod may go
        (0, True, 4, True),  # the specified pod goes first, the scale-in waits a pass
        (0, False, 3, True),
    ],
)
def test_scale_in_one_pass(min_ready: int, specified: bool, remaining: int, modified: bool) -> None:
    # OpenKruise's TestScale: 5 ready pods, replicas 3, maxUnavailable 20%.
    h = Harness()
    obj = ready_set(h, 5, updateStrategy={"maxUnavailable": "20%"})
    h.advance(10)
    obj.spec = cs(
        replicas=3, minReadySeconds=min_ready, updateStrategy={"maxUnavailable": "20%"}
    ).spec
    pods = h.pods(obj)
    if specified:
        pods[0].labels[SPECIFIED_DELETE_LABEL] = "true"
    assert controller(h)._scale(obj, pods) == modified
    assert len(h.pods(obj)) == remaining


def test_scale_in_order() -> None:
    # Not scheduled, then pending, then not ready, then the lower deletion cost.
    h = Harness()
    obj = h.apply(cs(replicas=6))
    unscheduled, pending, not_ready, cheap, dear, newer = h.pods(obj)
    h.bind(pending)
    h.run(not_ready, ready=False)
    for pod, cost in ((cheap, -5), (dear, 100)):
        pod.annotations[DELETION_COST_ANNOTATION] = str(cost)
        h.run(pod, node="n1")
    h.advance(5)
    h.run(newer, node="n2")
    obj.spec = cs(replicas=2).spec
    controller(h).reconcile(obj)
    assert {p.name for p in h.pods(obj)} == {dear.name, newer.name}
    assert all(p.phase == PodPhase.DELETED for p in (unscheduled, pending, not_ready, cheap))


def test_newer_ready_pods_go_first() -> None:
    h = Harness()
    obj = h.apply(cs(replicas=3))
    first, second, third = h.pods(obj)
    for index, pod in enumerate((first, second, third)):
        h.advance(index * 10)
        h.run(pod, node=f"n{index}")
    h.apply(cs(replicas=1, at=40))
    assert h.names(obj) == [first.name]


def test_pods_to_delete_are_replaced() -> None:
    h = Harness()
    obj = ready_set(h, 3)
    doomed = h.pods(obj)[1]
    h.apply(cs(replicas=3, scaleStrategy={"podsToDelete": [doomed.name]}, at=5))
    assert doomed.phase == PodPhase.DELETED and len(h.pods(obj)) == 3
    assert doomed.name not in h.names(obj)


def test_in_place_update_keeps_name_uid_and_node_within_max_unavailable() -> None:
    h = Harness()
    strategy = {"type": "InPlaceIfPossible", "maxUnavailable": 2}
    obj = ready_set(h, 5, updateStrategy=strategy)
    before = {p.name: (p.uid, p.bound_node) for p in h.pods(obj)}
    h.apply(cs(replicas=5, updateStrategy=strategy, image="app:2", at=10))
    updated = [p for p in h.pods(obj) if p.containers == (("app", "app:2"),)]
    assert len(updated) == 2 and all(p.ready_since is None for p in updated)
    for pod in updated:
        h.ready(pod)
    h.run_all(obj)
    assert {p.name: (p.uid, p.bound_node) for p in h.pods(obj)} == before
    assert all(p.containers == (("app", "app:2"),) and p.restarts == 1 for p in h.pods(obj))
    rollout = obj.status.rollouts[-1]
    assert (rollout.in_place, rollout.recreated, rollout.peak_unavailable) == (5, 0, 2)
    assert rollout.end is not None


def test_recreate_replaces_pods_within_max_unavailable() -> None:
    h = Harness()
    strategy = {"type": "ReCreate", "maxUnavailable": 1}
    obj = ready_set(h, 3, updateStrategy=strategy)
    old = set(h.names(obj))
    h.apply(cs(replicas=3, updateStrategy=strategy, image="app:2", at=10))
    assert len(set(h.names(obj)) - old) == 1  # one replaced; its successor not ready yet
    h.run_all(obj)
    assert not set(h.names(obj)) & old and len(h.pods(obj)) == 3
    rollout = obj.status.rollouts[-1]
    assert (rollout.recreated, rollout.in_place, rollout.peak_unavailable) == (3, 0, 1)


def test_in_place_if_possible_recreates_for_a_spec_change() -> None:
    h = Harness()
    strategy = {"type": "InPlaceIfPossible", "maxUnavailable": 3}
    obj = ready_set(h, 3, updateStrategy=strategy)
    old = set(h.names(obj))
    h.apply(cs(replicas=3, updateStrategy=strategy, tmpl=template("web", cpu="2"), at=10))
    h.run_all(obj)
    assert not set(h.names(obj)) & old
    assert obj.status.rollouts[-1].in_place == 0


def test_partition_keeps_old_pods() -> None:
    h = Harness()
    strategy = {"type": "InPlaceIfPossible", "partition": "40%", "maxUnavailable": 5}
    obj = ready_set(h, 5, updateStrategy=strategy)
    h.apply(cs(replicas=5, updateStrategy=strategy, image="app:2", at=10))
    h.run_all(obj)
    images = sorted(p.containers[0][1] for p in h.pods(obj))
    assert images == ["app:1", "app:1", "app:2", "app:2", "app:2"]  # 40% of 5 kept
    assert obj.status.rollouts[-1].end is not None


def test_max_surge_adds_pods_before_recreating() -> None:
    h = Harness()
    strategy = {"maxSurge": 1, "maxUnavailable": 0}
    obj = ready_set(h, 3, updateStrategy=strategy)
    h.apply(cs(replicas=3, updateStrategy=strategy, image="app:2", at=10))
    assert len(h.pods(obj)) == 4  # a surge pod of the new revision first
    h.run_all(obj)
    assert len(h.pods(obj)) == 3 and obj.status.rollouts[-1].peak_unavailable == 0
    assert obj.status.rollouts[-1].peak_surge == 1


def test_scale_strategy_max_unavailable_limits_scale_out() -> None:
    h = Harness()
    obj = h.apply(cs(replicas=4, scaleStrategy={"maxUnavailable": 2}))
    assert len(h.pods(obj)) == 2
    h.run(h.pods(obj)[0])
    assert len(h.pods(obj)) == 3
