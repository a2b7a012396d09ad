"""Colocation on random clusters: batch resources never overcommitted at placement, every
evicted BE pod comes back, and the pod accounting stays whole."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import Manifests
from berth.api.objects import Node, Pod, PodPhase
from berth.api.qos import BATCH_CPU, BATCH_MEMORY, QOS_LABEL
from berth.api.usage import UsageProfile
from berth.framework.config import parse_config
from berth.resources import GIB
from berth.sim.engine import SimConfig, Simulation


@st.composite
def scenarios(draw: Any) -> tuple[Manifests, dict[str, Any]]:
    nodes = [
        Node(f"n{i}", allocatable={"cpu": 8000, "memory": 8 * GIB, "pods": 110})
        for i in range(draw(st.integers(1, 3)))
    ]
    pods = []
    for i in range(draw(st.integers(1, 4))):
        low, high = draw(st.floats(0.05, 0.5)), draw(st.floats(0.5, 1.5))
        profile = UsageProfile((0.0, 1800.0), (low, high), (low, high), 3600.0)
        pods.append(
            Pod(
                f"web-{i}",
                labels={QOS_LABEL: "LS"},
                requests={"cpu": 2000, "memory": 2 * GIB, "pods": 1},
                priority=9000,
                usage_profile=profile,
            )
        )
    for i in range(draw(st.integers(1, 12))):
        pods.append(
            Pod(
                f"be-{i}",
                labels={QOS_LABEL: "BE"},
                requests={
                    BATCH_CPU: draw(st.integers(1, 4)) * 500,
                    BATCH_MEMORY: draw(st.integers(1, 4)) * GIB // 2,
                    "pods": 1,
                },
                priority=draw(st.integers(5000, 5010)),
                submit_time=float(draw(st.integers(0, 3000))),
                duration=float(draw(st.integers(60, 4000))),
                utilization=draw(st.floats(0.2, 1.0)),
            )
        )
    colocation: dict[str, Any] = {"metricReportIntervalSeconds": draw(st.sampled_from([30, 60]))}
    if draw(st.booleans()):
        colocation |= {
            "cpuEvictBESatisfactionLowerPercent": 60,
            "cpuEvictBESatisfactionUpperPercent": 80,
        }
    return Manifests(nodes=nodes, pods=pods), colocation


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@settings(max_examples=40, deadline=None)
@given(scenarios(), st.integers(0, 3))
def test_colocation_runs_keep_their_promises(scenario, seed) -> None:
    manifests, colocation = scenario
    config = parse_config({"simulation": {"colocation": colocation}}, "test")
    simulation = Simulation(
        manifests,
        config,
        seed=seed,
        until=7200,
        sim_config=SimConfig.from_raw(config.simulation, "test"),
    )
    state = simulation.scheduler.state
    violations: list[str] = []
    original = state.bind

    def bind(pod: Pod, row: int, vector: np.ndarray | None = None, devices: Any = None) -> Any:
        vec = state.request_vector(pod.requests) if vector is None else vector
        over = np.flatnonzero(state.free[row, : len(vec)] < vec)
        for col in over:
            violations.append(f"{pod.name} on {state.names[row]}: {state.axis.names[col]}")
        return original(pod, row, vector, devices)

    state.bind = bind  # type: ignore[method-assign]
    result = simulation.run()
    assert not violations
    phases = Counter(p.phase for p in result.pods)
    assert sum(phases.values()) == len(result.pods)
    online = [p for p in result.pods if p.name.startswith("web")]
    assert all(p.phase != PodPhase.EVICTED for p in online)
    evicted = [p for p in result.pods if p.phase == PodPhase.EVICTED]
    names = {p.name for p in result.pods}
    stats = result.colocation
    assert stats is not None
    assert stats["be_resubmitted"] == len(evicted) == sum(stats["be_evictions"].values())
    for pod in evicted:
        base, _, count = pod.name.partition("-retry")
        following = f"{base}-retry{int(count or 0) + 1}"
        assert following in names, f"{pod.name} evicted and not submitted again"
