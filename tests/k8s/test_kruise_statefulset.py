"""OpenKruise's Advanced StatefulSet (``apps.kruise.io/v1beta1``) in ``berth serve --kruise`` on
the real API server: pods made as Kruise makes them (``<name>-<ordinal>``, its labels,
ownerReference, hostname and readiness gate), ordered and parallel pod management, scaling
from the highest ordinal, an in-place rolling update held at a partition, status in Kruise's
StatefulSetStatus, and berth restarted in the middle of an in-place rollout."""

from __future__ import annotations

import json
from typing import Any

import pytest

from berth.api.workloads import Workload
from berth.controllers.statefulset import AdvancedStatefulSetController
from berth.k8s.kruise_status import stateful_set_status
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import load, statefulset
from tests.k8s.harness import Cluster, config, node_doc, serving, settle, wait_for
from tests.k8s.test_kruise import condition, kruise_options

KIND = "StatefulSet.apps.kruise.io"


def asts_doc(
    name: str = "db",
    replicas: int = 3,
    image: str = "redis:7.0",
    management: str = "OrderedReady",
    partition: int = 0,
    min_ready: int = 0,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": management,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "berth",
                    "containers": [
                        {"name": "main", "image": image, "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            },
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "podUpdatePolicy": "InPlaceIfPossible",
                    "partition": partition,
                    "minReadySeconds": min_ready,
                },
            },
        },
    }


def pods(cluster: Cluster, name: str = "db") -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in cluster.objects("Pod")
        if (p["metadata"].get("labels") or {}).get("app") == name
        and not p["metadata"].get("deletionTimestamp")
    }


def status_of(cluster: Cluster, name: str = "db") -> dict[str, Any]:
    (sts,) = [s for s in cluster.objects(KIND) if s["metadata"]["name"] == name]
    return sts.get("status") or {}


def patch(cluster: Cluster, spec: dict[str, Any], name: str = "db") -> None:
    cluster.patch(KIND, "default", name, {"spec": spec})


def image_of(pod: dict[str, Any]) -> str:
    return pod["spec"]["containers"][0]["image"]


def test_ordered_ready_makes_kruises_pods_one_at_a_time(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), asts_doc(replicas=3))
    with serving(cluster, config(), kruise_options()) as server:
        # No kubelet: db-0 never becomes ready, so OrderedReady makes nothing after it.
        settle(server)
        wait_for(lambda: list(pods(cluster)) == ["db-0"] and status_of(cluster).get("replicas"))
        assert pods(cluster)["db-0"]["spec"].get("nodeName")
        with cluster.kubelet():
            wait_for(lambda: status_of(cluster).get("readyReplicas") == 3)
            settle(server)
        made = pods(cluster)
        (sts,) = cluster.objects(KIND)
        uid, revision = sts["metadata"]["uid"], status_of(cluster)["updateRevision"]
        assert sorted(made) == ["db-0", "db-1", "db-2"] and revision.startswith("db-")
        for ordinal in range(3):
            pod = made[f"db-{ordinal}"]
            meta, spec = pod["metadata"], pod["spec"]
            assert meta["labels"] == {
                "app": "db",
                "controller-revision-hash": revision,
                "statefulset.kubernetes.io/pod-name": f"db-{ordinal}",
                "apps.kubernetes.io/pod-index": str(ordinal),
            }
            (owner,) = meta["ownerReferences"]
            assert (owner["apiVersion"], owner["kind"], owner["uid"], owner["controller"]) == (
                "apps.kruise.io/v1beta1",
                "StatefulSet",
                uid,
                True,
            )
            assert (spec["hostname"], spec["subdomain"]) == (f"db-{ordinal}", "db")
            assert [g["conditionType"] for g in spec["readinessGates"]] == ["InPlaceUpdateReady"]
            assert condition(pod, "InPlaceUpdateReady") == "True"
            assert meta["annotations"]["scheduling.k8s.io/group-name"] == "asts-db"
        assert status_of(cluster) == {
            "observedGeneration": 1,
            "replicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "currentReplicas": 3,
            "updatedReplicas": 3,
            "updatedReadyReplicas": 3,
            "updatedAvailableReplicas": 3,
            "collisionCount": 0,
            "labelSelector": "app=db",
            "currentRevision": revision,
            "updateRevision": revision,
        }
        # its revision is kept as Kruise keeps it
        (kept,) = cluster.objects("ControllerRevision")
        assert kept["metadata"]["name"] == revision and kept["revision"] == 1
        assert kept["metadata"]["ownerReferences"][0]["uid"] == uid

        with cluster.kubelet():
            patch(cluster, {"replicas": 1})
            wait_for(lambda: list(pods(cluster)) == ["db-0"])
            wait_for(lambda: status_of(cluster).get("replicas") == 1)
            settle(server)
        assert status_of(cluster)["observedGeneration"] == 2
        answer = cluster.admin.request(
            "GET", "/apis/apps.kruise.io/v1beta1/namespaces/default/statefulsets/db/scale"
        )
        assert answer["status"] == {"replicas": 1, "selector": "app=db"}


def test_parallel_makes_every_pod_at_once(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), asts_doc(replicas=3, management="Parallel"))
    with serving(cluster, config(), kruise_options()) as server:
        settle(server)  # no kubelet: nothing is ever ready, and Parallel does not wait
        wait_for(lambda: sorted(pods(cluster)) == ["db-0", "db-1", "db-2"])
        assert all(p["spec"].get("nodeName") for p in pods(cluster).values())
        patch(cluster, {"replicas": 1})
        wait_for(lambda: sorted(pods(cluster)) == ["db-0"])
        settle(server)


def test_an_image_change_updates_in_place_down_to_the_partition(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), asts_doc(replicas=3, partition=1))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 3)
        settle(server)
        before = pods(cluster)
        old = status_of(cluster)["updateRevision"]
        template = asts_doc(image="redis:7.2")["spec"]["template"]
        patch(cluster, {"template": template})
        wait_for(lambda: status_of(cluster).get("updateRevision") != old)
        wait_for(lambda: status_of(cluster).get("updatedReadyReplicas") == 2, timeout=30)
        settle(server)
        held = pods(cluster)
        status = status_of(cluster)
        new = status["updateRevision"]
        assert new != old and status["currentRevision"] == old
        assert (status["currentReplicas"], status["updatedReplicas"]) == (1, 2)
        # from the highest ordinal down to the partition; db-0 stays at the old revision
        assert {n: image_of(p) for n, p in held.items()} == {
            "db-0": "redis:7.0",
            "db-1": "redis:7.2",
            "db-2": "redis:7.2",
        }
        for name in ("db-1", "db-2"):
            pod = held[name]
            assert pod["metadata"]["uid"] == before[name]["metadata"]["uid"]
            assert pod["spec"]["nodeName"] == before[name]["spec"]["nodeName"]
            assert pod["metadata"]["labels"]["controller-revision-hash"] == new
            assert pod["status"]["containerStatuses"][0]["restartCount"] == 1
            state = json.loads(
                pod["metadata"]["annotations"]["apps.kruise.io/inplace-update-state"]
            )
            assert state["revision"] == new
        assert held["db-0"]["metadata"]["labels"]["controller-revision-hash"] == old

        patch(cluster, {"updateStrategy": {"rollingUpdate": {"partition": 0}}})
        wait_for(lambda: status_of(cluster).get("currentRevision") == new, timeout=30)
        settle(server)
    after = pods(cluster)
    assert {image_of(p) for p in after.values()} == {"redis:7.2"}
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == {
        n: p["metadata"]["uid"] for n, p in before.items()
    }
    assert status_of(cluster)["updatedReadyReplicas"] == 3
    assert dict(cluster.api.binds) == {f"default/{name}": 1 for name in before}
    assert len(cluster.objects("ControllerRevision")) == 2


def test_berth_restarted_mid_rollout_resumes_it_in_place(cluster: Cluster):
    """Each pod must stay ready three seconds before the next is updated, so the rollout of
    four is under way when berth stops (its first pod updated, perhaps not yet ready again);
    the new berth takes the old revision back from its ControllerRevision and goes on
    updating in place: no pod recreated, none bound twice."""
    docs = asts_doc(replicas=4, management="Parallel", min_ready=3)
    cluster.add(node_doc("n1"), node_doc("n2"), docs)
    with cluster.kubelet():
        with serving(cluster, config(), kruise_options()) as server:
            wait_for(lambda: status_of(cluster).get("availableReplicas") == 4, timeout=30)
            settle(server)
            before = {n: p["metadata"]["uid"] for n, p in pods(cluster).items()}
            old = status_of(cluster)["updateRevision"]
            template = asts_doc(image="redis:7.2")["spec"]["template"]
            patch(cluster, {"template": template})
            wait_for(lambda: status_of(cluster)["updateRevision"] != old)
            wait_for(lambda: status_of(cluster).get("updatedReplicas", 0) >= 1, timeout=30)
        # berth is gone mid-rollout
        images = sorted(image_of(p) for p in pods(cluster).values())
        assert images.count("redis:7.0") >= 2, images
        with serving(cluster, config(), kruise_options()) as server:
            wait_for(lambda: status_of(cluster).get("updatedAvailableReplicas") == 4, timeout=60)
            settle(server)
    after = pods(cluster)
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == before
    assert {image_of(p) for p in after.values()} == {"redis:7.2"}
    assert all(p["status"]["containerStatuses"][0]["restartCount"] == 1 for p in after.values())
    assert dict(cluster.api.binds) == {f"default/{name}": 1 for name in before}
    status = status_of(cluster)
    assert status["currentRevision"] == status["updateRevision"]


def test_a_change_beyond_images_recreates_pods_under_their_names(cluster: Cluster):
    """A new pod takes its ordinal's name only once the old one is gone (the fake kubelet
    holds a deleted pod up to two seconds), from the highest ordinal down."""
    cluster.add(node_doc("n1"), node_doc("n2"), asts_doc(replicas=2))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 2)
        settle(server)
        before = {n: p["metadata"]["uid"] for n, p in pods(cluster).items()}
        old = status_of(cluster)["updateRevision"]
        template = asts_doc()["spec"]["template"]
        template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
        patch(cluster, {"template": template})
        wait_for(lambda: status_of(cluster).get("updateRevision") != old)
        wait_for(lambda: status_of(cluster).get("updatedReadyReplicas") == 2, timeout=30)
        settle(server)
        after = pods(cluster)
    assert sorted(after) == ["db-0", "db-1"]
    assert all(after[n]["metadata"]["uid"] != uid for n, uid in before.items())
    assert {p["spec"]["containers"][0]["resources"]["requests"]["cpu"] for p in after.values()} == {
        "2"
    }
    assert dict(cluster.api.binds) == {"default/db-0": 2, "default/db-1": 2}
    posts = [s for m, p, s in cluster.api.answers if m == "POST" and p.endswith("/pods")]
    # one refused creation per pod at most (the name still taken), then it is made once
    assert posts.count(201) == 4 and posts.count(409) <= 2, posts


# ------------------------------------------------------------------ OpenKruise's verdicts
# stateful_set_control_test.go (v1.9.0) tables not already ported in
# tests/controllers/test_statefulset.py, on the controller alone (tests/controllers/harness.py)
# with berth serve's status function: no cluster needed.


def _asts(at: float = 0, **kwargs: Any) -> Workload:
    (obj,) = load(statefulset(advanced=True, at=at, **kwargs))
    return obj


def _status(h: Harness, obj: Workload) -> dict[str, Any]:
    (controller,) = [c for c in h.controllers if isinstance(c, AdvancedStatefulSetController)]
    return stateful_set_status(obj, {}, controller)


#: TestScaleUpStatefulSetWithMinReadySeconds: name → (pod management, replicas,
#: minReadySeconds, pods made ready, seconds then waited, pods expected, ready, available).
MIN_READY: dict[str, tuple[str, int, int, int, float, int, int, int]] = {
    "monotonic scale up with 0 min ready seconds": ("OrderedReady", 3, 0, 1, 0, 2, 1, 1),
    "monotonic scaleup with 1 min ready seconds": ("OrderedReady", 3, 60, 1, 0, 1, 1, 0),
    "monotonic scale up with 3 seconds ready seconds and sleep": (
        "OrderedReady",
        3,
        3,
        1,
        5,
        2,
        1,
        1,
    ),
    "burst scale with 0 min ready seconds burst": ("Parallel", 5, 0, 5, 0, 5, 5, 5),
    "burst scale with 1 min ready seconds still burst": ("Parallel", 5, 60, 5, 0, 5, 5, 0),
}


@pytest.mark.parametrize("case", sorted(MIN_READY))
def test_kruises_scale_up_with_min_ready_seconds(case: str):
    management, replicas, min_ready, made_ready, wait, count, ready, available = MIN_READY[case]
    h = Harness()
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"minReadySeconds": min_ready}}
    obj = h.apply(_asts(replicas=replicas, podManagementPolicy=management, updateStrategy=strategy))
    for pod in h.pods(obj)[:made_ready]:
        h.run(pod)
    h.advance(wait)
    assert len(h.pods(obj)) == count
    status = _status(h, obj)
    assert (status["readyReplicas"], status["availableReplicas"]) == (ready, available)


#: TestStatefulSetControlRollingUpdateWithPaused: name → (pod management, paused, replicas
#: after the image change, images expected by ordinal).
PAUSED: dict[str, tuple[str, bool, int, list[str]]] = {
    "monotonic image update": ("OrderedReady", False, 3, ["foo"] * 3),
    "monotonic image update with paused": ("OrderedReady", True, 3, ["app:1"] * 3),
    "monotonic image update and scale up with paused": (
        "OrderedReady",
        True,
        5,
        ["app:1"] * 3 + ["foo"] * 2,
    ),
    "burst image update": ("Parallel", False, 3, ["foo"] * 3),
    "burst image update with paused": ("Parallel", True, 3, ["app:1"] * 3),
    "burst image update and scale up with paused": (
        "Parallel",
        True,
        5,
        ["app:1"] * 3 + ["foo"] * 2,
    ),
}


@pytest.mark.parametrize("case", sorted(PAUSED))
def test_kruises_rolling_update_with_paused(case: str):
    management, paused, replicas, images = PAUSED[case]
    h = Harness()
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "paused": paused}}
    obj = h.apply(_asts(replicas=3, podManagementPolicy=management, updateStrategy=strategy))
    h.run_all(obj)
    changed = _asts(
        at=1,
        replicas=replicas,
        image="foo",
        podManagementPolicy=management,
        updateStrategy=strategy,
    )
    h.apply(changed)
    h.run_all(obj)
    assert [p.containers[0][1] for p in h.pods(obj)] == images
    status = _status(h, obj)
    assert status["updatedReplicas"] == images.count("foo")
    assert status["currentReplicas"] == (replicas if not paused else images.count("app:1"))


def _revisions(cluster: Cluster) -> list[str]:
    return sorted(r["metadata"]["name"] for r in cluster.objects("ControllerRevision"))


def test_revisions_no_pod_uses_are_pruned_beyond_the_history_limit(cluster: Cluster):
    """Kruise's truncateHistory with ``revisionHistoryLimit: 0``: a revision goes once no pod
    and neither the current nor the update revision uses it, not before."""
    doc = asts_doc(replicas=2, partition=1)
    doc["spec"]["revisionHistoryLimit"] = 0
    cluster.add(node_doc("n1"), node_doc("n2"), doc)
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 2)
        first = status_of(cluster)["updateRevision"]
        patch(cluster, {"template": asts_doc(image="redis:7.2")["spec"]["template"]})
        wait_for(lambda: status_of(cluster).get("updatedReadyReplicas") == 1, timeout=30)
        settle(server)
        second = status_of(cluster)["updateRevision"]
        # db-0 is held at the first revision by the partition: both are live
        assert _revisions(cluster) == sorted([first, second])
        patch(cluster, {"updateStrategy": {"rollingUpdate": {"partition": 0}}})
        wait_for(lambda: status_of(cluster).get("currentRevision") == second, timeout=30)
        wait_for(lambda: _revisions(cluster) == [second])
        patch(cluster, {"template": asts_doc(image="redis:7.4")["spec"]["template"]})
        wait_for(lambda: status_of(cluster).get("updateRevision") not in (first, second))
        third = status_of(cluster)["updateRevision"]
        wait_for(lambda: status_of(cluster).get("currentRevision") == third, timeout=30)
        wait_for(lambda: _revisions(cluster) == [third])
        settle(server)
    assert {image_of(p) for p in pods(cluster).values()} == {"redis:7.4"}
