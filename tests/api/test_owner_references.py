"""A pod's ownerReferences in a manifest: the controller reference of a kind berth runs becomes
the pod's owner (what its controller adopts it by); anything else leaves the pod plain; a
reference without its kind or name is refused with one line."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.manifest import cross_check, parse_documents
from berth.api.owners import OWNER_KINDS, controller_owner
from berth.api.workloads import ADVANCED_STATEFUL_SET, CLONE_SET, LEADER_WORKER_SET

CLONESET = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web"}
JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"}


def pod(refs: list[dict[str, Any]], namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace, "ownerReferences": refs},
        "spec": {"containers": [{"name": "c"}]},
    }


# name: (ownerReferences, namespace, expected (owner, owner_kind))
CASES = {
    "a CloneSet's controller reference": (
        [{**CLONESET, "controller": True, "uid": "1"}], "team", ("team/web", CLONE_SET)
    ),
    "uid and blockOwnerDeletion are optional": (
        [{**CLONESET, "controller": True, "blockOwnerDeletion": True}], "default",
        ("default/web", CLONE_SET),
    ),
    "an only reference without controller is the controller": (
        [CLONESET], "default", ("default/web", CLONE_SET)
    ),
    "controller: false is not": ([{**CLONESET, "controller": False}], "default", ("", "")),
    "of two references without controller, neither": (
        [CLONESET, {**CLONESET, "name": "other"}], "default", ("", "")
    ),
    "the controller among others": (
        [{**CLONESET, "name": "other"}, {**CLONESET, "controller": True}], "default",
        ("default/web", CLONE_SET),
    ),
    "an Advanced StatefulSet, by its group": (
        [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "db"}],
        "default", ("default/db", ADVANCED_STATEFUL_SET),
    ),
    "an apps/v1 StatefulSet is not berth's": (
        [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}], "default", ("", "")
    ),
    "a ReplicaSet is not berth's": (
        [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1"}], "default", ("", "")
    ),
    "a LeaderWorkerSet": (
        [{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "l"}],
        "default", ("default/l", LEADER_WORKER_SET),
    ),
    "a Volcano Job: owner, no store kind (adopted by name)": (
        [JOB], "default", ("default/train", "")
    ),
    "a PyTorchJob": (
        [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llama"}], "default",
        ("default/llama", "PyTorchJob"),
    ),
    "no references": ([], "default", ("", "")),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_owner_from_references(case: tuple[Any, ...]) -> None:
    refs, namespace, expected = case
    m = parse_documents([pod(refs, namespace)], "pods.yaml")
    assert not m.problems, [str(p) for p in m.problems]
    (only,) = m.pods
    assert (only.owner, only.owner_kind) == expected


# name: (ownerReferences, expected error)
BAD = {
    "no kind": (
        [{"apiVersion": "apps.kruise.io/v1alpha1", "name": "web"}],
        "pods.yaml: Pod/p: metadata.ownerReferences[0].kind: field required",
    ),
    "no name": (
        [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet"}],
        "pods.yaml: Pod/p: metadata.ownerReferences[0].name: field required",
    ),
    "empty kind": (
        [{**CLONESET, "kind": ""}],
        "pods.yaml: Pod/p: metadata.ownerReferences[0].kind: must not be empty",
    ),
    "no apiVersion": (
        [{"kind": "CloneSet", "name": "web"}],
        "pods.yaml: Pod/p: metadata.ownerReferences[0].apiVersion: field required",
    ),
}


@pytest.mark.parametrize("case", BAD.values(), ids=list(BAD))
def test_bad_references_are_one_line_errors_and_the_rest_is_read(case: tuple[Any, ...]) -> None:
    refs, expected = case
    good = pod([CLONESET])
    good["metadata"]["name"] = "q"
    m = parse_documents([pod(refs), good], "pods.yaml")
    assert [str(p) for p in m.errors] == [expected]
    assert [p.name for p in m.pods] == ["q"]


def test_the_live_reader_and_the_manifest_reader_share_the_table() -> None:
    """berth serve reads a cluster pod's owner with the same helper (a Volcano Job's pods it
    adopts by name, so it takes none for them)."""
    for (group, kind), store_kind in OWNER_KINDS.items():
        ref = (f"{group}/v1", kind, "x", True)
        assert controller_owner("ns", [ref]) == ("ns/x", store_kind)


def test_owners_not_in_the_input_are_warned_of_once_each() -> None:
    docs = [
        pod([CLONESET]),
        pod([JOB]) | {"metadata": {"name": "train-worker-9", "ownerReferences": [JOB]}},
    ]
    template = {"spec": {"containers": [{"name": "c"}]}}
    docs.append(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "train"},
            "spec": {"tasks": [{"name": "worker", "replicas": 2, "template": template}]},
        }
    )
    m = parse_documents(docs, "snap.yaml")
    cross_check(m)
    assert not m.errors, [str(p) for p in m.errors]
    assert [str(w) for w in m.warnings] == [
        "snap.yaml: Pod/p: metadata.ownerReferences: CloneSet web is not in the loaded files: "
        "the pod runs as a plain pod",
        "snap.yaml: Pod/train-worker-9: metadata.ownerReferences: Job train makes no pod of "
        "this name: the pod runs as a plain pod",
    ]
    assert all(p.owner == "" for p in m.pods)
