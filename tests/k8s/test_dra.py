"""``berth serve`` and Dynamic Resource Allocation on the real control plane: claims from
templates (made by kube-controller-manager's resourceclaim controller) and named claims get
their allocation and reservation before the bind, a restarted berth keeps the devices the
API's claims hold, a pod that goes gives its devices back, a preemption frees the victims'
devices for the preemptor, and a claim that cannot be had leaves its pod pending saying why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.k8s import dra_docs as d
from tests.k8s.harness import (
    Cluster,
    config,
    node_doc,
    pod_doc,
    priority_class_doc,
    serving,
    settle,
    wait_for,
)

PREEMPT = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}]},
        {"plugins": [{"name": "gang"}, {"name": "resource-fit"}]},
    ],
}


@pytest.fixture
def dra(cluster: Cluster) -> Iterator[Cluster]:
    d.clean(cluster)
    try:
        yield cluster
    finally:
        for pod in cluster.objects("Pod"):
            meta = pod["metadata"]
            cluster.delete("Pod", meta["namespace"], meta["name"])
        d.clean(cluster)


def _scheduled_message(cluster: Cluster, name: str) -> str:
    pod = cluster.admin.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return str(condition.get("message") or "")
    return ""


def _two_gpu_node(cluster: Cluster, node: str = "n1", count: int = 2) -> None:
    cluster.add(
        node_doc(node),
        d.device_class(),
        d.node_slice(node, [d.device(f"gpu-{i}", index=i) for i in range(count)]),
    )


def test_a_template_claim_is_allocated_and_reserved_before_the_bind(dra: Cluster):
    _two_gpu_node(dra)
    dra.add(d.claim_template("one-gpu", d.request()))
    dra.add(d.with_claims(pod_doc("p"), template="one-gpu"))
    with serving(dra) as server:
        wait_for(lambda: dra.bindings().get("default/p") == "n1", timeout=60)
        settle(server)
    claim = d.pod_claim(dra, "p")
    assert claim is not None
    assert d.devices_of(claim) == [("gpu", d.DRIVER, "n1", "gpu-0")]
    allocation = claim["status"]["allocation"]
    assert allocation["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
        ]
    }
    pod = dra.admin.request("GET", "/api/v1/namespaces/default/pods/p")
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}
    ]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]


def test_a_shared_claim_is_allocated_once_and_reserved_for_each_pod(dra: Cluster):
    _two_gpu_node(dra)
    dra.add(d.claim("shared", d.request()))
    dra.add(*(d.with_claims(pod_doc(f"p{i}"), claim_name="shared") for i in range(2)))
    with serving(dra) as server:
        wait_for(lambda: len(dra.bindings()) == 2, timeout=60)
        settle(server)
    claim = d.pod_claim(dra, "p0")
    assert d.devices_of(claim) == [("gpu", d.DRIVER, "n1", "gpu-0")]
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["p0", "p1"]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("missing-class", "deviceclass 'missing' not found"),
        ("missing-claim", "resourceclaim 'nowhere' not found"),
        ("missing-template", "resourceclaimtemplate 'nowhere' not found"),
        ("no-dra-objects", "resourceclaimtemplate 'nowhere' not found"),
    ],
)
def test_a_claim_that_cannot_be_had_leaves_its_pod_pending_saying_why(
    dra: Cluster, entry: str, why: str
):
    if entry == "no-dra-objects":
        dra.add(node_doc("n1"))  # no DRA object at all: the pod must not go without its claim
    else:
        _two_gpu_node(dra)
        dra.add(d.claim_template("bad", d.request(device_class_name="missing")))
    if entry == "missing-class":
        pod = d.with_claims(pod_doc("p"), template="bad")
    elif entry == "missing-claim":
        pod = d.with_claims(pod_doc("p"), claim_name="nowhere")
    else:
        pod = d.with_claims(pod_doc("p"), template="nowhere")
    dra.add(pod)
    with serving(dra) as server:
        wait_for(lambda: why in _scheduled_message(dra, "p"), timeout=60)
        settle(server)
    assert dra.bindings() == {}
    events = [e for e in dra.objects("Event") if e.get("reason") == "FailedScheduling"]
    assert any(why in e["message"] for e in events)


def test_allocations_survive_a_restart_and_no_device_is_taken_twice(dra: Cluster):
    _two_gpu_node(dra)
    dra.add(d.claim_template("one-gpu", d.request()))
    dra.add(d.with_claims(pod_doc("first"), template="one-gpu"))
    with serving(dra) as server:
        wait_for(lambda: "default/first" in dra.bindings(), timeout=60)
        settle(server)
    dra.add(*(d.with_claims(pod_doc(f"later{i}"), template="one-gpu") for i in range(2)))
    with serving(dra) as server:
        wait_for(lambda: len(dra.bindings()) == 2, timeout=60)
        settle(server)
        state = server.scheduler.state
        assert state.dra is not None and len(state.dra.allocated.devices) == 2
    held = [device for c in d.all_claims(dra) for device in d.devices_of(c)]
    assert sorted(h[3] for h in held) == ["gpu-0", "gpu-1"]
    assert d.devices_of(d.pod_claim(dra, "first")) == [("gpu", d.DRIVER, "n1", "gpu-0")]
    waiting = [n for n in ("later0", "later1") if f"default/{n}" not in dra.bindings()]
    assert len(waiting) == 1
    # its GPU is counted as nvidia.com/gpu, so the reason is the one a GPU pod gets
    assert "insufficient nvidia.com/gpu" in _scheduled_message(dra, waiting[0])


def test_a_pod_that_goes_gives_its_devices_to_a_waiting_pod(dra: Cluster):
    _two_gpu_node(dra, count=1)
    dra.add(d.claim_template("one-gpu", d.request()))
    dra.add(d.with_claims(pod_doc("first"), template="one-gpu"))
    with serving(dra) as server:
        wait_for(lambda: "default/first" in dra.bindings(), timeout=60)
        dra.add(d.with_claims(pod_doc("second"), template="one-gpu"))
        settle(server)
        assert "default/second" not in dra.bindings()
        dra.delete("Pod", "default", "first")
        wait_for(lambda: "default/second" in dra.bindings(), timeout=60)
        settle(server)
    assert d.devices_of(d.pod_claim(dra, "second")) == [("gpu", d.DRIVER, "n1", "gpu-0")]


def test_preemption_frees_the_victims_devices_for_the_preemptor(dra: Cluster):
    _two_gpu_node(dra, count=1)
    dra.add(priority_class_doc("high", 1000), priority_class_doc("low", 1))
    dra.add(d.claim_template("one-gpu", d.request()))
    dra.add(d.with_claims(pod_doc("victim", cpu="100m", priority_class="low"), template="one-gpu"))
    with dra.kubelet(), serving(dra, config(PREEMPT)) as server:
        wait_for(lambda: "default/victim" in dra.bindings(), timeout=60)
        victim_claim = d.pod_claim(dra, "victim")
        assert victim_claim is not None
        urgent = pod_doc("urgent", cpu="100m", priority_class="high")
        dra.add(d.with_claims(urgent, template="one-gpu"))
        wait_for(lambda: dra.bindings().get("default/urgent") == "n1", timeout=60)
        settle(server)
    assert "default/victim" in dra.api.evictions
    assert d.devices_of(d.pod_claim(dra, "urgent")) == [("gpu", d.DRIVER, "n1", "gpu-0")]
    held = [c for c in d.all_claims(dra) if d.devices_of(c)]
    assert [c["metadata"]["name"] for c in held] == [d.pod_claim(dra, "urgent")["metadata"]["name"]]
