"""A claim's ``status.allocation`` as berth writes it (kube-scheduler's shape) and reads it back,
and the pods its ``reservedFor`` names: no cluster needed."""

from __future__ import annotations

from decimal import Decimal

import pytest

from berth.api.dra import NodeSelection
from berth.api.selectors import NodeSelectorTerm, Requirement
from berth.cluster.dra.allocator import ClaimAllocation, DeviceResult
from berth.k8s.dra import allocation_body, read_allocation, reserved_pods

GPU = DeviceResult("gpu", "gpu.example.com", "n1", "gpu-0")
ZONE = NodeSelectorTerm((Requirement("zone", "In", ("a",)),), ())


@pytest.mark.parametrize(
    ("allocation", "body"),
    [
        (
            ClaimAllocation((GPU,), NodeSelection(node_name="n1")),
            {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                         "pool": "n1", "device": "gpu-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
            },
        ),
        (
            ClaimAllocation((GPU,), NodeSelection(all_nodes=True)),
            {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                      "pool": "n1", "device": "gpu-0"}]}},
        ),
        (
            ClaimAllocation((GPU,), NodeSelection(terms=(ZONE,))),
            {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                         "pool": "n1", "device": "gpu-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}]},
            },
        ),
        (
            ClaimAllocation(
                (
                    DeviceResult("a", "nic.example.com", "p", "nic-0", {"bw": Decimal(10)}),
                    DeviceResult("b/x", "gpu.example.com", "n1", "gpu-1", admin_access=True),
                ),
                NodeSelection(node_name="n1"),
            ),
            {
                "devices": {"results": [
                    {"request": "a", "driver": "nic.example.com", "pool": "p",
                     "device": "nic-0", "consumedCapacity": {"bw": "10"}},
                    {"request": "b/x", "driver": "gpu.example.com", "pool": "n1",
                     "device": "gpu-1", "adminAccess": True},
                ]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
            },
        ),
    ],
    ids=["node", "all-nodes", "selector", "shared-and-admin"],
)  # fmt: skip
def test_an_allocation_is_written_as_kube_scheduler_writes_it_and_read_back(allocation, body):
    assert allocation_body(allocation) == body
    assert read_allocation({"status": {"allocation": body}}) == allocation


def test_an_unallocated_claim_reads_as_none():
    assert read_allocation({}) is None
    assert read_allocation({"status": {"reservedFor": []}}) is None


def test_reserved_for_names_pods_in_the_claims_namespace():
    raw = {
        "metadata": {"namespace": "team"},
        "status": {
            "reservedFor": [
                {"resource": "pods", "name": "p1", "uid": "1"},
                {"apiGroup": "example.com", "resource": "things", "name": "t", "uid": "2"},
                {"resource": "pods", "name": "p2", "uid": "3"},
            ]
        },
    }
    assert reserved_pods(raw) == ["team/p1", "team/p2"]
