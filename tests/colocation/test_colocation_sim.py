"""Colocation in the simulator: BE pods placed on batch resources, evicted on memory pressure
(lowest priority first) and on cpu starvation, and given back to be placed again."""

from __future__ import annotations

from typing import Any

from berth.api.manifest import cross_check, parse_documents
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, SimResult, Simulation

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n0"},
    "status": {"allocatable": {"cpu": "10", "memory": "10Gi", "pods": "110"}},
}


def online(curve: str) -> dict[str, Any]:
    """An LS pod of 4 cores and 4Gi whose usage follows ``curve``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "labels": {"koordinator.sh/qosClass": "LS"},
            "annotations": {"berth.io/usage-curve": curve},
        },
        "spec": {
            "priority": 9000,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "4", "memory": "4Gi"}}}],
        },
    }


def be(name: str, priority: int, cpu: str, memory: str, at: float = 120) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"koordinator.sh/qosClass": "BE"},
            "annotations": {"berth.io/submit-time": str(at), "berth.io/utilization": "1"},
        },
        "spec": {
            "priority": priority,
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "requests": {
                            "kubernetes.io/batch-cpu": cpu,
                            "kubernetes.io/batch-memory": memory,
                        }
                    },
                }
            ],
        },
    }


def run(docs: list[dict[str, Any]], colocation: dict[str, Any], until: float) -> SimResult:
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config({"simulation": {"colocation": colocation}}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    return Simulation(manifests, config, sim_config=sim, until=until).run()


def phases(result: SimResult) -> dict[str, str]:
    return {p.name: str(p.phase) for p in result.pods if p.name != "web"}


def test_memory_pressure_evicts_lowest_priority_first_down_to_the_lower_mark() -> None:
    # Online memory goes from 0.4Gi to 4Gi at t=3600; with three BE pods of 2Gi the node
    # reaches 100% (>= 70%): 3.2Gi must go (down to 68%): be-c (priority 5000), then be-a
    # (5100); be-b (5200) stays. Their replacements wait: 6.5Gi - 4Gi - 2Gi leaves 0.5Gi.
    docs = [
        NODE,
        online("0=0.1,3000=0.1,3600=1"),
        be("be-a", 5100, "1000", "2Gi"),
        be("be-b", 5200, "1000", "2Gi"),
        be("be-c", 5000, "1000", "2Gi"),
    ]
    result = run(docs, {}, until=7200)
    assert phases(result) == {
        "be-a": "Evicted",
        "be-b": "Running",
        "be-c": "Evicted",
        "be-c-retry1": "Pending",
        "be-a-retry1": "Pending",
    }
    stats = result.colocation
    assert stats is not None
    assert stats["be_evictions"] == {"memory": 2, "cpu": 0} and stats["be_resubmitted"] == 2
    assert result.reasons["default/be-c"].startswith("evicted (colocation, memory)")


def test_without_pressure_be_pods_run_on_what_online_pods_leave() -> None:
    docs = [NODE, online("0=0.1"), *(be(f"be-{i}", 5000, "1000", "1Gi") for i in range(8))]
    result = run(docs, {}, until=600)
    # batch cpu = 10 × 60% - 0.4 = 5.6 cores: five 1-core BE pods; none evicted.
    running = [n for n, phase in phases(result).items() if phase == "Running"]
    assert len(running) == 5
    assert result.colocation["be_evictions"] == {"memory": 0, "cpu": 0}


def test_cpu_starvation_evicts_until_satisfaction_reaches_the_upper_mark() -> None:
    # Five 1-core BE pods; online cpu rises to 4 cores at t=3600: the BE limit becomes
    # 10 × 65% - 4 = 2.5 cores for 5 requested (50% < 70%); evicting the three lowest
    # priorities leaves 2 cores requested (125% >= 90%).
    docs = [
        NODE,
        online("0=0.1/0.1,3599=0.1/0.1,3600=1/0.1"),
        *(be(f"be-{i}", 5000 + i, "1000", "512Mi") for i in range(5)),
    ]
    colocation = {
        "cpuEvictBESatisfactionLowerPercent": 70,
        "cpuEvictBESatisfactionUpperPercent": 90,
    }
    result = run(docs, colocation, until=4000)
    got = phases(result)
    assert [got[f"be-{i}"] for i in range(5)] == ["Evicted"] * 3 + ["Running"] * 2
    assert result.colocation["be_evictions"] == {"memory": 0, "cpu": 3}
    # Before the rise the BE pods had all the cpu they wanted; after it, 2.5 of 2 cores.
    assert result.colocation["be_cpu_satisfaction"] == 1.0


def test_suppression_caps_be_cpu_and_utilization_counts_it() -> None:
    # Two BE pods asking 1 core each but using 3 (bursting): 6 cores wanted, the online pod
    # uses 4, so BE gets 10 × 65% - 4 = 2.5 cores: node cpu usage 6.5 cores (65%).
    docs = [NODE, online("0=1/0.1")]
    for name in ("be-0", "be-1"):
        pod = be(name, 5000, "1000", "512Mi", at=0)
        pod["metadata"]["annotations"]["berth.io/usage-curve"] = "0=3/1"
        docs.append(pod)
    # batch cpu is 6 - 4 = 2 cores once the online pod is reported (it counts at its 4-core
    # request before that: 2 cores too), so both fit.
    result = run(docs, {}, until=3600)
    stats = result.colocation
    assert phases(result) == {"be-0": "Running", "be-1": "Running"}
    assert stats["cpu_utilization_node_p99"] == 0.65
    assert 0.4 < stats["be_cpu_satisfaction"] < 2.5 / 6 + 0.01
