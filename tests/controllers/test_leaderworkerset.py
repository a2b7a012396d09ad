"""The LeaderWorkerSet controller on the controller harness: pod names, the labels and
annotations LWS puts on them, one gang per group (as LWS's Volcano provider sizes it), the
exclusive-placement affinity (upstream's ``SetExclusiveAffinities``), restart policies, scaling
and rolling update group by group."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from berth.api.lws import (
    EXCLUSIVE_ANNOTATION,
    GROUP_INDEX_LABEL,
    GROUP_KEY_LABEL,
    LEADER_NAME_ANNOTATION,
    NAME_LABEL,
    SIZE_ANNOTATION,
    WORKER_INDEX_LABEL,
)
from berth.api.objects import PodPhase
from berth.api.selectors import Requirement
from berth.api.workloads import Workload
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import load, template, workload

API = "leaderworkerset.x-k8s.io/v1"


def lws(
    name: str = "lws",
    replicas: int = 2,
    size: int = 3,
    image: str = "app:1",
    at: float = 0,
    annotations: dict[str, str] | None = None,
    leader: dict[str, Any] | None = None,
    **spec: Any,
) -> Workload:
    lwt: dict[str, Any] = {"size": size, "workerTemplate": template(name, image)}
    if leader is not None:
        lwt["leaderTemplate"] = leader
    for key in ("restartPolicy",):
        if key in spec:
            lwt[key] = spec.pop(key)
    doc = workload(API, "LeaderWorkerSet", name, at, replicas=replicas, leaderWorkerTemplate=lwt)
    doc["spec"].update(spec)
    doc["metadata"]["annotations"].update(annotations or {})
    return load(doc)[0]


def groups_of(h: Harness) -> dict[str, int]:
    return {g.name: g.min_member for g in h.store.list("PodGroup")}


# name: (replicas, size, startupPolicy, leader template?, expected pod names, gang size)
CASES = {
    "two groups of three": (
        2,
        3,
        "LeaderCreated",
        False,
        ["lws-0", "lws-0-1", "lws-0-2", "lws-1", "lws-1-1", "lws-1-2"],
        3,
    ),
    "size one is a leader alone": (3, 1, "LeaderCreated", False, ["lws-0", "lws-1", "lws-2"], 1),
    "LeaderReady: the leader first, a gang of one": (
        2,
        4,
        "LeaderReady",
        True,
        ["lws-0", "lws-1"],
        1,
    ),
    "zero replicas": (0, 4, "LeaderCreated", False, [], None),
}


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_pods_and_gangs(case: tuple[Any, ...]) -> None:
    replicas, size, startup, has_leader, names, gang = case
    leader = template("lws", "leader:1") if has_leader else None
    h = Harness()
    obj = h.apply(lws(replicas=replicas, size=size, leader=leader, startupPolicy=startup))
    assert h.names(obj) == names
    assert set(groups_of(h).values()) == ({gang} if gang else set())
    assert len(groups_of(h)) == replicas
    for pod in h.pods(obj):
        assert pod.group.startswith(f"lws-{pod.labels[GROUP_INDEX_LABEL]}-")


def test_labels_and_annotations() -> None:
    h = Harness()
    obj = h.apply(lws(replicas=2, size=3, leader=template("lws", "leader:1")))
    pods = {p.name: p for p in h.pods(obj)}
    leader, worker = pods["lws-1"], pods["lws-1-2"]
    key = hashlib.sha1(b"default/lws-1").hexdigest()
    for pod, index in ((leader, "0"), (worker, "2")):
        assert pod.labels[NAME_LABEL] == "lws"
        assert pod.labels[GROUP_INDEX_LABEL] == "1"
        assert pod.labels[WORKER_INDEX_LABEL] == index
        assert pod.labels[GROUP_KEY_LABEL] == key
        assert pod.annotations[SIZE_ANNOTATION] == "3"
        assert pod.group == worker.group
    assert worker.annotations[LEADER_NAME_ANNOTATION] == "lws-1"
    assert LEADER_NAME_ANNOTATION not in leader.annotations
    assert dict(leader.containers)["app"] == "leader:1"
    assert dict(worker.containers)["app"] == "app:1"
    assert pods["lws-0"].labels[GROUP_KEY_LABEL] != key


def test_leader_ready_creates_workers_once_the_leader_is_ready() -> None:
    h = Harness()
    obj = h.apply(lws(replicas=1, size=3, startupPolicy="LeaderReady"))
    assert h.names(obj) == ["lws-0"]
    h.run(h.pods(obj)[0])
    assert h.names(obj) == ["lws-0", "lws-0-1", "lws-0-2"]


def test_exclusive_topology_affinity() -> None:
    h = Harness()
    obj = h.apply(lws(replicas=2, size=2, annotations={EXCLUSIVE_ANNOTATION: "rack"}))
    for pod in h.pods(obj):
        key = pod.labels[GROUP_KEY_LABEL]
        assert pod.annotations[EXCLUSIVE_ANNOTATION] == "rack"
        (together,) = pod.affinity.pod_required
        (alone,) = pod.affinity.anti_required
        assert together.topology_key == alone.topology_key == "rack"
        assert together.selector.requirements == (Requirement(GROUP_KEY_LABEL, "In", (key,)),)
        assert alone.selector.requirements == (
            Requirement(GROUP_KEY_LABEL, "Exists"),
            Requirement(GROUP_KEY_LABEL, "NotIn", (key,)),
        )


def test_no_affinity_without_the_annotation() -> None:
    h = Harness()
    obj = h.apply(lws(replicas=1, size=2))
    assert all(not p.affinity.has_pod_terms for p in h.pods(obj))


@pytest.mark.parametrize(
    ("policy", "recreated"),
    [("RecreateGroupOnPodRestart", {"lws-0", "lws-0-1", "lws-0-2"}), ("None", {"lws-0-1"})],
)
def test_restart_policy(policy: str, recreated: set[str]) -> None:
    h = Harness()
    obj = h.apply(lws(replicas=2, size=3, restartPolicy=policy))
    h.run_all(obj)
    before = {p.name: p.uid for p in h.pods(obj)}
    h.end(next(p for p in h.pods(obj) if p.name == "lws-0-1"), PodPhase.FAILED)
    after = {p.name: p.uid for p in h.pods(obj)}
    assert set(after) == set(before)
    assert {n for n in after if after[n] != before[n]} == recreated


def test_scale_down_removes_whole_groups_and_ends_their_gangs() -> None:
    h = Harness()
    obj = h.apply(lws(replicas=3, size=2))
    h.run_all(obj)
    h.apply(lws(replicas=1, size=2))
    assert h.names(obj) == ["lws-0", "lws-0-1"]
    ended = [g.name for g in h.store.list("PodGroup") if g.end_time is not None]
    assert sorted(n.rsplit("-", 1)[0] for n in ended) == ["lws-1", "lws-2"]


def test_rolling_update_group_by_group_from_the_top() -> None:
    h = Harness()
    obj = h.apply(lws(replicas=3, size=2, image="app:1"))
    h.run_all(obj)
    h.apply(lws(replicas=3, size=2, image="app:2"))
    images = {p.name: dict(p.containers)["app"] for p in h.pods(obj)}
    assert images["lws-2"] == images["lws-2-1"] == "app:2"
    assert images["lws-0"] == images["lws-1"] == "app:1"
    assert obj.status.updated == 1 and obj.status.ready == 2
    # the new group is not ready: nothing else moves until it is
    h.settle()
    assert dict(next(p for p in h.pods(obj) if p.name == "lws-1").containers)["app"] == "app:1"
    h.run_all(obj)
    assert {dict(p.containers)["app"] for p in h.pods(obj)} == {"app:2"}
    assert obj.status.updated == obj.status.ready == 3
    (roll,) = obj.status.rollouts
    assert roll.end is not None and roll.recreated == 6 and roll.peak_unavailable == 1


def test_rolling_update_max_unavailable_and_partition() -> None:
    h = Harness()
    spec = {
        "rolloutStrategy": {"rollingUpdateConfiguration": {"maxUnavailable": 2, "partition": 1}}
    }
    obj = h.apply(lws(replicas=4, size=1, image="app:1", **spec))
    h.run_all(obj)
    h.apply(lws(replicas=4, size=1, image="app:2", **spec))
    images = {p.name: dict(p.containers)["app"] for p in h.pods(obj)}
    assert images == {"lws-0": "app:1", "lws-1": "app:1", "lws-2": "app:2", "lws-3": "app:2"}
    h.run_all(obj)
    images = {p.name: dict(p.containers)["app"] for p in h.pods(obj)}
    assert images == {"lws-0": "app:1", "lws-1": "app:2", "lws-2": "app:2", "lws-3": "app:2"}
    assert obj.status.rollouts[-1].end is not None


def test_manifest_checks() -> None:
    from berth.api.manifest import parse_documents

    doc = workload(
        API,
        "LeaderWorkerSet",
        "bad",
        leaderWorkerTemplate={"size": 0, "workerTemplate": template("bad")},
        rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": 0}},
    )
    problems = [str(p) for p in parse_documents([doc], "test").errors]
    assert any("leaderWorkerTemplate.size" in p for p in problems), problems
    doc["spec"]["leaderWorkerTemplate"]["size"] = 2
    problems = [str(p) for p in parse_documents([doc], "test").errors]
    assert any("maxUnavailable: may not be 0 when maxSurge is 0" in p for p in problems), problems
