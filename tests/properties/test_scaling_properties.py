"""Properties of elastic jobs under a scaling policy, on random GPU clusters and workloads:
targets stay within each job's range, no node is ever over capacity, every elastic job
completes with its work done, and no pod is lost or left held back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import JobPhase, PodPhase
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation
from berth.sim.scaling import Scaler
from tests.builders import node_doc

from .generators import check_accounting

FINAL = (PodPhase.SUCCEEDED, PodPhase.EVICTED, PodPhase.DELETED)


def gpu_node(index: int, gpus: int) -> dict[str, Any]:
    return node_doc(f"n{index}", cpu="16", memory="64Gi", **{"nvidia.com/gpu": str(gpus)})


def container(gpus: int) -> list[dict[str, Any]]:
    return [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    nodes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    biggest = max(nodes)
    docs = [gpu_node(i, gpus) for i, gpus in enumerate(nodes)]
    for j in range(draw(st.integers(1, 4))):
        low = draw(st.integers(1, 3))
        high = draw(st.integers(low + 1, low + 4))
        docs.append({
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": f"e{j}", "annotations": {
                "berth.io/elastic": "true",
                "berth.io/duration": str(draw(st.integers(100, 3000))),
                "berth.io/submit-time": str(draw(st.integers(0, 2000))),
                "berth.io/throughput": draw(st.sampled_from(["linear", "amdahl:0.2", "linear:1"])),
            }},
            "spec": {"minAvailable": low, "tasks": [{
                "name": "worker", "replicas": high,
                "template": {"spec": {"containers": container(1)}},
            }]},
        })  # fmt: skip
    for p in range(draw(st.integers(0, 4))):
        docs.append({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"r{p}", "annotations": {
                "berth.io/duration": str(draw(st.integers(50, 2000))),
                "berth.io/submit-time": str(draw(st.integers(0, 2000))),
            }},
            "spec": {"containers": container(draw(st.integers(1, biggest)))},
        })  # fmt: skip
    scaling = {
        "policy": draw(st.sampled_from(["edl", "aryl"])),
        "interval": draw(st.sampled_from([30, 60, 300])),
        "maxLoadDesired": draw(st.sampled_from([0.8, 1.0])),
    }
    return docs, scaling, sum(nodes)


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@settings(max_examples=40, deadline=None)
@given(scenarios(), st.integers(0, 3))
def test_scaling_keeps_ranges_capacity_and_every_pod(scenario, seed) -> None:
    docs, scaling, total_gpus = scenario
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config({"simulation": {"scaling": scaling}}, "test")
    simulation = Simulation(
        manifests, config, seed=seed, sim_config=SimConfig.from_raw(config.simulation, "test")
    )
    scaler = simulation.scaler
    assert isinstance(scaler, Scaler)
    state = simulation.scheduler.state
    bind, apply = state.bind, scaler.holding.apply

    def checked_bind(*args, **kwargs):
        placement = bind(*args, **kwargs)
        assert (state.free[: state.n] >= 0).all(), "a node over capacity"
        return placement

    def checked_apply(key: str, target: int, minimum: int, first=()) -> bool:
        spec = simulation.agent.elastic.jobs[key].spec
        assert spec.min_workers <= target <= spec.max_workers, (key, target)
        return apply(key, target, minimum, first)

    state.bind = checked_bind  # type: ignore[method-assign]
    scaler.holding.apply = checked_apply  # type: ignore[method-assign]
    result = simulation.run()
    check_accounting(state)
    for job in result.jobs:
        if job.elastic is not None and job.elastic.min_workers <= total_gpus:
            assert job.phase == JobPhase.COMPLETED, (job.key, job.phase)
    # Every pod ended one way or another (the run went on until nothing was left to do),
    # except pods that can never fit anywhere.
    for pod in result.pods:
        assert pod.phase in FINAL or pod.ref in result.reasons, (pod.key, pod.phase)
    assert result.scaling is not None and result.scaling["pods_held_at_end"] == 0
