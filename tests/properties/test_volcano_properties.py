"""Properties of Volcano-style configurations with preempt and reclaim on random clusters and
workloads: allocate by turns, victims voted tier by tier, gangs kept whole by every action. After
every session no node is over capacity, every placement respected the filters when it was made,
no queue holds more than its capability, and every gang has either none of its pods bound or at
least minMember."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import Manifests
from berth.framework.config import parse_config
from berth.framework.scheduler import Scheduler
from berth.framework.statement import Statement

from .generators import (
    BindRecorder,
    build_manifests,
    check_accounting,
    check_counters,
    clusters,
    plain_pod,
    populate,
    queue_of,
    workloads,
)

SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def eviction_configs(draw: st.DrawFn) -> dict[str, Any]:
    """Volcano's layout (priority, gang, conformance; then drf, a queue plugin, predicates,
    nodeorder) or all in one tier, with gang voting on victims or not, with or without drf
    (ordering queues along a tree or not), and proportion or capacity sharing the cluster."""
    gang: dict[str, Any] = {"name": "gang"}
    if draw(st.booleans()):
        gang.update(enablePreemptable=False, enableReclaimable=False)
    first = [{"name": "priority"}, gang, {"name": "conformance"}]
    second = [
        {"name": draw(st.sampled_from(["proportion", "capacity"]))},
        {"name": "predicates"},
        {"name": "nodeorder"},
    ]
    if draw(st.booleans()):  # drf often refuses victims: half the runs go without it
        second.insert(0, {"name": "drf", "enableHierarchy": draw(st.booleans())})
    layout = [first, second] if draw(st.booleans()) else [first + second]
    return {
        "actions": "enqueue, allocate, preempt, reclaim, backfill",
        "tiers": [{"plugins": tier} for tier in layout],
    }


def _check_gangs_whole(scheduler: Scheduler) -> None:
    for job in scheduler.jobs.values():
        held = len(job.bound)
        assert held == 0 or held >= job.group.min_member, (
            f"{job.key}: {held} pods bound, minMember {job.group.min_member}"
        )


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(
    cluster=clusters(max_nodes=3),
    jobs=workloads(max_jobs=12),
    raw=eviction_configs(),
    priorities=st.lists(st.integers(0, 3), min_size=12, max_size=12),
)
@SETTINGS
def test_evicting_configurations_keep_capacity_gangs_and_quotas(cluster, jobs, raw, priorities):
    manifests = build_manifests(cluster, jobs)
    # Later arrivals tend to outrank what already runs, so that preempt has work to do.
    for group, priority in zip(manifests.groups, priorities, strict=False):
        group.priority = priority + 2 * (group.submit_time > 0)
    for pod, priority in zip(manifests.pods, priorities * 8, strict=False):
        pod.priority = priority + 2 * (pod.submit_time > 0)  # its implicit group takes it
    _checked_run(manifests, raw)


@st.composite
def contention(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Full nodes and a second wave that outranks the first: low-priority jobs (single pods
    and gangs, in both queues) arrive at t=0 and fill 1-3 nodes of 4 CPUs; higher-priority
    jobs arrive at t=1, so that preempt and reclaim have victims to choose among."""
    cluster = [
        {
            "name": f"node-{i:02d}",
            "cpu": 4000,
            "memory": 32768,
            "gpu": 0,
            "pods": 110,
            "zone": "za",
            "kind": "cpu",
            "tainted": False,
            "unschedulable": False,
        }
        for i in range(draw(st.integers(1, 3)))
    ]
    jobs = []
    for index in range(draw(st.integers(2, 9))):
        replicas = draw(st.integers(1, 4))
        cpu = draw(st.sampled_from([1000, 2000]))
        pod = plain_pod(cpu)
        jobs.append(
            {
                "name": f"job-{index:02d}",
                "namespace": "default",
                "queue": draw(st.sampled_from(["default", "capped"])),
                "group_delay": 0.0,
                "gang": replicas > 1,
                "min_member": draw(st.integers(1, replicas)),
                "submit": draw(st.sampled_from([0.0, 0.0, 1.0])),
                "pods": [dict(pod) for _ in range(replicas)],
            }
        )
    return cluster, jobs


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(scenario=contention(), raw=eviction_configs(), bump=st.integers(1, 3))
@SETTINGS
def test_preempt_and_reclaim_under_contention_keep_capacity_gangs_and_quotas(scenario, raw, bump):
    cluster, jobs = scenario
    manifests = build_manifests(cluster, jobs)
    for group in manifests.groups:
        group.priority = bump * (group.submit_time > 0)
    for pod in manifests.pods:
        pod.priority = bump * (pod.submit_time > 0)
    _checked_run(manifests, raw)


def _checked_run(manifests: Manifests, raw: dict[str, Any]) -> None:
    """Sessions at every arrival and two more, checking the invariants after each one."""
    scheduler = Scheduler(parse_config(raw, "test"))
    recorder = BindRecorder(scheduler.state, queue_of(manifests))
    rollback = Statement.rollback

    def restoring(statement: Statement, savepoint: int) -> None:
        recorder.restoring = True
        try:
            rollback(statement, savepoint)
        finally:
            recorder.restoring = False

    Statement.rollback = restoring  # type: ignore[method-assign]
    try:
        _run(scheduler, recorder, manifests)
    finally:
        Statement.rollback = rollback  # type: ignore[method-assign]


def _run(scheduler: Scheduler, recorder: BindRecorder, manifests: Manifests) -> None:
    populate(scheduler, manifests)
    times = sorted({p.submit_time for p in manifests.pods})
    evicted: set[str] = set()
    for now in times + [times[-1] + 1.0, times[-1] + 2.0]:
        for pod in manifests.pods:
            if pod.submit_time == now:
                scheduler.submit(pod)
        binds = scheduler.run_session(now)
        for eviction in scheduler.evictions:
            assert eviction.pod.key not in evicted, f"{eviction.pod.key} evicted twice"
            evicted.add(eviction.pod.key)
            assert eviction.pod.key not in {b.pod.key for b in binds}
        check_accounting(scheduler.state)
        check_counters(scheduler.state)
        assert recorder.violations == []
        _check_gangs_whole(scheduler)
