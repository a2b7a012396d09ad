"""Workload kinds at the manifest boundary: what each reads, its defaults, the checks the API
server and OpenKruise's webhooks make, and versions of one object at later submit times."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.manifest import Manifests, cross_check, parse_documents
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    CLONE_SET,
    DEPLOYMENT,
    KUBE_JOB,
    REPLICA_SET,
    SIDECAR_SET,
    STATEFUL_SET,
)

KRUISE = "apps.kruise.io/v1alpha1"


def pod_template(image: str = "app:1", labels: dict[str, str] | None = None, **spec: Any) -> dict:
    containers = [{"name": "c", "image": image, "resources": {"requests": {"cpu": "1"}}}]
    return {
        "metadata": {"labels": {"app": "web"} if labels is None else labels},
        "spec": {"containers": containers, **spec},
    }


def doc(api: str, kind: str, name: str = "web", at: float | None = None, **spec: Any) -> dict:
    meta: dict[str, Any] = {"name": name}
    if at is not None:
        meta["annotations"] = {"berth.io/submit-time": str(at)}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}


def selected(api: str, kind: str, at: float | None = None, **spec: Any) -> dict:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    spec.setdefault("template", pod_template())
    return doc(api, kind, at=at, **spec)


def check(*docs: dict) -> Manifests:
    m = parse_documents(list(docs), "t.yaml")
    cross_check(m)
    return m


def problems(m: Manifests) -> list[str]:
    return [f"{p.severity}: {str(p).removeprefix('t.yaml: ')}" for p in m.problems]


def test_each_kind_is_read_into_its_store_kind() -> None:
    m = check(
        selected("apps/v1", "Deployment"),
        selected("apps/v1", "ReplicaSet"),
        selected("apps/v1", "StatefulSet"),
        selected("apps.kruise.io/v1beta1", "StatefulSet"),
        doc("batch/v1", "Job", template=pod_template()),
        selected(KRUISE, "CloneSet"),
        doc(
            KRUISE,
            "SidecarSet",
            selector={"matchLabels": {"app": "web"}},
            containers=[{"name": "s", "image": "s:1"}],
        ),
        doc(KRUISE, "BroadcastJob", template=pod_template()),
    )
    assert problems(m) == []
    assert [w.kind for w in m.workloads] == [
        DEPLOYMENT,
        REPLICA_SET,
        STATEFUL_SET,
        ADVANCED_STATEFUL_SET,
        KUBE_JOB,
        CLONE_SET,
        SIDECAR_SET,
        BROADCAST_JOB,
    ]


def test_defaults_are_upstreams() -> None:
    deployment, clone_set, stateful_set, job = check(
        selected("apps/v1", "Deployment"),
        selected(KRUISE, "CloneSet"),
        selected("apps/v1", "StatefulSet"),
        doc("batch/v1", "Job", template=pod_template()),
    ).workloads
    assert (deployment.spec.replicas, deployment.spec.strategy) == (1, "RollingUpdate")
    assert (deployment.spec.max_surge, deployment.spec.max_unavailable) == ("25%", "25%")
    assert (
        clone_set.spec.update_type,
        clone_set.spec.max_unavailable,
        clone_set.spec.max_surge,
    ) == ("ReCreate", "20%", 0)
    assert (stateful_set.spec.pod_management, stateful_set.spec.partition) == ("OrderedReady", 0)
    assert (job.spec.completions, job.spec.parallelism, job.spec.backoff_limit) == (1, 1, 6)


def test_a_work_queue_job_has_no_completions() -> None:
    (job,) = check(doc("batch/v1", "Job", parallelism=3, template=pod_template())).workloads
    assert (job.spec.completions, job.spec.parallelism) == (None, 3)


def test_revisions_tell_image_changes_from_other_changes() -> None:
    one, image, env = (
        check(selected(KRUISE, "CloneSet", template=t)).workloads[0].spec.template
        for t in (pod_template(), pod_template("app:2"), pod_template(hostNetwork=True))
    )
    assert one.revision != image.revision and one.layout == image.layout
    assert one.layout != env.layout
    assert image.pod.containers == (("c", "app:2"),)


def test_templates_get_their_priority_class() -> None:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "online"},
        "value": 1000,
    }
    m = check(
        pc, selected("apps/v1", "Deployment", template=pod_template(priorityClassName="online"))
    )
    assert m.workloads[0].template.pod.priority == 1000


BAD = {
    "selector does not match": (
        selected("apps/v1", "Deployment", template=pod_template(labels={"app": "api"})),
        "error: Deployment/web: spec.template.metadata.labels: do not match spec.selector "
        "(expected the template's labels to satisfy it)",
    ),
    "empty selector": (
        selected(KRUISE, "CloneSet", selector={}),
        "error: CloneSet/web: spec.selector: empty selector is invalid (expected matchLabels)",
    ),
    "selector missing": (
        doc("apps/v1", "ReplicaSet", template=pod_template()),
        "error: ReplicaSet/web: spec.selector: field required",
    ),
    "not a percentage": (
        selected("apps/v1", "Deployment", strategy={"rollingUpdate": {"maxSurge": "3x"}}),
        'error: Deployment/web: spec.strategy.rollingUpdate.maxSurge: "3x" is not a count '
        'or a percentage (expected e.g. 2 or "25%")',
    ),
    "replicas beyond the bound": (
        selected("apps/v1", "Deployment", replicas=10**9),
        "error: Deployment/web: spec.replicas: must be <= 1000000 (got 1000000000)",
    ),
    "negative count": (
        selected(KRUISE, "CloneSet", updateStrategy={"maxSurge": -1}),
        "error: CloneSet/web: spec.updateStrategy.maxSurge: must be >= 0 (got -1)",
    ),
    "over 100%": (
        selected("apps/v1", "Deployment", strategy={"rollingUpdate": {"maxUnavailable": "101%"}}),
        'error: Deployment/web: spec.strategy.rollingUpdate.maxUnavailable: "101%" is more '
        "than 100%",
    ),
    "deployment surge and unavailable both 0": (
        selected(
            "apps/v1",
            "Deployment",
            strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}},
        ),
        "error: Deployment/web: spec.strategy.rollingUpdate.maxUnavailable: may not be 0 when "
        "maxSurge is 0",
    ),
    "recreate with rollingUpdate": (
        selected("apps/v1", "Deployment", strategy={"type": "Recreate", "rollingUpdate": {}}),
        "error: Deployment/web: spec.strategy.rollingUpdate: may not be specified when "
        "strategy type is Recreate",
    ),
    "cloneset surge and unavailable both 0": (
        selected(KRUISE, "CloneSet", replicas=3, updateStrategy={"maxUnavailable": 0}),
        "error: CloneSet/web: spec.updateStrategy.maxUnavailable: maxUnavailable and maxSurge "
        "may not both be 0",
    ),
    "in-place only with surge": (
        selected(
            KRUISE, "CloneSet", replicas=3, updateStrategy={"type": "InPlaceOnly", "maxSurge": 1}
        ),
        "error: CloneSet/web: spec.updateStrategy.maxSurge: can not be used with update "
        "strategy type InPlaceOnly",
    ),
    "unknown update type": (
        selected(KRUISE, "CloneSet", updateStrategy={"type": "Rolling"}),
        'error: CloneSet/web: spec.updateStrategy.type: "Rolling" is not a valid value '
        "(expected one of ReCreate, InPlaceIfPossible, InPlaceOnly, OnDelete)",
    ),
    "duplicated podsToDelete": (
        selected(KRUISE, "CloneSet", scaleStrategy={"podsToDelete": ["a", "a"]}),
        "error: CloneSet/web: spec.scaleStrategy.podsToDelete: duplicated items ['a']",
    ),
    "in-place on a Kubernetes StatefulSet": (
        selected(
            "apps/v1",
            "StatefulSet",
            updateStrategy={"rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}},
        ),
        "error: StatefulSet/web: spec.updateStrategy.rollingUpdate.podUpdatePolicy: not a "
        "field of apps/v1 StatefulSet (in-place update needs apps.kruise.io/v1beta1)",
    ),
    "advanced maxUnavailable with OrderedReady": (
        selected(
            "apps.kruise.io/v1beta1",
            "StatefulSet",
            updateStrategy={"rollingUpdate": {"maxUnavailable": 2}},
        ),
        "error: StatefulSet/web: spec.updateStrategy.rollingUpdate.maxUnavailable: can only be "
        "other than 1 with podManagementPolicy Parallel",
    ),
    "bad reserved ordinal range": (
        selected("apps.kruise.io/v1beta1", "StatefulSet", reserveOrdinals=["5-2"]),
        'error: StatefulSet/web: spec.reserveOrdinals[0]: "5-2" is not an ordinal or a range '
        '(expected e.g. 3 or "2-5")',
    ),
    "indexed job without completions": (
        doc("batch/v1", "Job", parallelism=2, completionMode="Indexed", template=pod_template()),
        "error: Job/web: spec.completions: field required when completionMode is Indexed",
    ),
    "sidecar set without containers": (
        doc(KRUISE, "SidecarSet", selector={"matchLabels": {"app": "web"}}),
        "error: SidecarSet/web: spec.containers: no containers (expected at least one sidecar)",
    ),
    "sidecar container without a name": (
        doc(
            KRUISE,
            "SidecarSet",
            selector={"matchLabels": {"app": "web"}},
            containers=[{"image": "s:1"}],
        ),
        "error: SidecarSet/web: spec.containers[0].name: field required",
    ),
    "broadcast job that never completes with a deadline": (
        doc(
            KRUISE,
            "BroadcastJob",
            template=pod_template(),
            completionPolicy={"type": "Never", "activeDeadlineSeconds": 10},
        ),
        "error: BroadcastJob/web: spec.completionPolicy.activeDeadlineSeconds: only allowed "
        "with completionPolicy type Always",
    ),
}


@pytest.mark.parametrize("document,line", BAD.values(), ids=BAD.keys())
def test_bad_input(document: dict, line: str) -> None:
    assert [p for p in problems(check(document)) if p.startswith("error")] == [line]


def test_sidecar_sets_are_cluster_scoped() -> None:
    sidecar = doc(
        KRUISE,
        "SidecarSet",
        selector={"matchLabels": {"app": "web"}},
        containers=[{"name": "s", "image": "s:1"}],
    )
    sidecar["metadata"]["namespace"] = "team"
    m = check(sidecar)
    assert problems(m) == [
        "warning: SidecarSet/team/web: metadata.namespace: SidecarSet is cluster-scoped: "
        "ignored (spec.namespace limits it to a namespace)"
    ]
    assert m.workloads[0].namespace == "default"


def test_kinds_not_simulated_are_still_read_past() -> None:
    m = check({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}})
    assert (m.problems, m.workloads, dict(m.skipped)) == ([], [], {"DaemonSet": 1})


# -- versions --------------------------------------------------------------------------------------


def test_a_later_version_is_not_a_duplicate() -> None:
    m = check(
        selected(KRUISE, "CloneSet"),
        selected(KRUISE, "CloneSet", at=3600, template=pod_template("app:2")),
    )
    assert problems(m) == [] and [w.submit_time for w in m.workloads] == [0, 3600]


def test_the_same_name_in_another_kind_is_another_object() -> None:
    assert problems(check(selected(KRUISE, "CloneSet"), selected("apps/v1", "Deployment"))) == []


VERSION_ERRORS = {
    "same submit time": (
        selected(KRUISE, "CloneSet", at=5),
        selected(KRUISE, "CloneSet", at=5),
        'error: CloneSet/web: metadata.name: duplicate CloneSet "default/web" with the '
        "same submit time (also defined earlier in this file; a later version needs a later "
        "berth.io/submit-time)",
    ),
    "selector changed": (
        selected("apps/v1", "Deployment"),
        selected(
            "apps/v1",
            "Deployment",
            at=10,
            selector={"matchLabels": {"app": "web", "v": "2"}},
            template=pod_template(labels={"app": "web", "v": "2"}),
        ),
        "error: Deployment/web: spec.selector: field is immutable (differs from the version "
        "submitted at 0s)",
    ),
    "job template changed": (
        doc("batch/v1", "Job", template=pod_template()),
        doc("batch/v1", "Job", at=10, template=pod_template("app:2")),
        "error: Job/web: spec.template: field is immutable (differs from the version "
        "submitted at 0s)",
    ),
    "pod management changed": (
        selected("apps/v1", "StatefulSet"),
        selected("apps/v1", "StatefulSet", at=10, podManagementPolicy="Parallel"),
        "error: StatefulSet/web: spec.podManagementPolicy: field is immutable (differs from "
        "the version submitted at 0s)",
    ),
    "in-place only with more than images": (
        selected(KRUISE, "CloneSet", updateStrategy={"type": "InPlaceOnly"}),
        selected(
            KRUISE,
            "CloneSet",
            at=10,
            updateStrategy={"type": "InPlaceOnly"},
            template=pod_template(hostNetwork=True),
        ),
        "error: CloneSet/web: spec.template: with update strategy InPlaceOnly only container "
        "images and metadata may change (other fields differ from the version submitted at 0s)",
    ),
}


@pytest.mark.parametrize("first,later,line", VERSION_ERRORS.values(), ids=VERSION_ERRORS.keys())
def test_version_errors(first: dict, later: dict, line: str) -> None:
    assert problems(check(first, later)) == [line]


def test_versions_are_compared_in_time_order_whatever_the_file_order() -> None:
    # The version at 10 is checked against the one at 0, though it comes first in the file.
    later = selected("apps/v1", "StatefulSet", at=10, podManagementPolicy="Parallel")
    assert len(problems(check(later, selected("apps/v1", "StatefulSet")))) == 1
