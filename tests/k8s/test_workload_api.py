"""``berth serve --workload-api`` on the real API server (Kubernetes 1.37 with the
GenericWorkload gate): the Workload API's PodGroups are read through the cache, and the pods
that name one in ``spec.schedulingGroup`` bind all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from berth.k8s.kinds import WORKLOAD_POD_GROUP
from tests.k8s.harness import Cluster, fast_options, node_doc, pod_doc, serving, settle, wait_for

GROUPS = WORKLOAD_POD_GROUP.collection("default")
WORKLOAD = GROUPS.replace("podgroups", "workloads")


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": WORKLOAD_POD_GROUP.api_version,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {
            "workloadRef": {"workloadName": "train", "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
        },
    }


def member(name: str, group: str, cpu: str, **extra: Any) -> dict[str, Any]:
    doc = pod_doc(name, cpu=cpu, **extra)
    doc["spec"]["schedulingGroup"] = {"podGroupName": group}
    return doc


@pytest.fixture
def workload_api(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, with the Workload API's objects removed afterwards (the harness knows
    only the kinds berth always watches)."""
    yield cluster
    for path in (GROUPS, WORKLOAD):
        cluster.admin.request("DELETE", path)


def add(cluster: Cluster, *docs: dict[str, Any]) -> None:
    for doc in docs:
        if doc["apiVersion"] == WORKLOAD_POD_GROUP.api_version:
            path = WORKLOAD if doc["kind"] == "Workload" else GROUPS
            cluster.admin.request("POST", path, body=doc)
        else:
            cluster.add(doc)


def test_the_api_server_serves_the_workload_api(workload_api: Cluster) -> None:
    found = workload_api.admin.request("GET", "/apis/scheduling.k8s.io/v1beta1")
    assert {r["name"] for r in found["resources"]} >= {"workloads", "podgroups"}


def test_a_workload_gang_binds_all_or_nothing(workload_api: Cluster) -> None:
    cluster = workload_api
    workload = {
        "apiVersion": WORKLOAD_POD_GROUP.api_version,
        "kind": "Workload",
        "metadata": {"name": "train"},
        "spec": {
            "podGroupTemplates": [
                {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}
            ]
        },
    }
    add(cluster, node_doc("n1", cpu="4"), node_doc("n2", cpu="4"), workload)
    # fits: three pods of 2 cores on 8; never fits whole: three of 3 cores (two would fit).
    add(cluster, pod_group("fits", 3), pod_group("too-big", 3))
    add(cluster, *(member(f"fits-{i}", "fits", "2") for i in range(2)))
    add(cluster, *(member(f"big-{i}", "too-big", "3") for i in range(3)))
    both = member("both", "fits", "1", annotations={"scheduling.k8s.io/group-name": "vc"})
    add(cluster, both)
    with serving(cluster, options=fast_options(workload_api=True)) as server:
        settle(server)
        assert cluster.bindings() == {}  # two of the gang's three: it waits
        assert "Pod/default/both" in server.store.skipped
        assert "spec.schedulingGroup.podGroupName" in server.store.skipped["Pod/default/both"]
        add(cluster, member("fits-2", "fits", "2"))
        wait_for(lambda: len(cluster.bindings()) == 3)
        settle(server)
    assert sorted(cluster.bindings()) == [f"default/fits-{i}" for i in range(3)]


def test_without_the_flag_the_gangs_pods_wait(workload_api: Cluster) -> None:
    cluster = workload_api
    add(cluster, node_doc("n1", cpu="4"), pod_group("g", 1), member("alone", "g", "1"))
    with serving(cluster) as server:
        settle(server)
        assert not any(i.resource is WORKLOAD_POD_GROUP for i in server.informers)
    assert cluster.bindings() == {}
