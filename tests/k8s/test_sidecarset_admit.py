"""The serve side's answer to one pod under review (berth/k8s/sidecarset.py ``admit``), without a
cluster: the cache holds SidecarSets as the informer delivers them, and the simulator's hook
decides which sidecars the patch carries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from berth.k8s.cache import KubeStore
from berth.k8s.informer import Event
from berth.k8s.sidecarset import SidecarSets


def sidecar_set(name: str, app: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "SidecarSet",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": app}},
            "containers": [{"name": name, "image": f"{name}:1"}],
            **spec,
        },
    }


def pod(labels: dict[str, str], cpu: str = "1", name: str = "p", **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": labels, **meta}
    if name:
        metadata["name"] = name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]
        },
    }


@pytest.fixture
def sidecars() -> SidecarSets:
    store = KubeStore(client=None)  # type: ignore[arg-type]  # nothing here writes
    served = SidecarSets(store, lambda: 0.0, lambda at, callback: None)
    for doc in (
        sidecar_set("log"),
        sidecar_set("paused", injectionStrategy={"paused": True}),
        sidecar_set("team-only", namespace="team"),
        sidecar_set("db-proxy", app="db"),
    ):
        store.apply(Event("SidecarSet", "ADDED", doc))
    return served


def injected_names(patch: list[dict[str, Any]]) -> list[str]:
    for op in patch:
        if op["path"] == "/spec/containers":
            return [c["name"] for c in op["value"]]
    return []


# pod, namespace of the request → the pod's containers after the patch (None: no patch)
CASES = {
    "selected": (pod({"app": "web"}), "default", ["log", "c"]),
    "not selected": (pod({"app": "cache"}), "default", None),
    "another set's": (pod({"app": "db"}), "default", ["db-proxy", "c"]),
    "a set limited to the pod's namespace": (
        pod({"app": "web"}),
        "team",
        ["log", "team-only", "c"],
    ),
    "named by generateName": (
        pod({"app": "web"}, name="", generateName="web-"),
        "team",
        ["log", "team-only", "c"],
    ),
    "a container of the sidecar's name already": (
        {**pod({"app": "web"}), "spec": {"containers": [{"name": "log", "image": "mine"}]}},
        "default",
        None,
    ),
}


@pytest.mark.parametrize(("raw", "namespace", "containers"), CASES.values(), ids=CASES.keys())
def test_the_hook_decides_what_the_patch_injects(sidecars, raw, namespace, containers):
    patch, warnings = sidecars.admit(raw, namespace)
    assert warnings == []
    if containers is None:
        assert patch == []
        return
    assert injected_names(patch) == containers
    (annotations,) = [op["value"] for op in patch if op["path"] == "/metadata/annotations"]
    records = json.loads(annotations["kruise.io/sidecarset-hash"])
    assert sorted(records) == sorted(n for n in containers if n != "c")
    assert annotations["kruise.io/sidecarset-injected-list"] == ",".join(sorted(records))


def test_a_pod_berth_cannot_read_is_let_through_with_a_warning(sidecars):
    patch, warnings = sidecars.admit(pod({"app": "web"}, cpu="lots"), "default")
    assert patch == []
    (warning,) = warnings
    assert warning.startswith("berth injected no sidecars: it cannot read the pod (")
    assert "lots" in warning
