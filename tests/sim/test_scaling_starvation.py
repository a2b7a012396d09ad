"""The starvation guard, simulated: two elastic jobs fill 4 servers of 4 GPUs, and a gang of
two whole-server pods arrives at t=1000, beside a stream of 1-GPU pods. Without the guard the
gang never starts (the GPUs a policy frees are spread over servers and refilled); with it,
the gang starts in the first round after it has waited ``starvationWait``, the elastic jobs
keep their minimum, and a run where nothing starves is the same with the guard on or off."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import PodPhase
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation
from tests.builders import elastic_job_doc, node_doc

WORKER = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
WAIT = 1800
GANG_AT = 1000


def elastic(name: str, at: int) -> dict[str, Any]:
    annotations = {
        "berth.io/submit-time": str(at),
        "berth.io/duration": "400000",
        "berth.io/throughput": "linear:1",
    }
    return elastic_job_doc(WORKER, replicas=8, min_available=2, name=name, annotations=annotations)


def gang() -> dict[str, Any]:
    doc = elastic_job_doc(
        {**WORKER, "nvidia.com/gpu": "4"},
        replicas=2,
        min_available=2,
        name="wide",
        annotations={"berth.io/submit-time": str(GANG_AT)},
    )
    del doc["metadata"]["annotations"]["berth.io/elastic"]
    return doc


def small(i: int) -> dict[str, Any]:
    """A 1-GPU pod of 500 s every 600 s: it takes whatever hole a cut leaves."""
    annotations = {"berth.io/submit-time": str(100 + 600 * i), "berth.io/duration": "500"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{i}", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "resources": {"requests": WORKER}}]},
    }


def simulate(policy: str, wait: float | str, stream: bool, with_gang: bool = True):
    docs = [
        node_doc(f"n{i}", cpu="32", memory="128Gi", **{"nvidia.com/gpu": "4"}) for i in range(4)
    ]
    docs += [elastic("e0", 0), elastic("e1", 50)]
    docs += [gang()] if with_gang else []
    docs += [small(i) for i in range(30)] if stream else []
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    scaling = {"policy": policy, "interval": 60, "starvationWait": wait}
    config = parse_config({"simulation": {"startLatency": 0, "scaling": scaling}}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    return Simulation(manifests, config, sim_config=sim, until=20000).run()


def gang_start(result) -> float | None:
    starts = [p.start_time for p in result.pods if p.owner == "default/wide"]
    return max(starts) if len(starts) == 2 and None not in starts else None


@pytest.mark.parametrize("policy", ["aryl", "edl"])
def test_a_starving_gang_gets_whole_servers(policy) -> None:
    assert gang_start(simulate(policy, "off", True)) is None
    result = simulate(policy, WAIT, True)
    start = gang_start(result)
    # The first round after the gang has waited starvationWait frees the servers; rounds run
    # when what training sees changes, here at least every 600 s (a small pod comes or goes).
    assert start is not None and GANG_AT + WAIT <= start <= GANG_AT + WAIT + 600
    assert result.scaling["workers_removed"] >= 8
    for key in ("default/e0", "default/e1"):
        running = [p for p in result.pods if p.owner == key and p.phase == PodPhase.RUNNING]
        assert len(running) >= 2  # never below the minimum


@pytest.mark.parametrize("policy", ["aryl", "edl"])
def test_without_a_starving_job_the_guard_changes_nothing(policy) -> None:
    off = simulate(policy, "off", True, with_gang=False)
    on = simulate(policy, WAIT, True, with_gang=False)
    assert on.scaling == off.scaling
    assert [(p.name, p.start_time, p.end_time, p.bound_node) for p in on.pods] == [
        (p.name, p.start_time, p.end_time, p.bound_node) for p in off.pods
    ]
