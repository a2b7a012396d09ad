"""``berth serve`` against the real API server: what it schedules and what it leaves alone, what it
writes back, bad objects, the annotation hook, evictions under a PodDisruptionBudget, and its
HTTP endpoints."""

from __future__ import annotations

import logging
import urllib.request
from typing import Any

import pytest

from berth.k8s.intake import EventIntake
from tests.k8s.harness import (
    Cluster,
    config,
    fast_options,
    node_doc,
    pod_doc,
    priority_class_doc,
    serving,
    settle,
    wait_for,
)

# priority votes on victims alone in its tier: beside gang, Volcano's vote would spare the
# single-pod groups these tests preempt (gang keeps minMember, here 1).
PREEMPT = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}]},
        {"plugins": [{"name": "gang"}, {"name": "resource-fit"}, {"name": "least-allocated"}]},
    ],
}

CLASSES = [priority_class_doc("high", 1000), priority_class_doc("low", 1)]


def test_only_berths_pods_are_scheduled_and_the_others_count_as_load(cluster: Cluster):
    cluster.add(
        node_doc("n1", cpu="4"),
        node_doc("n2", cpu="4"),
        pod_doc("theirs-running", cpu="3", scheduler="default-scheduler", node="n1"),
        pod_doc("theirs-pending", cpu="1", scheduler="default-scheduler"),
        pod_doc("ours", cpu="2"),
    )
    with serving(cluster) as server:
        settle(server)
        state = server.scheduler.state
        assert state.requested[state.rows["n1"], 0] == 3000  # another scheduler's pod is load
    assert cluster.bindings() == {"default/theirs-running": "n1", "default/ours": "n2"}
    assert "default/theirs-pending" not in cluster.api.binds


def test_a_pod_that_finishes_or_goes_frees_its_node(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="2"), pod_doc("first", cpu="2"), pod_doc("second", cpu="2"))
    with serving(cluster) as server:
        settle(server)
        assert list(cluster.bindings()) == ["default/first"]
        cluster.patch("Pod", "default", "first", {"status": {"phase": "Succeeded"}})
        settle(server)
        assert cluster.bindings()["default/second"] == "n1"
        cluster.delete("Pod", "default", "second")
        cluster.add(pod_doc("third", cpu="2"))
        settle(server)
    assert cluster.bindings()["default/third"] == "n1"


def test_a_cordoned_node_takes_no_pods(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"))
    with serving(cluster) as server:
        settle(server)
        cluster.patch("Node", "", "n1", {"spec": {"unschedulable": True}})
        settle(server)
        cluster.add(*(pod_doc(f"p{i}") for i in range(3)))
        settle(server)
    assert set(cluster.bindings().values()) == {"n2"}


def test_node_label_and_taint_updates_are_taken(cluster: Cluster):
    """A pod that selects a label no node has waits; labelling a node lets it in, and a
    NoSchedule taint added later keeps the next one out."""
    cluster.add(node_doc("n1"), node_doc("n2"))
    selecting = pod_doc("gpu-job")
    selecting["spec"]["nodeSelector"] = {"pool": "gpu"}
    with serving(cluster) as server:
        settle(server)
        cluster.add(selecting)
        settle(server)
        assert "default/gpu-job" not in cluster.bindings()
        cluster.patch("Node", "", "n2", {"metadata": {"labels": {"pool": "gpu"}}})
        settle(server)
        assert cluster.bindings()["default/gpu-job"] == "n2"
        taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
        cluster.patch("Node", "", "n2", {"spec": {"taints": [taint]}})
        settle(server)
        second = pod_doc("gpu-job-2")
        second["spec"]["nodeSelector"] = {"pool": "gpu"}
        cluster.add(second)
        settle(server)
    assert "default/gpu-job-2" not in cluster.bindings()


def test_a_waiting_pod_says_why_in_its_pod_scheduled_condition(cluster: Cluster):
    """As kube-scheduler does, so `kubectl describe pod` shows it; written once per reason,
    not once per cycle."""
    cluster.add(node_doc("n1", cpu="4"), pod_doc("big", cpu="8"))
    with serving(cluster) as server:
        settle(server)
        cluster.add(pod_doc("small", cpu="1"))  # another cycle, the same reason for "big"
        settle(server)
    (big,) = [p for p in cluster.objects("Pod") if p["metadata"]["name"] == "big"]
    (condition,) = big["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes available: 1 insufficient cpu",
    }
    writes = [
        entry
        for entry in cluster.api.log
        if entry == ("PUT", "/api/v1/namespaces/default/pods/big/status")
    ]
    assert len(writes) == 1
    assert cluster.bindings() == {"default/small": "n1"}
    (event,) = cluster.objects("Event")
    assert event["involvedObject"]["name"] == "big"
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "FailedScheduling",
        "0/1 nodes available: 1 insufficient cpu",
    )


def test_objects_berth_cannot_read_are_reported_and_skipped(cluster: Cluster, caplog):
    """The API server takes what its schemas allow (a CRD's int-or-string quantity may be any
    string); berth refuses what it cannot read, names it, and goes on with the rest."""
    bad_quantity = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "broken"},
        "spec": {"weight": 1, "capability": {"cpu": "lots"}},
    }
    unknown_field = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 2, "colour": "blue"},
    }
    cluster.add(node_doc("n1"), bad_quantity, unknown_field, pod_doc("good"))
    with caplog.at_level(logging.WARNING, logger="berth.k8s"), serving(cluster) as server:
        settle(server)
        assert server.store.skipped == {
            "Queue/broken": "cluster: Queue/broken: spec.capability.cpu: "
            '"lots" is not a quantity (expected e.g. 500m, 2, 4Gi)'
        }
        assert "research" in server.scheduler.queues  # a warning does not drop the object
        assert "broken" not in server.scheduler.queues
        assert server.metrics.skipped_objects._value.get() == 1
    assert cluster.bindings() == {"default/good": "n1"}
    messages = [record.getMessage() for record in caplog.records]
    assert any("Queue/research: spec.colour: unknown field, ignored" in m for m in messages)


def test_podgroup_status_is_written_back_through_conflicts(cluster: Cluster):
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": "default"},
        "spec": {"minMember": 2},
    }
    members = [
        pod_doc(f"m{i}", annotations={"scheduling.k8s.io/group-name": "gang"}) for i in range(2)
    ]
    cluster.add(node_doc("n1"), group, *members)

    touches = iter(range(10))

    def someone_else_writes() -> None:  # the object changes under berth's feet: a real 409
        touched = {"touched": str(next(touches))}
        cluster.patch("PodGroup", "default", "gang", {"metadata": {"labels": touched}})

    cluster.api.before("PUT", r"/podgroups/gang$", someone_else_writes, times=2)
    with serving(cluster) as server:
        settle(server)
    path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/gang"
    writes = [status for method, at, status in cluster.api.answers if (method, at) == ("PUT", path)]
    assert writes[:3] == [409, 409, 200]
    (stored,) = cluster.objects("PodGroup")
    assert stored["status"]["phase"] == "Inqueue"
    assert stored["metadata"]["labels"]["touched"] == "1"  # the other writer's change kept
    assert set(cluster.bindings()) == {"default/m0", "default/m1"}


def _volcano_job(**spec: Any) -> dict[str, Any]:
    """Job ``train``: two one-core workers, all or nothing; ``spec`` adds fields."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "minAvailable": 2,
            "schedulerName": "berth",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2,
                    "template": {
                        "metadata": {"labels": {"app": "train"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "w",
                                    "image": "trainer:1.0",
                                    "command": ["python", "train.py"],
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ]
                        },
                    },
                }
            ],
            **spec,
        },
    }


def _job_phase(cluster: Cluster) -> str:
    (stored,) = cluster.objects("Job")
    return ((stored.get("status") or {}).get("state") or {}).get("phase", "")


def test_a_volcano_job_runs_through_its_controller(cluster: Cluster):
    cluster.add(node_doc("n1"), _volcano_job())

    def job_phase() -> str:
        return _job_phase(cluster)

    with serving(cluster) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: job_phase() == "Running")  # once the node agent has started them
    pods = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
    assert set(pods) == {"train-worker-0", "train-worker-1"}
    pod = pods["train-worker-0"]
    assert pod["spec"]["containers"][0]["image"] == "trainer:1.0"  # the template as written
    assert pod["spec"]["nodeName"] == "n1"
    (stored,) = cluster.objects("Job")
    assert pod["metadata"]["ownerReferences"][0]["uid"] == stored["metadata"]["uid"]
    assert pod["metadata"]["labels"]["volcano.sh/job-name"] == "train"
    (group,) = cluster.objects("PodGroup")
    assert group["spec"]["minMember"] == 2
    assert group["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert stored["status"]["state"]["phase"] == "Running"
    assert stored["status"]["running"] == 2


@pytest.mark.parametrize("policies", [[], [{"event": "PodEvicted", "action": "RestartJob"}]])
def test_a_pod_deleted_by_someone_else_is_a_pod_evicted_event(cluster: Cluster, policies):
    """As Volcano's controller reads a deletion it did not make: without a policy the slot is
    refilled; with PodEvicted → RestartJob the job restarts (every pod made again)."""
    cluster.add(node_doc("n1"), _volcano_job(policies=policies))
    with serving(cluster) as server, cluster.kubelet():
        wait_for(lambda: _job_phase(cluster) == "Running")
        settle(server)
        before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.objects("Pod")}
        cluster.delete("Pod", "default", "train-worker-1")

        def running_again() -> bool:
            pods = [p for p in cluster.objects("Pod") if not p["metadata"].get("deletionTimestamp")]
            return len(pods) == 2 and all(
                (p.get("status") or {}).get("phase") == "Running" for p in pods
            )

        wait_for(lambda: running_again() and _job_phase(cluster) == "Running", timeout=30)
        settle(server)
    live = [p for p in cluster.objects("Pod") if not p["metadata"].get("deletionTimestamp")]
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in live}
    kept = [name for name, uid in after.items() if before.get(name) == uid]
    (stored,) = cluster.objects("Job")
    if policies:
        assert sorted(after) == ["train-worker-0.1", "train-worker-1.1"]
        assert kept == [] and stored["status"].get("retryCount") == 1
        # A restarted berth keeps the count (maxRetry counts against it).
        with serving(cluster) as server:
            settle(server)
        (stored,) = cluster.objects("Job")
        assert stored["status"].get("retryCount") == 1
        pods = cluster.objects("Pod")
        names = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
        assert sorted(names) == sorted(after)  # no pod made again
    else:
        assert sorted(after) == ["train-worker-0", "train-worker-1.1"]
        assert kept == ["train-worker-0"] and not stored["status"].get("retryCount")


def test_annotations_are_written_before_the_bind(cluster: Cluster):
    seen = []

    def devices(pod, node):
        seen.append((pod.key, node))
        return {"berth.io/gpu-devices": "0,1"}

    cluster.add(node_doc("n1"), pod_doc("p"))
    with serving(cluster, options=fast_options(annotate=[devices])) as server:
        settle(server)
    (pod,) = cluster.objects("Pod")
    assert seen == [("default/p", "n1")]
    assert pod["metadata"]["annotations"]["berth.io/gpu-devices"] == "0,1"
    assert pod["spec"]["nodeName"] == "n1"


@pytest.mark.parametrize("allowed", [0, 1])
def test_evictions_respect_pod_disruption_budgets(cluster: Cluster, allowed: int):
    """The budget's status is the disruption controller's own, from the pods the kubelet
    reports Ready; the API server refuses an eviction it forbids with 429."""
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "batch"}}, "minAvailable": 2 - allowed},
    }
    cluster.add(node_doc("n1", cpu="2"), *CLASSES, pdb)
    cluster.add(
        *(pod_doc(f"b{i}", labels={"app": "batch"}, priority_class="low") for i in range(2))
    )

    def disruptions_allowed() -> int | None:
        (stored,) = cluster.objects("PodDisruptionBudget")
        status = stored.get("status") or {}
        return status.get("disruptionsAllowed") if status.get("currentHealthy") == 2 else None

    with serving(cluster, config(PREEMPT)) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: disruptions_allowed() == allowed)
        cluster.add(pod_doc("urgent", priority_class="high"))
        settle(server)
        if allowed:
            wait_for(lambda: cluster.bindings().get("default/urgent") == "n1")
        refused = server.metrics.evictions.labels("refused")._value.get()
        evicted = server.metrics.evictions.labels("evicted")._value.get()
    if allowed:
        assert len(cluster.api.evictions) == 1 and evicted == 1
        assert cluster.bindings()["default/urgent"] == "n1"
    else:
        assert cluster.api.evictions == [] and refused >= 1
        assert "default/urgent" not in cluster.bindings()
        assert set(cluster.bindings()) == {"default/b0", "default/b1"}


def test_health_ready_and_metrics_endpoints(cluster: Cluster):
    cluster.add(node_doc("n1"), pod_doc("p"))
    with serving(cluster, options=fast_options(metrics_port=0)) as server:
        settle(server)
        base = f"http://127.0.0.1:{server.health.port}"
        assert urllib.request.urlopen(f"{base}/healthz").read() == b"ok\n"
        assert urllib.request.urlopen(f"{base}/readyz").read() == b"ok\n"
        text = urllib.request.urlopen(f"{base}/metrics").read().decode()
    assert 'berth_binds_total{result="bound"} 1.0' in text
    assert "berth_e2e_scheduling_duration_seconds_count 1.0" in text
    assert 'berth_schedule_attempts_total{result="scheduled"} 1.0' in text
    assert 'berth_pending_pods{queue="default"} 0.0' in text
    assert "berth_scheduling_cycle_duration_seconds_count" in text


def test_no_event_is_lost_between_batches(cluster: Cluster, monkeypatch):
    """The loop applies events in batches; the one read when a batch fills must not drop."""
    monkeypatch.setattr("berth.k8s.intake.DRAIN_BATCH", 2)
    cluster.add(node_doc("n1", cpu="32"), *(pod_doc(f"p{i}") for i in range(9)))
    with serving(cluster) as server:
        settle(server)
        assert not server._in_flight
    assert len(cluster.bindings()) == 9


def test_a_preemptor_is_bound_once_its_victims_have_gone(cluster: Cluster):
    """The kubelet admits a pod only where running pods leave it room, so the preemptor's bind
    waits until the pod evicted for it is gone (its grace period, here up to two seconds)."""
    cluster.add(node_doc("n1", cpu="2"), *CLASSES)
    cluster.add(*(pod_doc(f"b{i}", priority_class="low") for i in range(2)))
    others_at_bind: list[list[str]] = []

    def phases() -> dict[str, str]:
        return {p["metadata"]["name"]: p["status"].get("phase", "") for p in cluster.objects("Pod")}

    def urgent_bound() -> bool:
        pods = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
        if not pods.get("urgent", {}).get("spec", {}).get("nodeName"):
            return False
        others_at_bind.append(sorted(name for name in pods if name != "urgent"))
        return True

    with serving(cluster, config(PREEMPT)) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: phases() == {"b0": "Running", "b1": "Running"})
        cluster.add(pod_doc("urgent", priority_class="high"))
        wait_for(urgent_bound, timeout=20)
    assert len(cluster.api.evictions) == 1
    (victim,) = (e.rsplit("/", 1)[1] for e in cluster.api.evictions)
    assert others_at_bind == [sorted({"b0", "b1"} - {victim})]


def test_caches_sync_once_every_listed_object_is_applied(cluster: Cluster, monkeypatch):
    """The informers' lists are read before the loop has applied them; the first session must
    still see every node."""
    monkeypatch.setattr("berth.k8s.intake.DRAIN_BATCH", 2)
    cluster.add(*(node_doc(f"n{i}") for i in range(7)))
    nodes_at_sync: list[int] = []
    try_sync = EventIntake.try_sync

    def spy(self: EventIntake) -> None:
        try_sync(self)
        if self.synced and not nodes_at_sync:
            nodes_at_sync.append(self.scheduler.state.n)

    monkeypatch.setattr(EventIntake, "try_sync", spy)
    with serving(cluster) as server:
        settle(server)
    assert nodes_at_sync == [7]


def test_the_gpu_devices_a_session_chose_are_written_before_the_bind(cluster: Cluster):
    gpu_node = node_doc("g1")
    gpu_node["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    pod = pod_doc("train")
    resources = pod["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = "2"
    resources["limits"] = {"nvidia.com/gpu": "2"}  # an extended resource is never overcommitted
    cluster.add(gpu_node, pod, pod_doc("cpu-only"))
    with serving(cluster) as server:
        settle(server)
        chosen = server.store.get("Pod", "default/train").annotations["berth.io/gpu-devices"]
    pods = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
    assert pods["train"]["spec"]["nodeName"] == "g1"
    assert pods["train"]["metadata"]["annotations"]["berth.io/gpu-devices"] == chosen
    assert chosen.count(",") == 1  # two devices
    assert "berth.io/gpu-devices" not in pods["cpu-only"]["metadata"].get("annotations", {})
