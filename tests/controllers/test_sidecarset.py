"""The SidecarSet controller: injection at pod creation, and OpenKruise's
``TestGetNextUpgradePods`` (``pkg/controller/sidecarset/sidecarset_strategy_test.go``) ported:
how many pods one pass upgrades, given how many are already upgraded and ready."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.objects import Pod, PodPhase
from berth.api.workloads import Workload
from berth.controllers.sidecarset import HASH_ANNOTATION, LIST_ANNOTATION, injected
from tests.builders import pod as make_pod
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import KRUISE, load, workload


def sidecar_set(
    image: str = "sidecar:v1",
    at: float = 0,
    cpu: str = "100m",
    app: str = "sidecar",
    init: bool = False,
    **strategy: Any,
) -> Workload:
    container = {"name": "test-sidecar", "image": image, "resources": {"requests": {"cpu": cpu}}}
    field = "initContainers" if init else "containers"
    doc = workload(
        KRUISE,
        "SidecarSet",
        "test-sidecarset",
        at,
        selector={"matchLabels": {"app": app}},
        updateStrategy=strategy,
        **{field: [container]},
    )
    return load(doc)[0]


def running_pods(h: Harness, count: int, app: str = "sidecar") -> list[Pod]:
    pods = []
    for index in range(count):
        pod = make_pod(f"pod-{index}", cpu=1000, labels={"app": app})
        pod.containers = (("nginx", "nginx:1.15.1"),)
        h.store.create("Pod", pod)
        h.run(pod)
        pods.append(pod)
    return pods


def test_injection_adds_containers_and_requests_to_matching_new_pods() -> None:
    h = Harness()
    h.apply(sidecar_set())
    match, other = make_pod("a", cpu=1000, labels={"app": "sidecar"}), make_pod("b", cpu=1000)
    for pod in (match, other):
        pod.containers = (("main", "app:1"),)
        h.store.create("Pod", pod)
    assert match.containers == (("main", "app:1"), ("test-sidecar", "sidecar:v1"))
    assert match.requests["cpu"] == 1100 and other.requests["cpu"] == 1000
    assert other.containers == (("main", "app:1"),)
    assert list(injected(match)) == ["test-sidecarset"]
    assert injected(match)["test-sidecarset"]["sidecarSetName"] == "test-sidecarset"
    assert match.annotations[LIST_ANNOTATION] == "test-sidecarset"


def test_paused_injection_leaves_new_pods_alone() -> None:
    h = Harness()
    doc = workload(
        KRUISE,
        "SidecarSet",
        "paused",
        0,
        selector={"matchLabels": {"app": "sidecar"}},
        containers=[{"name": "log", "image": "log:1"}],
        injectionStrategy={"paused": True},
    )
    h.apply(load(doc)[0])
    pod = make_pod("a", cpu=1000, labels={"app": "sidecar"})
    h.store.create("Pod", pod)
    assert pod.containers == () and HASH_ANNOTATION not in pod.annotations


@pytest.mark.parametrize("junk", ["not json", "[1]", '{"test-sidecarset": "abc"}'])
def test_a_pod_with_a_junk_record_gets_its_sidecars(junk: str) -> None:
    h = Harness()
    h.apply(sidecar_set())
    pod = make_pod("a", cpu=1000, labels={"app": "sidecar"})
    pod.annotations = {HASH_ANNOTATION: junk}
    h.store.create("Pod", pod)
    assert injected(pod)["test-sidecarset"]["sidecarList"] == ["test-sidecar"]


def test_init_sidecars_count_by_their_maximum() -> None:
    h = Harness()
    h.apply(sidecar_set(cpu="2", init=True))
    pod = make_pod("a", cpu=1000, labels={"app": "sidecar"})
    h.store.create("Pod", pod)
    assert pod.requests["cpu"] == 2000 and pod.containers == ()


def test_pods_created_before_the_set_are_left_alone() -> None:
    h = Harness()
    (pod,) = running_pods(h, 1)
    h.apply(sidecar_set())
    assert HASH_ANNOTATION not in pod.annotations and pod.requests["cpu"] == 1000


def test_upgrade_in_place_keeps_uid_and_node() -> None:
    h = Harness()
    h.apply(sidecar_set())
    pods = running_pods(h, 2)
    before = [(p.uid, p.bound_node) for p in pods]
    sidecars = h.apply(sidecar_set("sidecar:v2", at=5))
    assert [p.containers[-1] for p in pods] == [
        ("test-sidecar", "sidecar:v2"),
        ("test-sidecar", "sidecar:v1"),
    ]
    h.run_all()
    assert [(p.uid, p.bound_node) for p in pods] == before
    assert all(p.containers[-1] == ("test-sidecar", "sidecar:v2") for p in pods)
    rollout = sidecars.status.rollouts[-1]
    assert (rollout.in_place, rollout.peak_unavailable) == (2, 1) and rollout.end is not None


def test_a_change_beyond_images_reaches_only_new_pods() -> None:
    h = Harness()
    h.apply(sidecar_set())
    (old,) = running_pods(h, 1)
    sidecars = h.apply(sidecar_set(cpu="200m", at=5))
    assert old.containers[-1] == ("test-sidecar", "sidecar:v1")
    assert sidecars.status.conditions[-1][1].startswith("NotUpgradable: 1 pods")
    new = make_pod("late", cpu=1000, labels={"app": "sidecar"})
    h.store.create("Pod", new)
    assert new.requests["cpu"] == 1200


CASES = {
    "maxUnavailable 10, 100 pods, 30 upgraded, 26 of them ready": (100, 30, 26, 10, None, 6),
    "maxUnavailable 10%, 1000 pods, 300 upgraded, 260 ready": (1000, 300, 260, "10%", None, 60),
    "maxUnavailable 5%, 1000 pods, 300 upgraded, 250 ready": (1000, 300, 250, "5%", None, 0),
    "maxUnavailable 100, 100 pods, 30 upgraded, 27 ready": (100, 30, 27, 100, None, 70),
    "partition 180, 1000 pods, 800 upgraded, 760 ready": (1000, 800, 760, 100, 180, 20),
    "partition 100, 1000 pods, 800 upgraded, 760 ready": (1000, 800, 760, 100, 100, 60),
    "partition 18%, 1000 pods, 800 upgraded, 760 ready": (1000, 800, 760, 100, "18%", 20),
    "partition 10%, 1000 pods, 800 upgraded, 760 ready": (1000, 800, 760, 100, "10%", 60),
    "maxUnavailable 5%, 5 pods": (5, 0, 0, "5%", None, 1),
    "maxUnavailable 5, partition 99%, 5 pods": (5, 0, 0, 5, "99%", 1),
    "maxUnavailable 5, partition 1%, 5 pods": (5, 0, 0, 5, "1%", 4),
}


@pytest.mark.parametrize(
    "count,upgraded,ready,max_unavailable,partition,expected", CASES.values(), ids=CASES.keys()
)
def test_upgrades_in_one_pass(count, upgraded, ready, max_unavailable, partition, expected) -> None:
    h = Harness()
    h.apply(sidecar_set())
    pods = running_pods(h, count)
    strategy: dict[str, Any] = {"maxUnavailable": max_unavailable}
    if partition is not None:
        strategy["partition"] = partition
    v2 = sidecar_set("sidecar:v2", at=5, **strategy)
    controller = next(c for c in h.controllers if getattr(c, "kind", "") == "SidecarSet")
    for index, pod in enumerate(pods[:upgraded]):
        controller._record(pod, v2, ["test-sidecar"])
        pod.containers = (("nginx", "nginx:1.15.1"), ("test-sidecar", "sidecar:v2"))
        if index >= ready:
            pod.ready_since = None  # upgraded, still restarting
    h.apply(v2)
    now_upgraded = sum(1 for p in pods[upgraded:] if p.containers[-1][1] == "sidecar:v2")
    assert now_upgraded == expected


def test_upgrade_selector_narrows_the_pods() -> None:
    h = Harness()
    h.apply(sidecar_set())
    pods = running_pods(h, 100)
    for pod in pods[:30]:
        pod.labels["app"] = "test"
    strategy = {"maxUnavailable": 100, "selector": {"matchLabels": {"app": "test"}}}
    h.apply(sidecar_set("sidecar:v2", at=5, **strategy))
    upgraded = [p.name for p in pods if p.containers[-1][1] == "sidecar:v2"]
    assert upgraded == [p.name for p in pods[:30]]


def test_not_update_and_paused_upgrade_nothing() -> None:
    for strategy in ({"type": "NotUpdate"}, {"paused": True}):
        h = Harness()
        h.apply(sidecar_set())
        pods = running_pods(h, 3)
        h.apply(sidecar_set("sidecar:v2", at=5, **strategy))
        assert all(p.containers[-1][1] == "sidecar:v1" for p in pods)
        assert all(p.phase == PodPhase.RUNNING for p in pods)
