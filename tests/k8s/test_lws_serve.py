"""``berth serve --lws`` on the real API server: LeaderWorkerSets run by the simulator's
controller over the cache, their pods created as LWS names and labels them and owned by the
LeaderWorkerSet, each group a gang that binds whole or not at all, and the status written
back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from berth.api.lws import GROUP_INDEX_LABEL, NAME_LABEL, WORKER_INDEX_LABEL
from berth.k8s.kinds import LEADER_WORKER_SET
from tests.k8s.harness import Cluster, fast_options, node_doc, serving, settle, wait_for


def lws_doc(name: str, replicas: int, size: int, cpu: str, **annotations: str) -> dict[str, Any]:
    container = {"name": "c", "image": "server:1", "resources": {"requests": {"cpu": cpu}}}
    template = {"spec": {"schedulerName": "berth", "containers": [container]}}
    return {
        "apiVersion": LEADER_WORKER_SET.api_version,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {"size": size, "workerTemplate": template},
        },
    }


@pytest.fixture
def lws_cluster(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, its LeaderWorkerSets removed afterwards (the harness cleans the kinds
    berth always watches)."""
    yield cluster
    cluster.admin.request("DELETE", LEADER_WORKER_SET.collection("default"))


def test_groups_are_gangs_owned_by_their_leader_worker_set(lws_cluster: Cluster) -> None:
    cluster = lws_cluster
    # Two groups of two 1-core pods fit on 8 cores; a group of three 3-core pods never does
    # whole (two of them would).
    cluster.add(node_doc("n1", cpu="4"), node_doc("n2", cpu="4"))
    cluster.add(lws_doc("serve", 2, 2, "1"), lws_doc("big", 1, 3, "3"))
    with serving(cluster, options=fast_options(lws=True)) as server:
        wait_for(lambda: len(cluster.objects("Pod")) == 7, timeout=30)
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
        settle(server)
        status = {
            o["metadata"]["name"]: o.get("status") or {}
            for o in cluster.objects(LEADER_WORKER_SET.kind)
        }
    pods = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
    serving_pods = ["serve-0", "serve-0-1", "serve-1", "serve-1-1"]
    assert sorted(pods) == ["big-0", "big-0-1", "big-0-2", *serving_pods]
    assert sorted(cluster.bindings()) == [f"default/{name}" for name in serving_pods]
    worker = pods["serve-1-1"]["metadata"]
    assert worker["labels"][NAME_LABEL] == "serve"
    assert (worker["labels"][GROUP_INDEX_LABEL], worker["labels"][WORKER_INDEX_LABEL]) == ("1", "1")
    (owner,) = worker["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("LeaderWorkerSet", "serve", True)
    groups = {g["metadata"]["name"]: g["spec"]["minMember"] for g in cluster.objects("PodGroup")}
    assert sorted(groups.values()) == [2, 2, 3]
    assert status["serve"]["replicas"] == 2 and status["big"]["replicas"] == 1


def test_exclusive_topology_keeps_each_group_in_a_domain_of_its_own(lws_cluster: Cluster) -> None:
    cluster = lws_cluster
    racks = [node_doc(f"n{i}", cpu="4", rack=f"r{i // 2}") for i in range(4)]
    cluster.add(*racks)
    exclusive = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"}
    cluster.add(lws_doc("serve", 2, 2, "1", **exclusive))
    with serving(cluster, options=fast_options(lws=True)) as server:
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
        settle(server)
    rack = {f"n{i}": f"r{i // 2}" for i in range(4)}
    by_group: dict[str, set[str]] = {}
    for pod in cluster.objects("Pod"):
        index = pod["metadata"]["labels"][GROUP_INDEX_LABEL]
        by_group.setdefault(index, set()).add(rack[pod["spec"]["nodeName"]])
        affinity = pod["spec"]["affinity"]
        assert affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert sorted(map(sorted, by_group.values())) == [["r0"], ["r1"]]


def test_a_restarted_server_keeps_each_group_in_its_pod_group(lws_cluster: Cluster) -> None:
    """berth restarts while a LeaderWorkerSet runs: no pod is made again, and a worker made
    after the restart (its predecessor deleted) joins its group's PodGroup."""
    cluster = lws_cluster
    cluster.add(node_doc("n1", cpu="8"), lws_doc("serve", 2, 2, "1"))
    with serving(cluster, options=fast_options(lws=True)) as server:
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
        settle(server)
    before = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
    groups = sorted(g["metadata"]["name"] for g in cluster.objects("PodGroup"))
    with serving(cluster, options=fast_options(lws=True)) as server:
        settle(server)
        assert sorted(p["metadata"]["name"] for p in cluster.objects("Pod")) == sorted(before)
        cluster.delete("Pod", "default", "serve-1-1")
        wait_for(lambda: "default/serve-1-1" in cluster.bindings(), timeout=30)
        settle(server)
    after = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
    assert sorted(after) == sorted(before)
    assert after["serve-1-1"]["metadata"]["uid"] != before["serve-1-1"]["metadata"]["uid"]
    annotation = "scheduling.k8s.io/group-name"
    assert (
        after["serve-1-1"]["metadata"]["annotations"][annotation]
        == before["serve-1-1"]["metadata"]["annotations"][annotation]
    )
    assert sorted(g["metadata"]["name"] for g in cluster.objects("PodGroup")) == groups
    # Each group's PodGroup is owned by the LeaderWorkerSet: the garbage collector deletes
    # them with it.
    for group in cluster.objects("PodGroup"):
        (owner,) = group["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("LeaderWorkerSet", "serve")
    cluster.admin.request("DELETE", LEADER_WORKER_SET.item("default", "serve"))
    wait_for(lambda: not cluster.objects("PodGroup"), timeout=30)
