"""Workload controllers in the simulator, with the scheduler placing their pods: rollouts,
scaling by another component, Jobs, BroadcastJobs, and what happens on node failures."""

from __future__ import annotations

from typing import Any

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import PodPhase
from berth.api.workloads import CLONE_SET, DEPLOYMENT
from berth.controllers.workload import set_replicas
from berth.framework.config import parse_config
from berth.framework.config_files import load_config
from berth.sim.engine import SimConfig, SimResult, Simulation
from tests.controllers.workload_docs import (
    KRUISE,
    cloneset,
    deployment,
    statefulset,
    template,
    workload,
)


def nodes(count: int, cpu: int = 8, prefix: str = "n", **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"{prefix}{i}", **extra.get("metadata", {})},
            "spec": extra.get("spec", {}),
            "status": {"allocatable": {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}},
        }
        for i in range(count)
    ]


def build(
    docs: list[dict[str, Any]], simulation: dict[str, Any] | None = None, **kw: Any
) -> Simulation:
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = load_config(None)
    if simulation is not None:
        config = parse_config({"simulation": simulation}, "test")
    return Simulation(
        manifests, config, sim_config=SimConfig.from_raw(config.simulation, "test"), **kw
    )


def simulate(docs: list[dict[str, Any]], **kw: Any) -> SimResult:
    return build(docs, **kw).run()


def by_kind(result: SimResult, name: str):
    return next(w for w in result.workloads if w.name == name)


def live(result: SimResult, group: str) -> list:
    return [p for p in result.pods if p.group == group and p.phase == PodPhase.RUNNING]


def test_deployment_rolling_update_within_surge_and_unavailable() -> None:
    strategy = {"rollingUpdate": {"maxSurge": 2, "maxUnavailable": 1}}
    result = simulate(
        [
            *nodes(4),
            deployment(replicas=6, strategy=strategy),
            deployment(replicas=6, strategy=strategy, image="app:2", at=100),
        ]
    )
    web = by_kind(result, "web")
    (rollout,) = web.status.rollouts
    assert rollout.end is not None and rollout.peak_unavailable <= 1 and rollout.peak_surge <= 2
    assert rollout.recreated == 6 and rollout.in_place == 0
    running = live(result, "deployment-web")
    assert len(running) == 6 and {p.containers[0][1] for p in running} == {"app:2"}
    deleted = [p for p in result.pods if p.phase == PodPhase.DELETED]
    assert len(deleted) == 6
    assert all(
        result.reasons[p.ref].startswith("deleted by the ReplicaSet controller") for p in deleted
    )


def test_recreate_deletes_every_old_pod_before_creating_new_ones() -> None:
    strategy = {"type": "Recreate"}
    result = simulate(
        [
            *nodes(2),
            deployment(replicas=3, strategy=strategy),
            deployment(replicas=3, strategy=strategy, image="app:2", at=100),
        ]
    )
    old = [p for p in result.pods if p.containers[0][1] == "app:1"]
    new = [p for p in result.pods if p.containers[0][1] == "app:2"]
    assert max(p.end_time for p in old) <= min(p.submit_time for p in new)
    assert by_kind(result, "web").status.rollouts[0].peak_unavailable == 3


def test_rollback_reuses_the_earlier_replica_set() -> None:
    result = simulate(
        [
            *nodes(2),
            deployment(replicas=2),
            deployment(replicas=2, image="app:2", at=100),
            deployment(replicas=2, image="app:1", at=200),
        ]
    )
    names = {p.name.rsplit("-", 1)[0] for p in result.pods}
    assert len(names) == 2  # two ReplicaSets for three versions
    assert {p.containers[0][1] for p in live(result, "deployment-web")} == {"app:1"}
    assert [r.end is not None for r in by_kind(result, "web").status.rollouts] == [True, True]


def test_another_component_can_change_replicas_at_a_time() -> None:
    # What an autoscaler does: write the replicas of a Deployment and a CloneSet mid-run.
    sim = build([*nodes(4), deployment(replicas=2), cloneset("cs", replicas=2)])
    sim.control.at(50, lambda: set_replicas(sim.store, DEPLOYMENT, "default/web", 5))
    sim.control.at(50, lambda: set_replicas(sim.store, CLONE_SET, "default/cs", 4))
    sim.control.at(90, lambda: set_replicas(sim.store, CLONE_SET, "default/cs", 1))
    result = sim.run()
    assert len(live(result, "deployment-web")) == 5
    assert len(live(result, "cloneset-cs")) == 1
    assert by_kind(result, "web").status.rollouts == []  # scaling is not a rollout


def test_in_place_update_keeps_pods_on_their_nodes_recreate_moves_them() -> None:
    def run(kind: str) -> SimResult:
        strategy = {"type": kind, "maxUnavailable": 2}
        return simulate(
            [
                *nodes(3),
                cloneset(replicas=4, updateStrategy=strategy),
                cloneset(replicas=4, updateStrategy=strategy, image="app:2", at=100),
            ],
            simulation={"restartLatency": 5},
        )

    in_place, recreate = run("InPlaceIfPossible"), run("ReCreate")
    placed = [(p.name, p.uid, p.bound_node) for p in in_place.pods]
    assert len(placed) == 4 and all(p.restarts == 1 for p in in_place.pods)
    rollout = by_kind(in_place, "web").status.rollouts[0]
    assert (rollout.in_place, rollout.recreated, rollout.churn) == (4, 0, {})
    assert rollout.end == 100 + 5 + 5  # two batches of two, five seconds each
    assert len(recreate.pods) == 8
    rollout = by_kind(recreate, "web").status.rollouts[0]
    assert rollout.recreated == 4 and rollout.churn["cpu"] == 4000


def test_a_node_failure_is_made_good_by_the_controllers() -> None:
    sim_docs = [
        *nodes(3),
        deployment(replicas=3),
        statefulset(replicas=2, podManagementPolicy="Parallel"),
    ]
    failures = {"nodeFailures": [{"node": "n0", "at": 50}]}
    result = simulate(sim_docs, simulation=failures)
    lost = [p for p in result.pods if p.phase == PodPhase.EVICTED]
    assert lost and all(result.reasons[p.ref] == "node n0 failed" for p in lost)
    assert len(live(result, "deployment-web")) == 3
    db = live(result, "statefulset-db")
    assert sorted(p.name for p in db) == ["db-0", "db-1"] and all(p.bound_node != "n0" for p in db)
    for pod in lost:  # a StatefulSet's replacement has the name; each keeps its own row
        if pod.group == "statefulset-db":
            assert any(p.name == pod.name and p.uid != pod.uid for p in result.pods)


def test_kube_job_runs_completions_and_ends_its_group() -> None:
    job = workload(
        "batch/v1",
        "Job",
        "pi",
        completions=5,
        parallelism=2,
        template=template("pi", annotations={"berth.io/duration": "100"}),
    )
    result = simulate([*nodes(2), job])
    pi = by_kind(result, "pi")
    assert (pi.status.phase, pi.status.succeeded) == ("Complete", 5)
    group = next(g for g in result.groups if g.name == "job-pi")
    assert (
        str(group.phase) == "Completed" and group.end_time == 303
    )  # three waves: 1 s to start, 100 s to run


def test_kube_job_fails_past_its_backoff_limit() -> None:
    annotations = {"berth.io/duration": "100", "berth.io/fail-after": "10"}
    job = workload(
        "batch/v1",
        "Job",
        "flaky",
        backoffLimit=2,
        template=template("flaky", annotations=annotations),
    )
    result = simulate([*nodes(1), job])
    flaky = by_kind(result, "flaky")
    assert flaky.status.phase == "Failed" and flaky.status.conditions[-1][1].startswith(
        "Failed: BackoffLimitExceeded"
    )
    starts = [p.start_time for p in result.pods]
    # failures at 11, then the back-off: 10 s, then 20 s, before each replacement is made
    assert (
        len(starts) == 3
        and starts[1] - (starts[0] + 10) >= 10
        and starts[2] - (starts[1] + 10) >= 20
    )


def test_indexed_job_names_its_pods_by_index() -> None:
    job = workload(
        "batch/v1",
        "Job",
        "idx",
        completions=3,
        parallelism=3,
        completionMode="Indexed",
        template=template("idx", annotations={"berth.io/duration": "10"}),
    )
    result = simulate([*nodes(1), job])
    assert sorted(p.name.rsplit("-", 1)[0] for p in result.pods) == ["idx-0", "idx-1", "idx-2"]
    assert by_kind(result, "idx").status.phase == "Complete"


def broadcast(**spec: Any) -> dict[str, Any]:
    return workload(
        KRUISE,
        "BroadcastJob",
        "warm",
        template=template(
            "warm", cpu="2", annotations={"berth.io/duration": "10"}, **spec.pop("pod", {})
        ),
        **spec,
    )


def test_broadcast_job_puts_one_pod_on_every_node_that_fits() -> None:
    cluster = [
        *nodes(2, prefix="cpu-", metadata={"labels": {"pool": "cpu"}}),
        *nodes(
            1,
            prefix="gpu-",
            metadata={"labels": {"pool": "gpu"}},
            spec={"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        ),
        *nodes(
            1, prefix="off-", metadata={"labels": {"pool": "cpu"}}, spec={"unschedulable": True}
        ),
        *nodes(1, cpu=1, prefix="tiny-", metadata={"labels": {"pool": "cpu"}}),
    ]
    result = simulate(
        [*cluster, broadcast(pod={"nodeSelector": {"pool": "cpu"}}, parallelism=1)], until=100
    )
    placed = sorted(p.bound_node for p in result.pods)
    assert placed == [
        "cpu-0",
        "cpu-1",
    ]  # gpu: taint; off: unschedulable; tiny: too small (1 cpu needed... equal fits)
    starts = sorted(p.start_time for p in result.pods)
    assert starts[1] >= starts[0] + 10  # parallelism 1: one after the other
    assert by_kind(result, "warm").status.phase == "Completed"


def test_broadcast_job_fail_fast() -> None:
    job = broadcast(pod={}, failurePolicy={"type": "FailFast"})
    job["spec"]["template"]["metadata"]["annotations"]["berth.io/fail-after"] = "5"
    result = simulate([*nodes(2), job])
    assert by_kind(result, "warm").status.phase == "Failed"
    assert str(next(g for g in result.groups if g.name == "broadcastjob-warm").phase) == "Failed"


def test_a_run_is_deterministic() -> None:
    docs = [
        *nodes(4),
        cloneset(replicas=5, updateStrategy={"type": "InPlaceIfPossible"}),
        cloneset(replicas=5, updateStrategy={"type": "InPlaceIfPossible"}, image="app:2", at=60),
        deployment("api", replicas=3),
        deployment("api", replicas=3, image="app:2", at=60),
    ]

    def outcome(result: SimResult):
        return [
            (p.name, p.uid, p.bound_node, p.phase, p.end_time) for p in result.pods
        ], result.reasons

    assert outcome(simulate(docs, seed=3)) == outcome(simulate(docs, seed=3))


def test_broadcast_job_never_reaches_a_node_that_comes_back() -> None:
    job = broadcast(completionPolicy={"type": "Never"})
    failure = {"nodeFailures": [{"node": "n1", "at": 0, "recoverAfter": 100}]}
    result = simulate([*nodes(2), job], simulation=failure, until=300)
    placed = sorted((p.bound_node, p.start_time) for p in result.pods)
    assert placed == [("n0", 1.0), ("n1", 101.0)]  # n1 gets its pod once it is back
    assert by_kind(result, "warm").status.phase == "Running"  # Never: it does not complete


def test_broadcast_job_pause_on_failure() -> None:
    job = broadcast(failurePolicy={"type": "Pause"}, parallelism=1)
    job["spec"]["template"]["metadata"]["annotations"]["berth.io/fail-after"] = "5"
    result = simulate([*nodes(3), job], until=300)
    warm = by_kind(result, "warm")
    assert warm.status.phase == "Paused" and len(result.pods) == 1
