"""Properties of simulations with batch Jobs: random jobs with faults, policies, Commands and
node failures on small clusters.

Whatever happens, every pod object ends in one phase with the resources it held given back, no
session binds a gang short of its minimum, no job restarts past maxRetry, and the same seed
gives the same run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import FINAL_JOB_PHASES, JobPhase, PodPhase
from berth.framework.config import parse_config
from berth.framework.scheduler import Scheduler
from berth.sim.engine import SimConfig, Simulation

EVENTS = ["PodFailed", "PodEvicted", "TaskCompleted", "*"]
ACTIONS = ["RestartJob", "RestartTask", "RestartPod", "AbortJob", "CompleteJob", "TerminateJob"]
CONFIGS = [
    {"actions": "enqueue, allocate, backfill"},
    {
        "actions": "allocate, preempt, backfill",
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}],
    },
]


@st.composite
def jobs(draw: Any, index: int) -> dict[str, Any]:
    tasks = []
    for t in range(draw(st.integers(1, 2))):
        replicas = draw(st.integers(1, 3))
        notes = {"berth.io/duration": str(draw(st.integers(20, 300)))}
        if draw(st.booleans()):
            notes["berth.io/fail-after"] = str(draw(st.integers(0, 200)))
            notes["berth.io/fail-probability"] = str(draw(st.sampled_from([0.3, 0.7, 1.0])))
        policies = []
        if draw(st.booleans()):
            policies.append(
                {"event": draw(st.sampled_from(EVENTS)), "action": draw(st.sampled_from(ACTIONS))}
            )
        tasks.append(
            {
                "name": f"t{t}",
                "replicas": replicas,
                "policies": policies,
                "template": {
                    "metadata": {"annotations": notes},
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "resources": {"requests": {"cpu": str(draw(st.integers(1, 3)))}},
                            }
                        ],
                        "priority": draw(st.sampled_from([0, 10])),
                    },
                },
            }
        )
    total = sum(task["replicas"] for task in tasks)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": f"j{index}",
            "annotations": {"berth.io/submit-time": str(draw(st.integers(0, 200)))},
        },
        "spec": {
            "minAvailable": draw(st.integers(1, total)),
            "maxRetry": draw(st.integers(1, 3)),
            "tasks": tasks,
        },
    }


@st.composite
def scenarios(draw: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    node_count = draw(st.integers(1, 3))
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "20"}},
        }
        for i in range(node_count)
    ]
    count = draw(st.integers(1, 4))
    docs += [draw(jobs(i)) for i in range(count)]
    for k in range(draw(st.integers(0, 2))):
        docs.append(
            {
                "apiVersion": "bus.volcano.sh/v1alpha1",
                "kind": "Command",
                "metadata": {
                    "name": f"c{k}",
                    "annotations": {"berth.io/submit-time": str(draw(st.integers(0, 400)))},
                },
                "action": draw(st.sampled_from(["AbortJob", "ResumeJob", "TerminateJob"])),
                "target": {"kind": "Job", "name": f"j{draw(st.integers(0, count - 1))}"},
            }
        )
    config = dict(draw(st.sampled_from(CONFIGS)))
    if draw(st.booleans()):
        failure = {"node": "n0", "at": draw(st.integers(0, 300)), "recoverAfter": 100}
        config["simulation"] = {"nodeFailures": [failure]}
    return docs, config


def simulate(docs: list[dict[str, Any]], raw_config: dict[str, Any], seed: int, audit: list):
    manifests = parse_documents(docs, "prop")
    cross_check(manifests)
    assert not manifests.errors, manifests.errors
    config = parse_config(raw_config, "prop")
    simulation = Simulation(
        manifests,
        config,
        seed=seed,
        sim_config=SimConfig.from_raw(config.simulation, "prop"),
    )
    audited(simulation.scheduler, audit)
    return simulation, simulation.run()


def audited(scheduler: Scheduler, audit: list) -> None:
    """After every session: jobs that got binds hold at least their minimum, and no node is
    over its allocatable."""
    original = scheduler.run_session

    def run_session(now: float):
        binds = original(now)
        state = scheduler.state
        n = state.n
        if np.any(state.requested[:n] > state.allocatable[:n]):
            audit.append(f"t={now}: a node is over its allocatable")
        for key in {f"{b.pod.namespace}/{b.pod.group}" for b in binds}:
            job = scheduler.jobs[key]
            if job.active < job.group.min_member:
                audit.append(f"t={now}: {key} bound {job.active}/{job.group.min_member}")
        return binds

    scheduler.run_session = run_session  # type: ignore[method-assign]


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(scenario=scenarios(), seed=st.integers(0, 5))
@settings(max_examples=60, deadline=None)
def test_jobs_keep_their_invariants(scenario, seed):
    docs, config = scenario
    audit: list[str] = []
    simulation, result = simulate(docs, config, seed, audit)
    assert audit == []
    # every pod object ended in one phase; the ones still on nodes hold exactly what is requested
    names = [pod.key for pod in result.pods]
    assert len(names) == len(set(names))
    state = simulation.scheduler.state
    on_nodes = [p for p in result.pods if p.phase in (PodPhase.BOUND, PodPhase.RUNNING)]
    expected = np.zeros(state.width, dtype=np.int64)
    for pod in on_nodes:
        vector = state.request_vector(pod.requests)
        expected[: len(vector)] += vector
    np.testing.assert_array_equal(state.requested[: state.n].sum(axis=0), expected)
    for job in result.jobs:
        assert job.retries <= job.max_retry
        if job.phase == JobPhase.FAILED and job.retries == job.max_retry:
            assert "maxRetry" in job.conditions[-1][2]
        if job.phase in FINAL_JOB_PHASES:
            # a finished job leaves nothing behind on the nodes
            assert not [p for p in on_nodes if p.owner == job.key]
        for pod in result.pods:
            if pod.owner == job.key and pod.phase == PodPhase.DELETED:
                assert result.reasons[pod.ref].startswith("deleted by job controller")
    # the same seed, the same run
    _, again = simulate(docs, config, seed, [])
    assert [(p.key, p.phase, p.end_time) for p in again.pods] == [
        (p.key, p.phase, p.end_time) for p in result.pods
    ]
    assert [(j.phase, j.retries) for j in again.jobs] == [(j.phase, j.retries) for j in result.jobs]
