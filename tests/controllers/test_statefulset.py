"""The StatefulSet controllers, step by step as OpenKruise's ``stateful_set_control_test.go``
(and Kubernetes' StatefulSet tests) drive them: pods are made running and ready by hand between
passes, and each step checks which pods exist and on which revision."""

from __future__ import annotations

from berth.api.objects import PodPhase
from berth.api.workloads import Workload
from berth.controllers.statefulset import replica_range
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import load, statefulset, template


def sts(**kwargs) -> Workload:
    return load(statefulset(**kwargs))[0]


def revisions(h: Harness, obj: Workload) -> dict[str, str]:
    """pod name → the image it runs."""
    return {p.name: p.containers[0][1] for p in h.pods(obj)}


def test_ordered_ready_creates_one_pod_at_a_time() -> None:
    h = Harness()
    obj = h.apply(sts(replicas=3))
    assert h.names(obj) == ["db-0"]
    h.run(h.pods(obj)[0], ready=False)
    assert h.names(obj) == ["db-0"]  # running but not ready: the next waits
    h.ready(h.pods(obj)[0])
    assert h.names(obj) == ["db-0", "db-1"]
    h.run_all(obj)
    assert h.names(obj) == ["db-0", "db-1", "db-2"]
    assert obj.status.available == 3


def test_ordered_ready_scales_down_from_the_highest_ordinal() -> None:
    # One pod per pass, highest first; deletion is immediate in berth (no graceful
    # termination), so the next pass follows at once.
    h = Harness()
    obj = h.apply(sts(replicas=3))
    h.run_all(obj)
    deleted: list[str] = []
    h.store.watch(
        "Pod", lambda event, pod: deleted.append(pod.name) if event == "DELETED" else None
    )
    h.apply(sts(replicas=1, at=10))
    assert (h.names(obj), deleted) == (["db-0"], ["db-2", "db-1"])


def test_ordered_ready_scale_down_waits_for_an_unready_pod() -> None:
    h = Harness()
    obj = h.apply(sts(replicas=3))
    h.run_all(obj)
    h.run(h.pods(obj)[0], ready=False)  # the pod that stays is not ready: nothing goes
    h.apply(sts(replicas=1, at=10))
    assert h.names(obj) == ["db-0", "db-1", "db-2"]
    h.ready(h.pods(obj)[0])
    assert h.names(obj) == ["db-0"]


def test_parallel_creates_and_deletes_at_once() -> None:
    h = Harness()
    obj = h.apply(sts(replicas=3, podManagementPolicy="Parallel"))
    assert h.names(obj) == ["db-0", "db-1", "db-2"]
    h.apply(sts(replicas=1, podManagementPolicy="Parallel", at=5))
    assert h.names(obj) == ["db-0"]


def test_scale_up_with_scale_max_unavailable() -> None:
    # OpenKruise's TestScaleUpWithMaxUnavailable: Parallel, 5 replicas, scaleStrategy
    # maxUnavailable 2: two pods at first, a third once one of them is ready.
    h = Harness()
    obj = h.apply(
        sts(
            advanced=True,
            replicas=5,
            podManagementPolicy="Parallel",
            scaleStrategy={"maxUnavailable": 2},
        )
    )
    assert h.names(obj) == ["db-0", "db-1"]
    h.run(h.pods(obj)[1])
    assert h.names(obj) == ["db-0", "db-1", "db-2"]


def test_rolling_update_with_max_unavailable_and_partition() -> None:
    # OpenKruise's TestStatefulSetControlRollingUpdateWithMaxUnavailable: 6 replicas,
    # Parallel, partition 3, maxUnavailable 2. Pods 5 and 4 go first; 3 once 4 is ready;
    # 0-2 stay on the old revision.
    h = Harness()
    rolling = {"partition": 3, "maxUnavailable": 2}
    spec = dict(advanced=True, replicas=6, podManagementPolicy="Parallel")
    obj = h.apply(sts(**spec, updateStrategy={"rollingUpdate": rolling}))
    h.run_all(obj)
    h.apply(sts(**spec, updateStrategy={"rollingUpdate": rolling}, image="app:2", at=10))
    old = {f"db-{i}": "app:1" for i in range(6)}
    assert revisions(h, obj) == {**old, "db-4": "app:2", "db-5": "app:2"}  # recreated at once
    h.run(h.pods(obj)[4])  # db-4 ready
    assert revisions(h, obj)["db-3"] == "app:2"
    h.run_all(obj)
    assert revisions(h, obj) == {**old, "db-3": "app:2", "db-4": "app:2", "db-5": "app:2"}
    rollout = obj.status.rollouts[-1]
    assert rollout.end is not None and rollout.recreated == 3 and rollout.peak_unavailable == 2


def test_ordered_rolling_update_replaces_one_pod_at_a_time_from_the_top() -> None:
    h = Harness()
    obj = h.apply(sts(replicas=3))
    h.run_all(obj)
    uids = {p.name: p.uid for p in h.pods(obj)}
    h.apply(sts(replicas=3, image="app:2", at=10))
    assert h.names(obj) == ["db-0", "db-1", "db-2"]
    assert revisions(h, obj) == {"db-0": "app:1", "db-1": "app:1", "db-2": "app:2"}
    assert h.pods(obj)[2].uid != uids["db-2"]  # same name, new pod
    h.run(h.pods(obj)[2])
    assert revisions(h, obj)["db-1"] == "app:2"
    h.run_all(obj)
    assert set(revisions(h, obj).values()) == {"app:2"}
    assert obj.status.current_revision == obj.spec.template.revision


def test_advanced_in_place_update_keeps_uid_and_node() -> None:
    h = Harness()
    rolling = {"podUpdatePolicy": "InPlaceIfPossible"}
    obj = h.apply(sts(advanced=True, replicas=2, updateStrategy={"rollingUpdate": rolling}))
    h.run_all(obj)
    before = {p.name: (p.uid, p.bound_node) for p in h.pods(obj)}
    h.apply(
        sts(
            advanced=True,
            replicas=2,
            updateStrategy={"rollingUpdate": rolling},
            image="app:2",
            at=10,
        )
    )
    pod = h.pods(obj)[1]
    assert (pod.uid, pod.bound_node) == before["db-1"] and pod.containers == (("app", "app:2"),)
    assert pod.ready_since is None and pod.restarts == 1  # restarting: unavailable
    h.run_all(obj)
    assert {p.name: (p.uid, p.bound_node) for p in h.pods(obj)} == before
    assert obj.status.rollouts[-1].in_place == 2 and obj.status.rollouts[-1].recreated == 0


def test_in_place_only_with_a_spec_change_stops_with_a_condition() -> None:
    h = Harness()
    rolling = {"podUpdatePolicy": "InPlaceOnly"}
    obj = h.apply(sts(advanced=True, replicas=2, updateStrategy={"rollingUpdate": rolling}))
    h.run_all(obj)
    changed = template("db", cpu="2")
    h.apply(
        sts(
            advanced=True, replicas=2, updateStrategy={"rollingUpdate": rolling}, tmpl=changed, at=5
        )
    )
    assert all(p.phase == PodPhase.RUNNING for p in h.pods(obj)) and len(h.pods(obj)) == 2
    assert obj.status.conditions[-1][1] == "FailedUpdate: pod db-1 cannot be updated in place"


def test_on_delete_updates_nothing_itself() -> None:
    h = Harness()
    obj = h.apply(sts(replicas=2, updateStrategy={"type": "OnDelete"}))
    h.run_all(obj)
    h.apply(sts(replicas=2, updateStrategy={"type": "OnDelete"}, image="app:2", at=5))
    assert set(revisions(h, obj).values()) == {"app:1"}


def test_reserved_ordinals_are_skipped_and_start_ordinal_honoured() -> None:
    h = Harness()
    obj = h.apply(
        sts(
            advanced=True,
            replicas=3,
            podManagementPolicy="Parallel",
            reserveOrdinals=[1, "3-4"],
            ordinals={"start": 1},
        )
    )
    # start 1, reserved 1, 3, 4: the three replicas are ordinals 2, 5 and 6
    assert replica_range(obj.spec) == (1, 7)
    assert h.names(obj) == ["db-2", "db-5", "db-6"]


def test_a_failed_pod_is_recreated_under_its_name() -> None:
    h = Harness()
    obj = h.apply(sts(replicas=2, podManagementPolicy="Parallel"))
    h.run_all(obj)
    failed = h.pods(obj)[0]
    h.end(failed, PodPhase.FAILED)
    h.settle()
    assert failed.phase == PodPhase.FAILED
    assert h.names(obj) == ["db-0", "db-1"] and h.pods(obj)[0].uid != failed.uid
