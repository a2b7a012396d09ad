"""OpenKruise's BroadcastJob (``apps.kruise.io/v1alpha1``) in ``berth serve --kruise`` on the
real API server: one pod per node the template fits, pinned to it by node affinity as Kruise
pins it, run to completion; ``completionPolicy: Never`` reaching a node added later; a failed
pod failing the job (``FailFast``); ``activeDeadlineSeconds``; status in Kruise's
BroadcastJobStatus."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.keys import DURATION_ANNOTATION, SUBMIT_TIME_ANNOTATION
from berth.api.manifest import parse_documents
from berth.api.objects import PodPhase
from berth.api.workloads import Workload
from berth.controllers.broadcastjob import BroadcastJobController, pinned_node
from berth.k8s.kruise_status import broadcast_job_status
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import load
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


# ------------------------------------------------------------------ OpenKruise's verdicts
# broadcastjob_controller_test.go (v1.9.0), each case as a state table: the nodes, the job,
# which of its pods ended how (all at one instant), and the status Kruise's controller writes.
# Run on the controller alone (tests/controllers/harness.py) with berth serve's status
# function: no cluster needed.

#: name → (nodes, unschedulable nodes, job spec, pod ends by node index, status expected).
UPSTREAM: dict[str, tuple[int, int, dict[str, Any], dict[int, str], dict[str, Any]]] = {
    # TestReconcileJobCreatePodAbsolute: parallelism 2 of 3 nodes
    "create-absolute": (3, 0, {"parallelism": 2}, {}, {"active": 2, "desired": 3}),
    # TestReconcileJobCreatePodPercentage: 40% of 5 nodes
    "create-percentage": (5, 0, {"parallelism": "40%"}, {}, {"active": 2, "desired": 5}),
    # TestPodsOnUnschedulableNodes: a cordoned node gets no pod and is not desired
    "unschedulable": (2, 1, {"parallelism": 2}, {}, {"active": 1, "desired": 1}),
    # TestReconcileJobMultipleBatches: 10 nodes, parallelism 20
    "multiple-batches": (10, 0, {"parallelism": 20}, {}, {"active": 10, "desired": 10}),
    # TestJobFailed: two succeeded, one failed, FailFast
    "failed": (
        3,
        0,
        {"parallelism": 10, "failurePolicy": {"type": "FailFast"}},
        {0: "Succeeded", 1: "Succeeded", 2: "Failed"},
        {"phase": "Failed", "active": 0, "succeeded": 2, "failed": 1, "desired": 3},
    ),
    # TestJobFailurePolicyTypeContinue: one succeeded, one failed, the third node still to run
    "continue": (
        3,
        0,
        {"parallelism": 2, "failurePolicy": {"type": "Continue"}},
        {0: "Succeeded", 1: "Failed"},
        {"phase": "Running", "active": 1, "succeeded": 1, "failed": 1, "desired": 3},
    ),
    # TestJobFailurePolicyTypeFailFast
    "fail-fast": (
        3,
        0,
        {"parallelism": 2, "failurePolicy": {"type": "FailFast"}},
        {0: "Succeeded", 1: "Failed"},
        {"phase": "Failed", "active": 0, "succeeded": 1, "failed": 1, "desired": 3},
    ),
    # TestJobFailurePolicyPause
    "pause": (
        3,
        0,
        {"parallelism": 2, "failurePolicy": {"type": "Pause"}},
        {0: "Succeeded", 1: "Failed"},
        {"phase": "Paused", "active": 0, "succeeded": 1, "failed": 1, "desired": 3},
    ),
}


def _nodes(count: int, cordoned: int) -> list:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node{i}"},
            "spec": {"unschedulable": i < cordoned},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        }
        for i in range(count)
    ]
    return parse_documents(docs, "test").nodes


def _job(at: float = 0, **spec: Any) -> Workload:
    doc = job_doc(**{k: v for k, v in spec.items() if k == "completion"})
    doc["metadata"]["annotations"] = {SUBMIT_TIME_ANNOTATION: str(at)}
    doc["spec"].update({k: v for k, v in spec.items() if k != "completion"})
    (job,) = load(doc)
    return job


def _status(h: Harness, job: Workload) -> dict[str, Any]:
    (controller,) = [c for c in h.controllers if isinstance(c, BroadcastJobController)]
    status = broadcast_job_status(job, {}, controller)
    assert status is not None
    return status


@pytest.mark.parametrize("case", sorted(UPSTREAM))
def test_kruises_broadcast_job_verdicts(case: str):
    count, cordoned, spec, ends, expected = UPSTREAM[case]
    h = Harness(_nodes(count, cordoned))
    job = h.apply(_job(**spec))
    for pod in h.pods(job):
        h.run(pod, node=pinned_node(pod))
    by_node = {pinned_node(pod): pod for pod in h.pods(job)}
    for index, phase in ends.items():  # at one instant, then one pass
        pod = by_node[f"node{index}"]
        pod.phase, pod.end_time, pod.ready_since = PodPhase(phase), h.time, None
        h.store.update("Pod", pod)
    h.settle()
    status = _status(h, job)
    assert {key: status[key] for key in expected} == expected
    assert status.get("phase", "Running") == expected.get("phase", "Running")
    if status["phase"] in ("Completed", "Failed"):
        (condition,) = status["conditions"]
        assert condition["type"] == {"Completed": "Complete", "Failed": "Failed"}[status["phase"]]
        assert status["completionTime"] == condition["lastTransitionTime"]


def test_kruises_paused_job_makes_no_pod():
    # TestJobSetPaused: three pods running, then paused with parallelism 50% of 10 nodes
    h = Harness(_nodes(10, 0))
    job = h.apply(_job(parallelism=3))
    for pod in h.pods(job):
        h.run(pod, node=pinned_node(pod))
    h.apply(_job(at=1, parallelism="50%", paused=True))
    status = _status(h, job)
    assert {k: status[k] for k in ("phase", "desired", "succeeded", "failed", "active")} == {
        "phase": "Paused",
        "desired": 10,
        "succeeded": 0,
        "failed": 0,
        "active": 3,
    }
    assert len(h.pods(job)) == 3


def test_kruises_job_fails_after_its_active_deadline_and_deletes_its_pods():
    # TestJobFailedAfterActiveDeadline (Kruise also counts the deleted pods as failed; berth
    # does not, see docs/kubernetes.md)
    h = Harness(_nodes(2, 0))
    completion = {"type": "Always", "activeDeadlineSeconds": 1}
    job = h.apply(_job(parallelism=10, completion=completion, failurePolicy={"type": "Continue"}))
    for pod in h.pods(job):
        h.run(pod, node=pinned_node(pod))
    h.advance(1)
    status = _status(h, job)
    assert (status["phase"], status["active"]) == ("Failed", 0)
    (condition,) = status["conditions"]
    assert condition["type"] == "Failed" and "DeadlineExceeded" in condition["message"]
    assert h.pods(job) == []
