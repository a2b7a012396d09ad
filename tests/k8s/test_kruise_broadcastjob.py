"""OpenKruise's BroadcastJob (``apps.kruise.io/v1alpha1``) in ``berth serve --kruise`` on the
real API server: one pod per node the template fits, pinned to it by node affinity as Kruise
pins it, run to completion; ``completionPolicy: Never`` reaching a node added later; a failed
pod failing the job (``FailFast``); ``activeDeadlineSeconds``; status in Kruise's
BroadcastJobStatus."""

from __future__ import annotations

from typing import Any

from berth.api.keys import DURATION_ANNOTATION
from tests.k8s.harness import Cluster, config, node_doc, serving, settle, wait_for
from tests.k8s.test_kruise import kruise_options


def job_doc(
    name: str = "warm",
    duration: str = "",
    completion: dict[str, Any] | None = None,
    failure: str = "FailFast",
    **pod: Any,
) -> dict[str, Any]:
    annotations = {DURATION_ANNOTATION: duration} if duration else {}
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "BroadcastJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {
                    "schedulerName": "berth",
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                    **pod,
                },
            },
            "completionPolicy": completion or {"type": "Always"},
            "failurePolicy": {"type": failure},
        },
    }


def pods(cluster: Cluster, name: str = "warm") -> list[dict[str, Any]]:
    return [
        p
        for p in cluster.objects("Pod")
        if (p["metadata"].get("labels") or {}).get("app") == name
        and not p["metadata"].get("deletionTimestamp")
    ]


def status_of(cluster: Cluster, name: str = "warm") -> dict[str, Any]:
    (job,) = [j for j in cluster.objects("BroadcastJob") if j["metadata"]["name"] == name]
    return job.get("status") or {}


def pinned(pod: dict[str, Any]) -> str:
    """The node a pod's required node affinity admits (Kruise's one term, one field)."""
    required = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    (term,) = required["nodeSelectorTerms"]
    (field,) = term["matchFields"]
    assert (field["key"], field["operator"]) == ("metadata.name", "In")
    (node,) = field["values"]
    return node


def test_a_pod_on_every_node_that_fits_runs_to_completion(cluster: Cluster):
    cluster.add(
        node_doc("n1", pool="cpu"),
        node_doc("n2", pool="cpu"),
        node_doc("n3", pool="gpu"),
        job_doc(duration="1", nodeSelector={"pool": "cpu"}),
    )
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        wait_for(lambda: status_of(cluster).get("phase") == "Completed", timeout=30)
        settle(server)
    made = pods(cluster)
    (job,) = cluster.objects("BroadcastJob")
    uid = job["metadata"]["uid"]
    assert sorted(pinned(p) for p in made) == ["n1", "n2"]
    for pod in made:
        meta = pod["metadata"]
        assert meta["name"].startswith("warm-") and len(meta["name"]) == len("warm-") + 5
        assert meta["labels"] == {
            "app": "warm",
            "broadcastjob-name": "warm",
            "broadcastjob-controller-uid": uid,
        }
        (owner,) = meta["ownerReferences"]
        assert (owner["apiVersion"], owner["kind"], owner["uid"], owner["controller"]) == (
            "apps.kruise.io/v1alpha1",
            "BroadcastJob",
            uid,
            True,
        )
        assert pod["spec"]["nodeName"] == pinned(pod)
        assert "readinessGates" not in pod["spec"]
        assert pod["status"]["phase"] == "Succeeded"
        assert meta["annotations"]["scheduling.k8s.io/group-name"] == "broadcastjob-warm"
    status = status_of(cluster)
    (done,) = status["conditions"]
    assert {k: status[k] for k in ("active", "succeeded", "failed", "desired", "phase")} == {
        "active": 0,
        "succeeded": 2,
        "failed": 0,
        "desired": 2,
        "phase": "Completed",
    }
    assert (done["type"], done["status"], done["reason"]) == ("Complete", "True", "Complete")
    assert done["message"] == "2 pods succeeded, 0 pods failed"
    assert status["completionTime"] == done["lastTransitionTime"]
    assert status["startTime"] == job["metadata"]["creationTimestamp"]
    assert dict(cluster.api.binds) == {f"default/{p['metadata']['name']}": 1 for p in made}


def test_never_completes_and_reaches_a_node_added_later(cluster: Cluster):
    cluster.add(node_doc("n1"), job_doc(completion={"type": "Never"}))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        wait_for(lambda: status_of(cluster).get("active") == 1)
        cluster.add(node_doc("n2"))
        wait_for(lambda: status_of(cluster).get("active") == 2)
        settle(server)
        assert sorted(p["spec"]["nodeName"] for p in pods(cluster)) == ["n1", "n2"]
        status = status_of(cluster)
        assert (status["phase"], status["desired"]) == ("Running", 2)
        assert "completionTime" not in status and "conditions" not in status


def test_a_failed_pod_fails_the_job_and_its_other_pods_are_deleted(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), job_doc())
    with serving(cluster, config(), kruise_options()) as server:
        # no kubelet: the pods stay bound; one is then reported failed, as a kubelet would
        wait_for(lambda: len([p for p in pods(cluster) if p["spec"].get("nodeName")]) == 2)
        settle(server)
        first = sorted(p["metadata"]["name"] for p in pods(cluster))[0]
        cluster.patch("Pod", "default", first, {"status": {"phase": "Failed"}})
        wait_for(lambda: status_of(cluster).get("phase") == "Failed")
        settle(server)
        assert [p["metadata"]["name"] for p in pods(cluster)] == [first]
    status = status_of(cluster)
    (failed,) = status["conditions"]
    assert (failed["type"], failed["reason"]) == ("Failed", "Failed")
    assert f"pod {first} failed" in failed["message"]
    assert (status["active"], status["failed"], status["desired"]) == (0, 1, 2)


def test_an_active_deadline_fails_a_job_still_running(cluster: Cluster):
    cluster.add(node_doc("n1"), job_doc(completion={"type": "Always", "activeDeadlineSeconds": 2}))
    with serving(cluster, config(), kruise_options()) as server, cluster.kubelet():
        wait_for(lambda: status_of(cluster).get("active") == 1)
        wait_for(lambda: status_of(cluster).get("phase") == "Failed", timeout=20)
        settle(server)
        assert pods(cluster) == []
    (failed,) = status_of(cluster)["conditions"]
    assert failed["type"] == "Failed" and "DeadlineExceeded" in failed["message"]
