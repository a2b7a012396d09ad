"""OpenKruise's CloneSet in ``berth serve --kruise`` on the real API server: the CRD and RBAC
of deploy/kruise, pods made as Kruise makes them, scaling, status, in-place update through the
``InPlaceUpdateReady`` readiness gate (the fake kubelet restarts the containers), a restart of
berth adopting what it made, and nothing done without the flag."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import yaml

from berth.k8s.kinds import ADVANCED_STATEFUL_SET, BROADCAST_JOB, CLONE_SET
from berth.k8s.server import Server
from tests.k8s.harness import Cluster, config, fast_options, node_doc, serving, settle, wait_for
from tests.k8s.test_deploy import DEPLOY, _granted, _verb

KRUISE = DEPLOY / "kruise"


def clone_set_doc(
    name: str = "web",
    replicas: int = 3,
    image: str = "nginx:1.25",
    update: str = "InPlaceIfPossible",
    cpu: str = "1",
    **strategy: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "berth",
                    "containers": [
                        {"name": "main", "image": image, "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            },
            "updateStrategy": {"type": update, **strategy},
        },
    }


def kruise_options(**overrides: Any):
    return fast_options(kruise=True, **overrides)


def pods_of(cluster: Cluster, name: str = "web") -> list[dict[str, Any]]:
    return [
        p
        for p in cluster.objects("Pod")
        if (p["metadata"].get("labels") or {}).get("app") == name
        and not p["metadata"].get("deletionTimestamp")
    ]


def status_of(cluster: Cluster, name: str = "web") -> dict[str, Any]:
    (cs,) = [c for c in cluster.objects("CloneSet") if c["metadata"]["name"] == name]
    return cs.get("status") or {}


def condition(pod: dict[str, Any], kind: str) -> str:
    for item in pod.get("status", {}).get("conditions") or []:
        if item["type"] == kind:
            return item["status"]
    return ""


def scale(cluster: Cluster, replicas: int, name: str = "web") -> None:
    cluster.patch("CloneSet", "default", name, {"spec": {"replicas": replicas}})


@pytest.mark.parametrize(
    ("resource", "path", "scale"),
    [
        (CLONE_SET, "apps.kruise.io_clonesets.yaml", True),
        (ADVANCED_STATEFUL_SET, "apps.kruise.io_statefulsets.yaml", True),
        (BROADCAST_JOB, "apps.kruise.io_broadcastjobs.yaml", False),
    ],
)
def test_the_crds_are_kruises_and_serve_the_versions_berth_reads(resource, path, scale):
    (crd,) = [d for d in yaml.safe_load_all((KRUISE / path).read_text())]
    spec = crd["spec"]
    kind = resource.kind.partition(".")[0]
    assert crd["metadata"]["name"] == f"{resource.plural}.{resource.group}"
    assert spec["group"] == resource.group and spec["names"]["kind"] == kind
    assert spec["scope"] == "Namespaced"
    versions = {v["name"]: v for v in spec["versions"]}
    version = versions[resource.version]
    assert version["served"] and sum(v["storage"] for v in versions.values()) == 1
    assert "status" in version["subresources"]
    if scale:
        assert version["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    assert properties["spec"]["properties"]["template"].get("x-kubernetes-preserve-unknown-fields")


def test_clone_set_pods_are_kruises_and_follow_the_replicas(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), clone_set_doc(replicas=3))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 3)
        pods = pods_of(cluster)
        assert len(pods) == 3
        (cs,) = cluster.objects("CloneSet")
        uid = cs["metadata"]["uid"]
        status = status_of(cluster)
        revision = status["updateRevision"]
        assert revision.startswith("web-") and status["currentRevision"] == revision
        for pod in pods:
            meta = pod["metadata"]
            name = meta["name"]
            assert name.startswith("web-") and len(name) == len("web-") + 5
            assert meta["labels"]["controller-revision-hash"] == revision
            assert meta["labels"]["apps.kruise.io/cloneset-instance-id"] == name[4:]
            (owner,) = meta["ownerReferences"]
            assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
                "apps.kruise.io/v1alpha1",
                "CloneSet",
                uid,
            )
            assert owner["controller"] is True
            gates = [g["conditionType"] for g in pod["spec"]["readinessGates"]]
            assert gates == ["InPlaceUpdateReady"]
            assert condition(pod, "InPlaceUpdateReady") == "True"
            assert condition(pod, "Ready") == "True"
            assert pod["spec"]["nodeName"] in ("n1", "n2")
            assert meta["annotations"]["scheduling.k8s.io/group-name"] == "cloneset-web"
        (group,) = cluster.objects("PodGroup")
        assert group["metadata"]["ownerReferences"][0]["uid"] == uid
        assert status == {
            **status,
            "replicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "updatedReplicas": 3,
            "updatedReadyReplicas": 3,
            "updatedAvailableReplicas": 3,
            "expectedUpdatedReplicas": 3,
            "labelSelector": "app=web",
            "observedGeneration": 1,
        }

        scale(cluster, 5)
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 5)
        assert len(pods_of(cluster)) == 5
        assert status_of(cluster)["observedGeneration"] == 2

        scale(cluster, 2)
        wait_for(lambda: len(pods_of(cluster)) == 2 and status_of(cluster)["replicas"] == 2)
        settle(server)
        assert status_of(cluster)["readyReplicas"] == 2
        # the scale subresource reads the status
        answer = cluster.admin.request(
            "GET", "/apis/apps.kruise.io/v1alpha1/namespaces/default/clonesets/web/scale"
        )
        assert answer["status"] == {"replicas": 2, "selector": "app=web"}


def test_an_image_change_updates_the_pods_in_place(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), clone_set_doc(replicas=3, maxUnavailable=1))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 3)
        before = {p["metadata"]["name"]: p for p in pods_of(cluster)}
        old_revision = status_of(cluster)["updateRevision"]

        template = clone_set_doc(image="nginx:1.27")["spec"]["template"]
        cluster.patch("CloneSet", "default", "web", {"spec": {"template": template}})
        wait_for(
            lambda: (
                status_of(cluster).get("updatedReadyReplicas") == 3
                and status_of(cluster).get("currentRevision") != old_revision
            ),
            timeout=30,
        )
        settle(server)
        after = {p["metadata"]["name"]: p for p in pods_of(cluster)}
    assert after.keys() == before.keys()  # the same pods: no pod recreated
    status = status_of(cluster)
    assert status["updateRevision"] == status["currentRevision"] != old_revision
    for name, pod in after.items():
        old = before[name]
        assert pod["metadata"]["uid"] == old["metadata"]["uid"]
        assert pod["spec"]["nodeName"] == old["spec"]["nodeName"]
        assert pod["spec"]["containers"][0]["image"] == "nginx:1.27"
        assert pod["metadata"]["labels"]["controller-revision-hash"] == status["updateRevision"]
        (container,) = pod["status"]["containerStatuses"]
        assert container["image"] == "nginx:1.27" and container["restartCount"] == 1
        assert condition(pod, "InPlaceUpdateReady") == "True"
        assert condition(pod, "Ready") == "True"
        state = json.loads(pod["metadata"]["annotations"]["apps.kruise.io/inplace-update-state"])
        assert state["revision"] == status["updateRevision"]
        last = state["lastContainerStatuses"]["main"]["imageID"]
        assert last == old["status"]["containerStatuses"][0]["imageID"] != container["imageID"]
    # each pod was bound once: an in-place update does not go through the scheduler again
    assert dict(cluster.api.binds) == {f"default/{name}": 1 for name in before}


def test_a_restarted_server_adopts_its_pods_and_group(cluster: Cluster):
    cluster.add(node_doc("n1"), clone_set_doc(replicas=2))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 2)
    names = {p["metadata"]["name"] for p in pods_of(cluster)}
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        settle(server)
        scale(cluster, 3)
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 3)
        settle(server)
    now = {p["metadata"]["name"] for p in pods_of(cluster)}
    assert names < now and len(now) == 3
    assert [g["metadata"]["name"] for g in cluster.objects("PodGroup")] == ["cloneset-web"]


def test_without_the_flag_clone_sets_are_left_alone(cluster: Cluster):
    cluster.add(node_doc("n1"), clone_set_doc(replicas=2))
    with serving(cluster, config(), fast_options()) as server:
        settle(server)
    assert pods_of(cluster) == [] and status_of(cluster) == {}


def test_rbac_allows_every_request_serve_kruise_makes(cluster: Cluster):
    """A CloneSet, an Advanced StatefulSet and a BroadcastJob, each changed by someone else
    just before berth's status write (a real 409 Conflict: berth reads the latest and must
    take it)."""
    from tests.k8s.test_kruise_broadcastjob import job_doc
    from tests.k8s.test_kruise_statefulset import KIND, asts_doc

    web = clone_set_doc(replicas=2, maxUnavailable=1)
    web["spec"]["revisionHistoryLimit"] = 0  # its first revision is pruned once unused
    workloads = [web, asts_doc(replicas=1), job_doc()]
    cluster.add(node_doc("n1"), node_doc("n2"), *workloads)
    server = Server(cluster.client(), config(), kruise_options())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with cluster.kubelet():
            settle(server)
            wait_for(lambda: status_of(cluster).get("readyReplicas") == 2)
            cluster.api.before("PUT", r"/clonesets/web/status$", lambda: scale(cluster, 1))
            for kind, plural, name in (
                (KIND, "statefulsets", "db"),
                ("BroadcastJob", "broadcastjobs", "warm"),
            ):
                cluster.api.before(
                    "PUT",
                    rf"/{plural}/{name}/status$",
                    lambda kind=kind, name=name: cluster.patch(
                        kind, "default", name, {"metadata": {"labels": {"seen": "yes"}}}
                    ),
                )
            template = clone_set_doc(image="nginx:1.27")["spec"]["template"]
            cluster.patch("CloneSet", "default", "web", {"spec": {"template": template}})
            cluster.patch(KIND, "default", "db", {"spec": {"replicas": 2}})
            cluster.add(node_doc("n3"))  # the BroadcastJob's next pod
            wait_for(lambda: len(pods_of(cluster)) == 1, timeout=30)
            wait_for(lambda: status_of(cluster).get("updatedReadyReplicas") == 1, timeout=30)
            wait_for(lambda: len(_conflicts(cluster)) == 3, timeout=30)
            wait_for(lambda: len(_revisions_of(cluster, "web")) == 1, timeout=30)
            settle(server)
    finally:
        server.stop()
        thread.join(10)
    assert sorted(_conflicts(cluster)) == [
        "broadcastjobs/warm/status",
        "clonesets/web/status",
        "statefulsets/db/status",
    ]
    used = {_verb(method, path) for method, path in cluster.api.log}
    granted = _granted() | _granted(KRUISE / "rbac.yaml")
    missing = used - granted
    assert not missing, missing
    forbidden = [(method, path) for method, path, status in cluster.api.answers if status == 403]
    assert not forbidden, forbidden
    kruise_only = _granted(KRUISE / "rbac.yaml") - _granted()
    unused = kruise_only - used
    assert not unused, unused  # deploy/kruise grants nothing serve --kruise does not use


def _revisions_of(cluster: Cluster, owner: str) -> list[str]:
    return [
        r["metadata"]["name"]
        for r in cluster.objects("ControllerRevision")
        if r["metadata"]["ownerReferences"][0]["name"] == owner
    ]


def _conflicts(cluster: Cluster) -> list[str]:
    return [
        path.split("/namespaces/default/")[1]
        for _, path, status in cluster.api.answers
        if status == 409
    ]


def test_a_grace_period_holds_the_images_back_while_the_pod_is_unready(cluster: Cluster):
    grace = {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 3}}
    cluster.add(node_doc("n1"), clone_set_doc(replicas=1, maxUnavailable=1, **grace))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: status_of(cluster).get("readyReplicas") == 1)
        template = clone_set_doc(image="nginx:1.27")["spec"]["template"]
        cluster.patch("CloneSet", "default", "web", {"spec": {"template": template}})

        seen: list[dict] = []

        def held_back() -> bool:
            # The condition (status) and the kept images (metadata) are two writes.
            (pod,) = pods_of(cluster)
            annotations = pod["metadata"].get("annotations") or {}
            unready = condition(pod, "InPlaceUpdateReady") == "False"
            seen[:] = [pod]
            return unready and "apps.kruise.io/inplace-update-grace" in annotations

        wait_for(held_back)
        (pod,) = seen
        # within the grace period: unready, the images still the old ones, kept aside
        assert condition(pod, "Ready") == "False"
        assert pod["spec"]["containers"][0]["image"] == "nginx:1.25"
        pending = json.loads(pod["metadata"]["annotations"]["apps.kruise.io/inplace-update-grace"])
        assert pending["containerImages"] == {"main": "nginx:1.27"}
        wait_for(lambda: status_of(cluster).get("updatedReadyReplicas") == 1, timeout=20)
        settle(server)
    (pod,) = pods_of(cluster)
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert "apps.kruise.io/inplace-update-grace" not in pod["metadata"]["annotations"]
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 1
    assert condition(pod, "Ready") == "True"
