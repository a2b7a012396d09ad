"""The ReplicaSet controller: keeps its count, replaces ended pods, and scales down the pods
Kubernetes would (``getPodsToDelete``: doubled-up pods first, by the related pods on their
node)."""

from __future__ import annotations

from berth.api.objects import PodPhase
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import load, replicated


def rs(replicas: int, at: float = 0):
    return load(replicated("apps/v1", "ReplicaSet", "cache", replicas=replicas, at=at))[0]


def test_keeps_its_count_and_replaces_ended_pods() -> None:
    h = Harness()
    obj = h.apply(rs(3))
    assert len(h.pods(obj)) == 3 and all(p.name.startswith("cache-") for p in h.pods(obj))
    h.run_all(obj)
    failed = h.pods(obj)[0]
    h.end(failed, PodPhase.FAILED)
    assert len(h.pods(obj)) == 3 and failed.name not in h.names(obj)
    assert failed.phase == PodPhase.FAILED  # a failed pod stays, and no longer counts
    assert obj.status.created == 4


def test_scales_down_doubled_up_pods_first() -> None:
    h = Harness()
    obj = h.apply(rs(4))
    for pod, node in zip(h.pods(obj), ["n0", "n0", "n1", "n2"], strict=True):
        h.run(pod, node=node)
    h.apply(rs(2, at=10))
    assert sorted(p.bound_node for p in h.pods(obj)) == ["n1", "n2"]


def test_status_counts_available_pods_after_min_ready_seconds() -> None:
    doc = replicated("apps/v1", "ReplicaSet", "cache", replicas=1, minReadySeconds=30)
    h = Harness()
    obj = h.apply(load(doc)[0])
    h.run(h.pods(obj)[0])
    assert (obj.status.ready, obj.status.available) == (1, 0)
    h.advance(30)
    assert obj.status.available == 1
