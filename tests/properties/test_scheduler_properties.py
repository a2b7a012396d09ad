"""Properties of scheduling sessions on random clusters and workloads, checked on ClusterState's
arrays after every session and on every placement as it is made."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.keys import HOSTNAME_LABEL
from berth.api.objects import Node, Pod, PodGroup
from berth.api.selectors import Affinity, PodAffinityTerm
from berth.framework.config import ConfigError, parse_config
from berth.framework.config_files import load_config
from berth.framework.scheduler import Scheduler

from .generators import (
    BindRecorder,
    app_selector,
    build_manifests,
    check_accounting,
    check_counters,
    check_holding,
    clusters,
    populate,
    queue_of,
    raw_configs,
    workloads,
)

SETTINGS = settings(max_examples=60, deadline=None)


def _scheduler(cluster, jobs, seed=0, raw_config=None):
    manifests = build_manifests(cluster, jobs)
    config = load_config(None) if raw_config is None else parse_config(raw_config, "test")
    scheduler = Scheduler(config, seed=seed)
    recorder = BindRecorder(scheduler.state, queue_of(manifests))
    populate(scheduler, manifests)
    return scheduler, recorder, manifests


def _check_binds(scheduler: Scheduler, binds, seen: set[str]) -> None:
    for bind in binds:
        assert bind.pod.key not in seen, f"{bind.pod.key} bound twice"
        seen.add(bind.pod.key)
        assert bind.node in scheduler.state.rows
        assert bind.pod.bound_node == bind.node
        assert bind.pod.key in scheduler.state.pods_on[scheduler.state.rows[bind.node]]


def _check_queue_accounting(scheduler: Scheduler, recorder: BindRecorder) -> None:
    """The scheduler's per-queue totals agree with the pods actually on nodes."""
    axis = scheduler.state.axis
    for queue, held in recorder.held.items():
        vector = scheduler.queue_allocated.get(queue, np.zeros(0, dtype=np.int64))
        for name, amount in held.items():
            col = axis.index(name)
            assert (int(vector[col]) if col < len(vector) else 0) == amount, (queue, name)


def _check_gangs(bound_per_group: Counter, min_member: dict[str, int]) -> None:
    for key, count in bound_per_group.items():
        assert count == 0 or count >= min_member.get(key, 1), (
            f"group {key}: {count} pods bound, minMember {min_member.get(key, 1)}"
        )


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(cluster=clusters(), jobs=workloads(), raw_config=raw_configs(), data=st.data())
@SETTINGS
def test_sessions_respect_capacity_gangs_and_constraints(cluster, jobs, raw_config, data):
    scheduler, recorder, manifests = _scheduler(cluster, jobs, raw_config=raw_config)
    min_member = {g.key: g.min_member for g in manifests.groups}
    state = scheduler.state
    bound: list[Pod] = []
    bound_per_group: Counter = Counter()
    seen: set[str] = set()
    times = sorted({p.submit_time for p in manifests.pods})
    last = times[-1]
    for now in times + [last + 1.0, last + 2.0, last + 3.0]:
        for pod in manifests.pods:
            if pod.submit_time == now:
                scheduler.submit(pod)
        binds = scheduler.run_session(now)
        _check_binds(scheduler, binds, seen)
        for bind in binds:
            bound.append(bind.pod)
            bound_per_group[f"{bind.pod.namespace}/{bind.pod.group}"] += 1
        _check_gangs(bound_per_group, min_member)
        check_accounting(state)
        check_counters(state)
        check_holding(scheduler)
        _check_queue_accounting(scheduler, recorder)
        assert recorder.violations == []
        # Some bound pods leave their nodes, as finished pods would.
        if bound:
            leaving = data.draw(st.lists(st.sampled_from(bound), unique_by=id, max_size=3))
            for pod in leaving:
                scheduler.release(pod)
                bound.remove(pod)
            check_accounting(state)
            check_holding(scheduler)
    assert recorder.calls >= len(seen)


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(cluster=clusters(), jobs=workloads(), seed=st.integers(0, 3), raw_config=raw_configs())
@SETTINGS
def test_releasing_every_bound_pod_leaves_no_trace(cluster, jobs, seed, raw_config):
    scheduler, recorder, manifests = _scheduler(cluster, jobs, seed, raw_config)
    for pod in manifests.pods:
        scheduler.submit(pod)
    bound: list[Pod] = []
    for now in range(4):
        bound += [b.pod for b in scheduler.run_session(float(now))]
    assert recorder.violations == []
    for pod in bound:
        scheduler.release(pod)
    state = scheduler.state
    n = state.n
    assert not state.requested[:n].any(), "requested not back to zero"
    assert np.array_equal(state.free[:n], state.allocatable[:n])
    assert np.allclose(state.usage[:n], 0.0)
    assert all(not pods for pods in state.pods_on)
    for counts in list(state.selector_counts.values()) + list(state.carried.values()):
        assert not counts[:n].any()
    for job in scheduler.jobs.values():
        assert job.active == 0 and job.allocated == 0
    for vector in scheduler.queue_allocated.values():
        assert not vector.any()


def _snapshot(scheduler: Scheduler):
    state = scheduler.state
    n = state.n
    return (
        state.requested[:n].copy(),
        state.free[:n].copy(),
        state.usage[:n].copy(),
        [sorted(pods) for pods in state.pods_on],
        {k: v[:n].copy() for k, v in state.selector_counts.items()},
        {k: v[:n].copy() for k, v in state.carried.items()},
    )


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(
    cluster=clusters(),
    jobs=workloads(max_jobs=8),
    anti=st.booleans(),
    extra=st.integers(1, 3),
    raw_config=raw_configs(),
)
@SETTINGS
def test_a_gang_that_cannot_complete_leaves_state_unchanged(cluster, jobs, anti, extra, raw_config):
    scheduler, recorder, manifests = _scheduler(cluster, jobs, raw_config=raw_config)
    for pod in manifests.pods:
        scheduler.submit(pod)
    for now in range(6):  # settle: later sessions place nothing more
        if not scheduler.run_session(float(now)):
            break
    before = _snapshot(scheduler)
    # At most one member fits per node (by anti-affinity or by size), and one more member than
    # there are nodes is required: the statement places what it can, then must roll back.
    nodes = len(cluster)
    size = nodes + extra
    biggest = max(spec["cpu"] for spec in cluster)
    group = PodGroup("doomed", min_member=size)
    scheduler.add_group(group)
    members = []
    for i in range(size):
        affinity = Affinity()
        cpu = 100
        if anti:
            affinity = Affinity(
                anti_required=(PodAffinityTerm(app_selector("doomed"), HOSTNAME_LABEL),)
            )
        else:
            cpu = biggest // 2 + 1
        members.append(
            Pod(
                f"doomed-{i}",
                labels={"app": "doomed"},
                requests={"cpu": cpu, "memory": 64, "pods": 1},
                affinity=affinity,
                group="doomed",
            )
        )
    for pod in members:
        recorder.queues[pod.key] = "default"
        scheduler.submit(pod)
    binds = scheduler.run_session(10.0)
    assert not [b for b in binds if b.pod.group == "doomed"]
    job = scheduler.jobs["default/doomed"]
    assert job.active == 0 and job.allocated == 0 and len(job.pending) == size
    if binds:
        return  # other pods were placed after all; the comparison below no longer applies
    after = _snapshot(scheduler)
    assert np.array_equal(before[0], after[0])
    assert np.array_equal(before[1], after[1])
    assert np.allclose(before[2], after[2])
    assert before[3] == after[3]
    for key, counts in before[4].items():
        assert np.array_equal(counts, after[4][key])
    for key, counts in after[5].items():
        assert np.array_equal(counts, before[5].get(key, np.zeros_like(counts)))
    check_counters(scheduler.state)
    assert recorder.violations == []


def test_best_effort_gang_is_not_partly_bound():
    """Regression: backfill used to bind best-effort gang members one by one."""
    scheduler = Scheduler(load_config(None))
    # Room for one pod only: a gang of three can never run.
    scheduler.add_node(Node("n0", allocatable={"cpu": 4000, "memory": 4096, "pods": 1}))
    scheduler.add_group(PodGroup("g", min_member=3))
    for i in range(3):
        scheduler.submit(Pod(f"p{i}", requests={"pods": 1}, group="g"))
    binds = scheduler.run_session(0.0)
    assert len(binds) == 0 or len(binds) >= 3, [b.pod.name for b in binds]


def test_mixed_gang_is_not_partly_bound():
    """Regression: backfill used to bind a gang's best-effort member on its own."""
    scheduler = Scheduler(load_config(None))
    scheduler.add_node(Node("n0", allocatable={"cpu": 4000, "memory": 4096, "pods": 110}))
    scheduler.add_group(PodGroup("g", min_member=3))
    scheduler.submit(Pod("be", requests={"pods": 1}, group="g"))
    for i in range(2):  # only one of these fits
        scheduler.submit(Pod(f"p{i}", requests={"cpu": 3000, "pods": 1}, group="g"))
    binds = scheduler.run_session(0.0)
    assert binds == [], [b.pod.name for b in binds]


def test_min_feasible_zero_is_rejected():
    with pytest.raises(ConfigError, match="search.minFeasibleNodes: expected 1 to 10"):
        parse_config({"search": {"mode": "sampled", "minFeasibleNodes": 0}}, "test")


@pytest.mark.parametrize("nodes, percentage", [(1, 0), (2, 0), (50, 1)])
def test_sampled_search_with_a_tiny_target_still_places(nodes, percentage):
    """Few nodes or a small percentageOfNodesToScore must never make the sample target 0."""
    config = parse_config(
        {
            "search": {
                "mode": "sampled",
                "minFeasibleNodes": 1,
                "percentageOfNodesToScore": percentage,
            }
        },
        "test",
    )
    config.search.min_feasible = 0  # as if set in code: the search itself must cope
    scheduler = Scheduler(config)
    for i in range(nodes):
        scheduler.add_node(Node(f"n{i}", allocatable={"cpu": 4000, "memory": 4096, "pods": 110}))
    pod = Pod("p", requests={"cpu": 100, "pods": 1})
    scheduler.submit(pod)
    binds = scheduler.run_session(0.0)
    assert [b.pod.name for b in binds] == ["p"], scheduler.pending_reason(pod)


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(
    batches=st.lists(
        st.tuples(clusters(min_nodes=11, max_nodes=12), workloads(max_jobs=5)),
        min_size=6,
        max_size=8,
    ),
    raw_config=raw_configs(),
)
@settings(max_examples=25, deadline=None)
def test_nodes_joining_between_sessions(batches, raw_config):
    """Nodes arrive while pods are bound, growing ClusterState past its initial 64 rows (arrays,
    label columns, taint masks and pod counters all grow); nothing is lost on the way."""
    config = load_config(None) if raw_config is None else parse_config(raw_config, "test")
    scheduler = Scheduler(config)
    recorder = BindRecorder(scheduler.state)
    for queue in build_manifests([], []).queues:
        scheduler.add_queue(queue)
    bound: list[Pod] = []
    for k, (cluster, jobs) in enumerate(batches):
        cluster = [{**spec, "name": f"b{k}-{spec['name']}"} for spec in cluster]
        jobs = [{**job, "name": f"b{k}-{job['name']}", "group_delay": 0.0} for job in jobs]
        manifests = build_manifests(cluster, jobs)
        recorder.queues.update(queue_of(manifests))
        for node in manifests.nodes:
            scheduler.add_node(node)
        for group in manifests.groups:
            scheduler.add_group(group)
        for pod in manifests.pods:
            scheduler.submit(pod)
        binds = scheduler.run_session(float(k))
        bound += [b.pod for b in binds]
        check_accounting(scheduler.state)
        check_counters(scheduler.state)
        assert recorder.violations == []
    state = scheduler.state
    assert state.n == sum(len(cluster) for cluster, _ in batches) > 64
    assert state.capacity >= state.n
    for pod in bound:
        assert pod.key in state.pods_on[state.rows[pod.bound_node]]
        scheduler.release(pod)
    assert not state.requested[: state.n].any()
    assert all(not pods for pods in state.pods_on)
