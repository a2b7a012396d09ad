"""Properties of whole simulation runs on random clusters and workloads."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import Manifests
from berth.api.objects import Node, Pod, PodPhase
from berth.framework.config import parse_config
from berth.framework.config_files import load_config
from berth.sim.engine import SimConfig, Simulation

from .generators import (
    BindRecorder,
    build_manifests,
    check_accounting,
    clusters,
    orphans,
    queue_of,
    raw_configs,
    workloads,
)

SETTINGS = settings(max_examples=60, deadline=None)
LIVE = (PodPhase.PENDING, PodPhase.BOUND, PodPhase.RUNNING, PodPhase.SUCCEEDED)

configs = raw_configs().map(
    lambda raw: load_config(None) if raw is None else parse_config(raw, "test")
)


def _simulate(cluster, jobs, config, seed, until=None):
    manifests = build_manifests(cluster, jobs)
    simulation = Simulation(manifests, config, seed=seed, until=until)
    recorder = BindRecorder(simulation.scheduler.state, queue_of(manifests))
    return manifests, simulation.run(), recorder


def _check_pods(manifests, result, until):
    keys = [pod.key for pod in result.pods]
    assert len(keys) == len(set(keys)), "a pod appears twice"
    # No pod is lost, and a run stopped early reports only the pods that had arrived.
    arrived = [pod.key for pod in manifests.pods if pod.submit_time <= result.end_time]
    assert sorted(keys) == sorted(arrived)
    nodes = {node.name for node in manifests.nodes}
    latency = SimConfig().start_latency
    for pod in result.pods:
        assert pod.phase in LIVE, (pod.key, pod.phase)
        if pod.phase == PodPhase.PENDING:
            assert pod.bind_time is None and pod.start_time is None and pod.end_time is None
            assert pod.bound_node == "" and pod.ref in result.reasons
            continue
        assert pod.bound_node in nodes
        times = [pod.submit_time, pod.bind_time, pod.start_time, pod.end_time]
        known = [t for t in times if t is not None]
        assert known == sorted(known), (pod.key, times)
        assert all(t <= result.end_time for t in known)
        if pod.start_time is not None:
            assert pod.start_time == pytest.approx(pod.bind_time + latency)
        if pod.phase == PodPhase.BOUND:
            assert pod.start_time is None and pod.end_time is None
        if pod.phase == PodPhase.RUNNING:
            assert pod.start_time is not None and pod.end_time is None
        if pod.phase == PodPhase.SUCCEEDED:
            assert pod.end_time == pytest.approx(pod.start_time + pod.duration)
        if until is None:
            # Nothing stops the clock early: every bound pod starts, and finishes if it can.
            expected = PodPhase.RUNNING if pod.duration is None else PodPhase.SUCCEEDED
            assert pod.phase == expected, (pod.key, pod.phase)


def _check_gangs_by_bind_time(manifests, result):
    min_member = {g.key: g.min_member for g in manifests.groups}
    binds = defaultdict(list)
    for pod in result.pods:
        if pod.bind_time is not None:
            binds[f"{pod.namespace}/{pod.group}"].append(pod.bind_time)
    for key, times in binds.items():
        times.sort()
        for t in times:
            count = sum(1 for other in times if other <= t)
            assert count >= min_member.get(key, 1), (key, t, count, min_member.get(key, 1))


def _check_final_accounting(manifests, result):
    state = result.scheduler.state
    check_accounting(state)
    expected = np.zeros_like(state.requested[: state.n])
    for pod in result.pods:
        if pod.phase in (PodPhase.BOUND, PodPhase.RUNNING):
            vec = state.request_vector(pod.requests)
            expected[state.rows[pod.bound_node], : len(vec)] += vec
    assert np.array_equal(state.requested[: state.n], expected)


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(cluster=clusters(), jobs=workloads(), config=configs, seed=st.integers(0, 5))
@SETTINGS
def test_simulation_runs_end_consistent(cluster, jobs, config, seed):
    manifests, result, recorder = _simulate(cluster, jobs, config, seed)
    assert recorder.violations == []
    _check_pods(manifests, result, until=None)
    _check_gangs_by_bind_time(manifests, result)
    _check_final_accounting(manifests, result)
    bound = sum(1 for pod in result.pods if pod.bind_time is not None)
    assert recorder.calls >= bound
    lost = orphans(jobs)
    for pod in result.pods:
        if pod.key in lost:
            assert pod.phase == PodPhase.PENDING
            assert result.reasons[pod.ref] == f"podgroup {pod.group} not found"


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(
    cluster=clusters(),
    jobs=workloads(),
    seed=st.integers(0, 5),
    until=st.sampled_from([0.0, 0.5, 1.0, 30.0, 61.0, 200.0]),
)
@SETTINGS
def test_simulation_with_until_stops_there(cluster, jobs, seed, until):
    manifests, result, recorder = _simulate(cluster, jobs, load_config(None), seed, until)
    assert result.end_time == until
    assert recorder.violations == []
    _check_pods(manifests, result, until=until)
    _check_gangs_by_bind_time(manifests, result)
    _check_final_accounting(manifests, result)
    for pod in result.pods:
        if pod.submit_time > until:
            assert pod.phase == PodPhase.PENDING


def _outcome(result):
    pods = [
        (p.key, p.bound_node, p.bind_time, p.start_time, p.end_time, str(p.phase))
        for p in result.pods
    ]
    groups = [(g.key, str(g.phase), g.start_time, g.end_time) for g in result.groups]
    return pods, groups, result.end_time, result.events, result.reasons


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(cluster=clusters(), jobs=workloads(), raw_config=raw_configs(), seed=st.integers(0, 1000))
@SETTINGS
def test_same_inputs_and_seed_give_the_same_run(cluster, jobs, raw_config, seed):
    def config():
        return load_config(None) if raw_config is None else parse_config(raw_config, "test")

    _, first, _ = _simulate(cluster, jobs, config(), seed)
    _, second, _ = _simulate(cluster, jobs, config(), seed)
    assert _outcome(first) == _outcome(second)
    assert np.array_equal(first.series.times, second.series.times)
    assert np.array_equal(first.series.allocated, second.series.allocated)


def test_run_without_until_ends_at_its_last_event():
    manifests = Manifests(
        nodes=[Node("n0", allocatable={"cpu": 4000, "memory": 4096, "pods": 110})],
        pods=[Pod("p", requests={"cpu": 1000, "pods": 1}, duration=10.0)],
    )
    result = Simulation(manifests, load_config(None)).run()
    (pod,) = result.pods
    assert (pod.bind_time, pod.start_time, pod.end_time) == (0.0, 1.0, 11.0)
    # The last event is the pod finishing at 11 s (a session it requests changes nothing);
    # the run reports end_time 60, the first sample after it, and samples an idle tail.
    assert result.end_time == 11.0
