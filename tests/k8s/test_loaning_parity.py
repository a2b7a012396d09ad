"""Decision parity for capacity loaning under a scaling policy: one scenario
(tests/k8s/data/loaning-*) through ``berth simulate`` and through ``berth serve --loaning
--scaling edl|aryl`` on the real API server ends with the same nodes lent, the same node taken
back, the same pods on the same nodes, the same training pod evicted and the elastic job's
target of workers the same. Under edl the pods ask for cores; under aryl, which shares GPUs,
for a GPU each too (on the cluster the elastic job's remaining work is estimated from its
duration).

On the cluster, each later part of the workload (``berth.io/submit-time``) is created once
berth has settled with what came before: the training jobs once both idle inference nodes are
lent, the second inference pod once the jobs run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from berth.api.keys import SUBMIT_TIME_ANNOTATION
from berth.api.objects import PodPhase
from berth.controllers.scaling.config import ScalingConfig
from berth.framework.config_files import load_config
from berth.k8s.loaning import read_config
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import Cluster, fast_options, serving, settle, wait_for
from tests.k8s.test_parity import _documents

DATA = Path(__file__).parent / "data"
#: (cluster, workload, scheduler configuration) by scaling policy.
SCENARIOS = {
    "edl": ("loaning-cluster", "loaning-workload", "loaning-scheduler"),
    "aryl": ("loaning-gpu-cluster", "loaning-gpu-workload", "loaning-aryl-scheduler"),
}


def files(policy: str) -> tuple[Path, Path, Path]:
    cluster, workload, scheduler = SCENARIOS[policy]
    return DATA / f"{cluster}.yaml", DATA / f"{workload}.yaml", DATA / f"{scheduler}.yaml"


#: Simulated seconds: long after the second inference pod, long before any job ends.
UNTIL = 100.0


class Outcome(dict):
    """bound (pod → node), evicted (pods), lent (nodes lent, in order), reclaimed (nodes taken
    back, in order), target (the elastic job's workers)."""


def simulated(policy: str) -> Outcome:
    cluster, workload, scheduler = files(policy)
    inputs = load_inputs(InputSpec(cluster=str(cluster), workloads=(str(workload),)), scheduler)
    result = simulate(inputs, seed=0, until=UNTIL)
    assert result.loaning is not None
    bound = {
        pod.key: pod.bound_node
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND)
    }
    return Outcome(
        bound=bound,
        evicted={pod.key for pod in result.pods if pod.phase == PodPhase.EVICTED},
        lent=sorted(node for _, node in result.loaning.lends),
        reclaimed=[event.node for event in result.loaning.reclaims],
        target=sum(1 for key in bound if key.startswith("default/elastic-worker-")),
    )


def pools(cluster: Cluster) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Each node's pool label and taints, as the API has them."""
    return {
        n["metadata"]["name"]: (
            n["metadata"].get("labels", {}).get("berth.io/pool", ""),
            n.get("spec", {}).get("taints") or [],
        )
        for n in cluster.objects("Node")
    }


def served(cluster: Cluster, policy: str) -> Outcome:
    cluster_file, workload, scheduler = files(policy)
    docs: list[dict[str, Any]] = _documents(cluster_file) + _documents(workload)
    at = {
        id(d): float(d["metadata"].get("annotations", {}).get(SUBMIT_TIME_ANNOTATION, 0))
        for d in docs
    }
    cluster.add(*(d for d in docs if at[id(d)] == 0))
    config = load_config(scheduler)
    config.period = 0.02
    scaling = ScalingConfig.from_raw(config.simulation["scaling"], "-")
    options = fast_options(loaning=read_config(scheduler, config.period), scaling=scaling)
    with serving(cluster, config, options) as server, cluster.kubelet():
        wait_for(
            lambda: (
                sorted(n for n, (p, _) in pools(cluster).items() if p == "lent")
                == ["inf-b", "inf-c"]
            )
        )
        settle(server)
        cluster.add(*(d for d in docs if at[id(d)] == 20))
        wait_for(
            lambda: sum(1 for k in cluster.bindings() if "elastic-worker" in k) == 2, timeout=30
        )
        settle(server)
        cluster.add(*(d for d in docs if at[id(d)] == 40))
        wait_for(lambda: "default/chat-1" in cluster.bindings(), timeout=30)
        settle(server)
        loaning = server.loaning
        assert loaning is not None and server.scaling is not None
        # Every pool node carries the taint of its label.
        for name, (pool, taints) in pools(cluster).items():
            if pool:
                assert [t for t in taints if t["key"] == "berth.io/pool"] == [
                    {"key": "berth.io/pool", "value": pool, "effect": "NoSchedule"}
                ], name
        return Outcome(
            bound=cluster.bindings(),
            evicted=set(cluster.api.evictions),
            lent=sorted(node for _, node in loaning.lends),
            reclaimed=[node for _, node, _ in loaning.reclaims],
            target=server.scaling.holding.targets["default/elastic"],
        )


@pytest.mark.parametrize("policy", sorted(SCENARIOS))
def test_simulator_and_server_lend_and_reclaim_alike(cluster: Cluster, policy: str):
    expected = simulated(policy)
    assert served(cluster, policy) == expected


@pytest.mark.parametrize("policy", sorted(SCENARIOS))
def test_the_scenario_lends_both_idle_nodes_and_takes_back_the_free_one(policy: str):
    """Guards the scenario: both idle nodes are lent, the one holding only an elastic
    worker above its minimum (cost 0) is taken back before the rigid pod's (cost 1), and the
    elastic job is cut to its minimum."""
    outcome = simulated(policy)
    assert outcome["lent"] == ["inf-b", "inf-c"]
    assert outcome["reclaimed"] == ["inf-c"]
    assert outcome["evicted"] == {"default/elastic-worker-0"}
    assert outcome["bound"]["default/chat-1"] == "inf-c"
    assert outcome["bound"]["default/rigid"] == "inf-b"
    assert outcome["target"] == 1
