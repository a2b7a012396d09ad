"""Elastic jobs under a scaling policy, simulated: a rigid job that arrives while an elastic
job holds the whole cluster starts within a round under edl and aryl (and only when the
elastic job ends without one), workers above a target are held back and say so, and no pod is
lost."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import JobPhase, PodPhase
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation
from tests.builders import elastic_job_doc, node_doc


def gpu_node(name: str) -> dict[str, Any]:
    return node_doc(name, cpu="8", memory="32Gi", **{"nvidia.com/gpu": "1"})


WORKER = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}


def elastic_job(duration: int = 4000) -> dict[str, Any]:
    # duration at its 4 workers
    annotations = {"berth.io/duration": str(duration), "berth.io/throughput": "linear:1"}
    return elastic_job_doc(WORKER, annotations=annotations)


def rigid_pod(at: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "rigid",
            "annotations": {"berth.io/submit-time": str(at), "berth.io/duration": "100"},
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": WORKER}}]},
    }


def simulate(policy: str | None, until: float | None = None):
    docs = [gpu_node(f"n{i}") for i in range(4)] + [elastic_job(), rigid_pod(500)]
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    raw: dict[str, Any] = {"startLatency": 0}
    if policy is not None:
        # edl at its default bound of 0.97 would leave one of the 4 GPUs free for the pod.
        raw["scaling"] = {"policy": policy, "interval": 60, "maxLoadDesired": 1.0}
    config = parse_config({"simulation": raw}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    return Simulation(manifests, config, sim_config=sim, until=until).run()


def job_end(result) -> float:
    return max(p.end_time for p in result.pods if p.owner == "default/train")


def by_name(result, name: str):
    return next(p for p in result.pods if p.name == name)


def test_without_a_policy_the_rigid_job_waits_for_the_elastic_one_to_end() -> None:
    result = simulate(None)
    assert by_name(result, "rigid").start_time >= job_end(result) - 1
    assert result.scaling is None


@pytest.mark.parametrize("policy", ["edl", "aryl"])
def test_a_policy_takes_an_extra_worker_for_a_waiting_job(policy) -> None:
    """The elastic job grows to all 4 GPUs; at t=500 a 1-GPU pod arrives. The next round
    (t=540) cuts the job to 3 workers: one worker is taken away, its replacement is held back,
    the pod starts, and when it ends the job grows back to 4."""
    result = simulate(policy)
    (job,) = result.jobs
    rigid = by_name(result, "rigid")
    assert 500 < rigid.start_time <= 560
    assert job.phase == JobPhase.COMPLETED
    workers = [p for p in result.pods if p.owner == job.key]
    removed = [p for p in workers if p.phase == PodPhase.EVICTED]
    assert len(removed) == 1
    assert result.reasons[removed[0].ref] == (
        f"scaled in by the {policy} scaling policy to 3 workers"
    )
    assert sum(p.phase == PodPhase.SUCCEEDED for p in workers) == 4
    assert result.scaling["policy"] == policy
    assert result.scaling["workers_removed"] == 1
    assert result.scaling["targets_cut"] >= 1 and result.scaling["targets_raised"] >= 2
    # Every pod ended one way or another: none left pending, none lost.
    assert {p.phase for p in result.pods} <= {
        PodPhase.SUCCEEDED,
        PodPhase.EVICTED,
        PodPhase.DELETED,
    }


@pytest.mark.parametrize("policy", ["edl", "aryl"])
def test_a_worker_above_the_target_is_held_back_and_says_so(policy) -> None:
    """After the cut at t=540, the replacement of the worker taken away waits, held back by
    the policy, with a reason naming it."""
    result = simulate(policy, until=550)
    pending = [p for p in result.pods if p.phase == PodPhase.PENDING]
    assert [p.owner for p in pending] == ["default/train"]
    assert result.reasons[pending[0].ref] == (
        f"held back by the {policy} scaling policy (target 3 workers)"
    )
    assert result.scaling["pods_held_at_end"] == 1


def test_edl_keeps_the_load_under_its_bound() -> None:
    """At the default maxLoadDesired of 0.97, 4 workers would load 4 of 4 GPUs: edl grows the
    job to 3, so the pod that arrives at t=500 starts at once. With it the load is 4 of 4
    again, above the bound: the next round takes a worker away, and the one after the pod
    ends gives it back."""
    docs = [gpu_node(f"n{i}") for i in range(4)] + [elastic_job(), rigid_pod(500)]
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    config = parse_config({"simulation": {"startLatency": 0, "scaling": {"policy": "edl"}}}, "t")
    sim = SimConfig.from_raw(config.simulation, "t")
    result = Simulation(manifests, config, sim_config=sim).run()
    assert by_name(result, "rigid").start_time == 500
    workers = [p for p in result.pods if p.owner == "default/train" and p.start_time is not None]
    edges = sorted([(p.start_time, 1) for p in workers] + [(p.end_time, -1) for p in workers])
    running, most = 0, 0
    for _, step in edges:
        running += step
        most = max(most, running)
    assert most == 3
    (removed,) = [p for p in workers if p.phase == PodPhase.EVICTED]
    assert (removed.name, removed.end_time) == ("train-worker-2", 540)
    assert result.reasons[removed.ref] == "scaled in by the edl scaling policy to 2 workers"
    assert min(p.start_time for p in workers if p.start_time > 1) == 600


@pytest.mark.parametrize("policy", ["edl", "aryl"])
def test_the_job_ends_sooner_than_at_its_minimum(policy) -> None:
    """4,000 s at 4 workers is 16,000 s of one worker's work; at its minimum of 2 it would
    take 8,000 s. Grown at the first round, it ends well before."""
    assert job_end(simulate(policy)) < 6000
