"""The Deployment controller: Kubernetes' tables (``pkg/controller/deployment/rolling_test.go``
and ``util/deployment_util_test.go``) ported onto berth's controller, then whole rollouts in the
simulator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from berth.api.workloads import DEPLOYMENT, REPLICA_SET, ReplicaSetSpec, Workload
from berth.controllers.deployment import (
    DeploymentController,
    deployment_complete,
    new_rs_replicas,
    resolve_fenceposts,
)
from berth.store import MemoryStore
from tests.controllers.workload_docs import deployment, load


class Quiet:
    """A runtime with nothing else running: the controller's own decisions only."""

    def __init__(self) -> None:
        self.store = MemoryStore()

    def now(self) -> float:
        return 0.0

    def at(self, time: float, callback: Callable[[], None]) -> None:
        pass

    def soon(self, callback: Callable[[], None]) -> None:
        pass

    def admit(self, kind: str, hook: Callable[[Any], None]) -> None:
        pass


def make_deployment(
    replicas: int, surge: int | str, unavailable: int | str, **spec: Any
) -> Workload:
    """Built past validation, as the upstream tests build theirs (some of their cases have
    maxSurge and maxUnavailable both 0, which the API server refuses)."""
    d = load(deployment(replicas=replicas, **spec))[0]
    d.spec = replace(d.spec, max_surge=surge, max_unavailable=unavailable)
    return d


def make_rs(d: Workload, name: str, replicas: int, available: int = 0, age: float = 0) -> Workload:
    rs = Workload(
        kind=REPLICA_SET,
        name=name,
        spec=ReplicaSetSpec(d.spec.template, d.spec.selector, replicas),
        owner=d.key,
        submit_time=age,
    )
    rs.status.available = available
    return rs


def controller_with(*objects: Workload) -> DeploymentController:
    runtime = Quiet()
    for obj in objects:
        runtime.store.create(obj.kind, obj)
    return DeploymentController(runtime)


@pytest.mark.parametrize(
    "surge,unavailable,desired,expected",
    [
        ("0%", "0%", 0, (0, 1)),
        ("39%", "39%", 10, (4, 3)),
        ("0%", "39%", 10, (0, 3)),
        ("39%", "0%", 10, (4, 0)),
        (0, 0, 10, (0, 1)),
    ],
)
def test_resolve_fenceposts(surge, unavailable, desired, expected) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    "strategy,replicas,new_replicas,surge,expected",
    [
        ("RollingUpdate", 1, 5, 1, 5),  # cannot scale up: stays at its replicas
        ("RollingUpdate", 6, 2, 10, 6),  # scale up to the deployment's replicas
        ("Recreate", 3, 1, 1, 3),
    ],
)
def test_new_rs_replicas(strategy, replicas, new_replicas, surge, expected) -> None:
    d = make_deployment(replicas, surge, 1)
    d.spec = replace(d.spec, strategy=strategy)
    new = make_rs(d, "new", new_replicas)
    other = make_rs(d, "rs5", 5)
    assert new_rs_replicas(d, [other], new) == expected


@pytest.mark.parametrize(
    "replicas,surge,old,new,expected",
    [
        (10, 0, 10, 0, None),  # should not scale up
        (10, 2, 10, 0, 2),
        (10, 2, 5, 0, 7),
        (10, 2, 10, 2, None),
        (10, 2, 2, 11, 10),  # scale down
    ],
)
def test_reconcile_new_replica_set(replicas, surge, old, new, expected) -> None:
    d = make_deployment(replicas, surge, 0)
    old_rs, new_rs = make_rs(d, "foo-old", old, age=0), make_rs(d, "foo-new", new, age=1)
    new_rs.spec = replace(new_rs.spec, template=d.spec.template)
    old_rs.spec = replace(old_rs.spec, template=load(deployment(image="old:1"))[0].spec.template)
    controller = controller_with(d, old_rs, new_rs)
    controller._rolling(d, new_rs, [old_rs])
    assert new_rs.spec.replicas == (new if expected is None else expected)


@pytest.mark.parametrize(
    "replicas,unavailable,old,new,old_ready,new_ready,scaled",
    [
        (10, 0, 10, 0, 10, 0, True),
        (10, 2, 10, 0, 10, 0, True),
        (10, 2, 10, 0, 8, 0, True),  # unhealthy old replicas are cleaned up
        (10, 2, 10, 0, 9, 0, True),  # one unhealthy cleaned, one ready scaled down
        (10, 2, 8, 2, 8, 0, False),  # the new RS's unavailable pods block further scale-down
    ],
)
def test_reconcile_old_replica_sets(
    replicas, unavailable, old, new, old_ready, new_ready, scaled
) -> None:
    d = make_deployment(replicas, 0, unavailable)
    old_rs = make_rs(d, "foo-old", old, old_ready)
    new_rs = make_rs(d, "foo-new", new, new_ready)
    controller = controller_with(d, old_rs, new_rs)
    assert controller._reconcile_old(d, [old_rs, new_rs], [old_rs], new_rs) == scaled
    assert (old_rs.spec.replicas < old) == scaled


@pytest.mark.parametrize(
    "ready,limit,cleaned",
    [(8, 1, 1), (8, 3, 2), (8, 0, 0), (10, 3, 0)],
)
def test_cleanup_unhealthy_replicas(ready, limit, cleaned) -> None:
    d = make_deployment(10, 2, 2)
    old_rs = make_rs(d, "foo-v2", 10, ready)
    controller = controller_with(d, old_rs)
    assert controller._cleanup_unhealthy(d, [old_rs], limit)[1] == cleaned
    assert old_rs.spec.replicas == 10 - cleaned


@pytest.mark.parametrize(
    "replicas,unavailable,ready,old,expected",
    [
        (10, 0, 10, 10, 9),
        (10, 2, 10, 10, 8),
        (10, 2, 8, 10, None),
        (10, 2, 10, 0, None),
        (10, 2, 1, 10, None),
    ],
)
def test_scale_down_old_for_rolling_update(replicas, unavailable, ready, old, expected) -> None:
    d = make_deployment(replicas, 0, unavailable)
    old_rs = make_rs(d, "foo-v2", old, ready)
    controller = controller_with(d, old_rs)
    scaled = controller._scale_down_old(d, [old_rs], [old_rs])
    assert (scaled > 0) == (expected is not None)
    assert old_rs.spec.replicas == (old if expected is None else expected)


@pytest.mark.parametrize(
    "desired,current,updated,available,complete",
    [
        (5, 5, 5, 4, False),  # min but not all pods available
        (5, 5, 5, 3, False),
        (5, 5, 5, 5, True),
        (5, 5, 4, 5, False),  # all available but not all updated
        (1, 2, 1, 1, False),  # still running old pods
        (1, 1, 1, 0, False),  # the single replica never comes up
    ],
)
def test_deployment_complete(desired, current, updated, available, complete) -> None:
    d = make_deployment(desired, 0, 1)
    d.status.replicas, d.status.updated, d.status.available = current, updated, available
    assert deployment_complete(d) == complete


def test_a_replica_set_per_template_named_by_its_hash() -> None:
    d = make_deployment(3, 1, 0)
    controller = controller_with(d)
    controller.reconcile(d)
    (rs,) = controller.store.list(REPLICA_SET)
    pod_hash = d.spec.template.revision
    assert rs.name == f"web-{pod_hash}" and rs.owner == d.key
    assert rs.spec.template.pod.labels["pod-template-hash"] == pod_hash
    assert rs.spec.selector.matches(rs.spec.template.pod.labels)
    assert rs.spec.replicas == 3 and d.kind == DEPLOYMENT
