"""SidecarSet injection on the API's pod (berth/k8s/sidecar_inject.py), without a cluster: the
pod the JSON Patch makes, for the cases of Kruise's pod webhook tests
(``pkg/webhook/pod/mutating/sidecarset_test.go``: inject policy, init containers, volumes,
shared volumes, transferred env, pull secrets)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from berth.k8s.sidecar_inject import pod_patch

INJECTED = {"name": "IS_INJECTED", "value": "true"}


def pod(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "app:1",
                "env": [{"name": "NODE", "value": "n1"}, {"name": "ZONE", "value": "z"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }
    base.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "web", "side": "app"}},
        "spec": base,
    }


def apply(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add/replace on object members, the only operations the patch uses."""
    doc = copy.deepcopy(doc)
    for op in ops:
        assert op["op"] in ("add", "replace")
        *parents, last = op["path"].strip("/").split("/")
        target = doc
        for part in parents:
            target = target[part]
        if op["op"] == "replace":
            assert last in target
        target[last] = op["value"]
    return doc


def names(containers: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in containers]


def sidecar(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": f"{name}:1", **fields}


# SidecarSet specs and the names chosen → what the pod's containers, init containers,
# volumes and pull secrets are then
CASES = {
    "before the app by default": (
        [({"containers": [sidecar("log")]}, ["log"])],
        ["log", "app"],
        ["setup"],
        ["data"],
    ),
    "after the app when asked": (
        [({"containers": [sidecar("log", podInjectPolicy="AfterAppContainer")]}, ["log"])],
        ["app", "log"],
        ["setup"],
        ["data"],
    ),
    "only the chosen names": (
        [({"containers": [sidecar("log"), sidecar("app")]}, ["log"])],
        ["log", "app"],
        ["setup"],
        ["data"],
    ),
    "init containers after the pod's, by name": (
        [({"initContainers": [sidecar("z-init"), sidecar("a-init")]}, ["z-init", "a-init"])],
        ["app"],
        ["setup", "a-init", "z-init"],
        ["data"],
    ),
    "two sets, in order": (
        [
            ({"containers": [sidecar("one")]}, ["one"]),
            ({"containers": [sidecar("two", podInjectPolicy="AfterAppContainer")]}, ["two"]),
        ],
        ["one", "app", "two"],
        ["setup"],
        ["data"],
    ),
    "the volumes the sidecar mounts, the pod's own first": (
        [
            (
                {
                    "containers": [
                        sidecar(
                            "log",
                            volumeMounts=[
                                {"name": "logs", "mountPath": "/logs"},
                                {"name": "data", "mountPath": "/other"},
                            ],
                        )
                    ],
                    "volumes": [
                        {"name": "logs", "emptyDir": {}},
                        {"name": "data", "hostPath": {"path": "/x"}},
                        {"name": "unused", "emptyDir": {}},
                    ],
                },
                ["log"],
            )
        ],
        ["log", "app"],
        ["setup"],
        ["data", "logs"],
    ),
}


@pytest.mark.parametrize(
    ("chosen", "containers", "inits", "volumes"), CASES.values(), ids=CASES.keys()
)
def test_containers_and_volumes_merge_as_kruise_merges_them(chosen, containers, inits, volumes):
    original = pod(initContainers=[{"name": "setup", "image": "setup:1"}])
    patched = apply(original, pod_patch(original, chosen, {}))
    spec = patched["spec"]
    assert names(spec["containers"]) == containers
    assert names(spec["initContainers"]) == inits
    assert names(spec["volumes"]) == volumes
    assert spec["volumes"][0] == {"name": "data", "emptyDir": {}}  # the pod's own wins
    app = next(c for c in spec["containers"] if c["name"] == "app")
    assert app == original["spec"]["containers"][0]


def test_a_sidecar_is_marked_injected_and_loses_kruises_fields():
    item = sidecar(
        "log",
        env=[{"name": "LEVEL", "value": "info"}],
        podInjectPolicy="BeforeAppContainer",
        upgradeStrategy={"upgradeType": "ColdUpgrade"},
        shareVolumePolicy={"type": "disabled"},
    )
    original = pod()
    patched = apply(original, pod_patch(original, [({"containers": [item]}, ["log"])], {}))
    log = patched["spec"]["containers"][0]
    assert log == {
        "name": "log",
        "image": "log:1",
        "env": [{"name": "LEVEL", "value": "info"}, INJECTED],
    }


def test_shared_volumes_and_transferred_env_come_from_the_app_container():
    item = sidecar(
        "log",
        volumeMounts=[{"name": "own", "mountPath": "/data"}],  # the app's /data is not taken
        shareVolumePolicy={"type": "enabled"},
        transferEnv=[
            {"sourceContainerName": "app", "envName": "NODE"},
            {
                "sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['side']"}},
                "envNames": ["ZONE", "MISSING"],
            },
        ],
    )
    original = pod()
    original["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "data", "mountPath": "/per-pod", "subPathExpr": "$(NODE)"}
    )
    spec = {"containers": [item], "volumes": [{"name": "own", "emptyDir": {}}]}
    patched = apply(original, pod_patch(original, [(spec, ["log"])], {}))
    log = patched["spec"]["containers"][0]
    assert [m["mountPath"] for m in log["volumeMounts"]] == ["/data", "/per-pod"]
    assert log["env"] == [
        INJECTED,
        {"name": "NODE", "value": "n1"},
        {"name": "ZONE", "value": "z"},
    ]


def test_pull_secrets_and_annotations_are_merged():
    original = pod(imagePullSecrets=[{"name": "mine"}])
    original["metadata"]["annotations"] = {"keep": "me"}
    spec = {"containers": [sidecar("log")], "imagePullSecrets": [{"name": "mine"}, {"name": "x"}]}
    annotations = {"kruise.io/sidecarset-injected-list": "logs"}
    patched = apply(original, pod_patch(original, [(spec, ["log"])], annotations))
    assert patched["spec"]["imagePullSecrets"] == [{"name": "mine"}, {"name": "x"}]
    assert patched["metadata"]["annotations"] == {"keep": "me", **annotations}


def test_nothing_chosen_changes_nothing():
    original = pod()
    assert pod_patch(original, [({"containers": [sidecar("log")]}, [])], {}) == []
