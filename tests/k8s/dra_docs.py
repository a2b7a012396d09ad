"""DRA objects (resource.k8s.io/v1) for the live tests, and the helpers that read claims back
and empty them between tests (the shared fixture does not know these kinds)."""

from __future__ import annotations

from typing import Any

from berth.k8s.client import ApiError
from berth.k8s.kinds import DRA
from tests.k8s.harness import Cluster

API = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def device_class(name: str = "gpu", driver: str = DRIVER) -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [selector]},
    }


def device(name: str, **attributes: Any) -> dict[str, Any]:
    kinds = {bool: "bool", int: "int", str: "string"}
    return {
        "name": name,
        "attributes": {k: {kinds[type(v)]: v} for k, v in attributes.items()},
    }


def node_slice(node: str, devices: list[dict[str, Any]], driver: str = DRIVER) -> dict:
    """One slice publishing ``devices`` for ``node`` (its pool is named after it)."""
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver.split('.')[0]}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def request(
    name: str = "gpu",
    device_class_name: str = "gpu",
    count: int | None = 1,
    mode: str = "ExactCount",
    selectors: list[str] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class_name, "allocationMode": mode}
    if mode == "ExactCount" and count is not None:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def claim_template(name: str, *requests: dict[str, Any], namespace: str = "default") -> dict:
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }


def claim(name: str, *requests: dict[str, Any], namespace: str = "default") -> dict:
    return {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": list(requests)}},
    }


def with_claims(pod: dict[str, Any], template: str = "", claim_name: str = "") -> dict:
    """``pod`` using one claim (entry ``gpu``), from ``template`` or the named claim."""
    entry: dict[str, Any] = {"name": "gpu"}
    if template:
        entry["resourceClaimTemplateName"] = template
    else:
        entry["resourceClaimName"] = claim_name
    spec = pod["spec"]
    spec["resourceClaims"] = [entry]
    spec["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]
    return pod


def pod_claim(cluster: Cluster, pod: str, namespace: str = "default") -> dict[str, Any] | None:
    """The claim the pod's entry ``gpu`` uses (its template's, once made), or None."""
    raw = cluster.admin.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}")
    name = next((e.get("resourceClaimName") for e in raw["spec"].get("resourceClaims") or []), None)
    if not name:
        statuses = (raw.get("status") or {}).get("resourceClaimStatuses") or []
        name = next((s.get("resourceClaimName") for s in statuses), None)
    if not name:
        return None
    return cluster.admin.request(
        "GET", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
    )


def devices_of(raw: dict[str, Any] | None) -> list[tuple[str, str, str, str]]:
    """(request, driver, pool, device) of each allocated device of a claim."""
    allocation = ((raw or {}).get("status") or {}).get("allocation") or {}
    return [
        (r["request"], r["driver"], r["pool"], r["device"])
        for r in (allocation.get("devices") or {}).get("results") or []
    ]


def all_claims(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.objects("ResourceClaim")


def clean(cluster: Cluster) -> None:
    """Delete every DRA object (claims' finalizers taken off, as nothing else will once their
    pods are gone)."""
    for item in all_claims(cluster):
        meta = item["metadata"]
        if meta.get("finalizers"):
            try:
                cluster.patch(
                    "ResourceClaim", meta["namespace"], meta["name"],
                    {"metadata": {"finalizers": None}},
                )  # fmt: skip
            except ApiError as exc:
                if exc.status != 404:
                    raise
    for resource in reversed(DRA):
        namespaces = {(i["metadata"].get("namespace") or None) for i in cluster.objects(
            resource.kind)}  # fmt: skip
        for namespace in namespaces:
            try:
                cluster.admin.request("DELETE", resource.collection(namespace))
            except ApiError as exc:
                if exc.status != 404:
                    raise
