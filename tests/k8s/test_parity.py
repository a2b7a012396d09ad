"""Decision parity: the same scenario through ``berth simulate`` and through ``berth serve``
against a real API server ends with the same pod → node bindings and the same evictions, for the
default configuration and for every registered plugin added to a configuration that also
preempts and reclaims (so a plugin landing later is covered without touching this file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.api.objects import PodPhase
from berth.framework.config import DEFAULT_CONFIG
from berth.framework.config_files import load_config
from berth.framework.registry import PLUGINS
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import Cluster, fast_options, serving, settle

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "parity-cluster.yaml"
WORKLOAD = DATA / "parity-workload.yaml"
LATER = "berth.io/submit-time"


def _configuration(plugin: str | None) -> dict[str, Any]:
    if plugin is None:
        return DEFAULT_CONFIG
    tiers = [{"plugins": [dict(p) for p in tier["plugins"]]} for tier in DEFAULT_CONFIG["tiers"]]
    if all(p["name"] != plugin for tier in tiers for p in tier["plugins"]):
        tiers[0]["plugins"].append({"name": plugin})
    return {"actions": "enqueue, allocate, preempt, reclaim, backfill", "tiers": tiers}


CONFIGURATIONS = [None, *sorted(PLUGINS)]


def simulated(config_file: Path) -> tuple[dict[str, str], set[str]]:
    """What ``berth simulate`` decides (its runner, without writing the report)."""
    inputs = load_inputs(InputSpec(cluster=str(CLUSTER), workloads=(str(WORKLOAD),)), config_file)
    result = simulate(inputs, seed=0)
    bound = {
        pod.key: pod.bound_node
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND)
    }
    return bound, {pod.key for pod in result.pods if pod.phase == PodPhase.EVICTED}


def _documents(path: Path) -> list[dict[str, Any]]:
    docs = []
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc["kind"] == "List":
            docs.extend(doc["items"])
        elif doc:
            docs.append(doc)
    return docs


def served(cluster: Cluster, config_file: Path) -> tuple[dict[str, str], set[str]]:
    docs = _documents(CLUSTER) + _documents(WORKLOAD)
    later = [d for d in docs if LATER in d.get("metadata", {}).get("annotations", {})]
    first = [d for d in docs if d not in later]
    cluster.add(*first)
    config = load_config(config_file)
    config.period = 0.02
    with serving(cluster, config, fast_options()) as server, cluster.kubelet():
        settle(server)
        cluster.add(*later)
        settle(server)
    return cluster.bindings(), set(cluster.api.evictions)


@pytest.mark.parametrize("plugin", CONFIGURATIONS, ids=lambda p: p or "default")
def test_simulator_and_server_decide_alike(cluster: Cluster, tmp_path: Path, plugin: str | None):
    config_file = tmp_path / "scheduler.yaml"
    config_file.write_text(yaml.safe_dump(_configuration(plugin)))
    expected_bound, expected_evicted = simulated(config_file)
    bound, evicted = served(cluster, config_file)
    assert bound == expected_bound
    assert evicted == expected_evicted
    assert expected_bound  # the scenario places pods under every configuration


def test_the_scenario_preempts_when_preemption_is_configured(tmp_path: Path):
    """Guards the scenario itself: with preempt on, the urgent pod must evict batch pods, so
    the parity of evictions above is a real check."""
    config_file = tmp_path / "scheduler.yaml"
    config_file.write_text(yaml.safe_dump(_configuration("priority")))
    bound, evicted = simulated(config_file)
    assert "default/urgent" in bound
    assert evicted and all(key.startswith("default/batch-") for key in evicted)
