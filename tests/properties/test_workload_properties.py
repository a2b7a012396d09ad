"""Properties of rollouts in the simulator, over random workloads, strategies and changes:

- no pod is lost: every pod a controller creates ends Running (the ones it keeps), or Deleted,
  Evicted or Failed with the reason it ended so;
- a rolling update never has more of the desired replicas unavailable at once than its
  ``maxUnavailable`` allows (the cluster has room for every surge pod, as upstream assumes);
- the rollout completes: the desired replicas run, on the new revision beyond the partition.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import PodPhase
from berth.api.workloads import scaled
from berth.controllers.cloneset_sync import partition_count
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation

KRUISE = "apps.kruise.io/v1alpha1"
ROLLOUT_AT = 300.0


def counts(upper: int) -> st.SearchStrategy[int | str]:
    return st.one_of(st.integers(0, upper), st.sampled_from(["10%", "25%", "50%", "100%"]))


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["Deployment", "CloneSet", "StatefulSet", "AdvancedStatefulSet"]))
    replicas = draw(st.integers(1, 8))
    spec: dict[str, Any] = {"replicas": replicas}
    change = draw(st.sampled_from(["image", "requests"]))
    if kind == "Deployment":
        surge, unavailable = draw(counts(3)), draw(counts(3))
        if scaled(surge, 100, True) == 0 and scaled(unavailable, 100, True) == 0:
            unavailable = 1
        spec["strategy"] = {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    elif kind == "CloneSet":
        kind_type = draw(st.sampled_from(["ReCreate", "InPlaceIfPossible", "InPlaceOnly"]))
        strategy: dict[str, Any] = {"type": kind_type, "maxUnavailable": draw(counts(3))}
        if kind_type != "InPlaceOnly":
            strategy["maxSurge"] = draw(counts(2))
        else:
            change = "image"
        if draw(st.booleans()):
            strategy["partition"] = draw(counts(replicas))
        if (
            scaled(strategy["maxUnavailable"], replicas, True) < 1
            and scaled(strategy.get("maxSurge", 0), replicas, True) < 1
        ):
            strategy["maxUnavailable"] = 1
        spec["updateStrategy"] = strategy
    else:
        advanced = kind == "AdvancedStatefulSet"
        parallel = draw(st.booleans())
        rolling: dict[str, Any] = {"partition": draw(st.integers(0, replicas))}
        if advanced:
            rolling["podUpdatePolicy"] = draw(st.sampled_from(["ReCreate", "InPlaceIfPossible"]))
            if parallel:
                rolling["maxUnavailable"] = draw(st.integers(1, 3))
        spec["podManagementPolicy"] = "Parallel" if parallel else "OrderedReady"
        spec["updateStrategy"] = {"rollingUpdate": rolling}
    return {
        "kind": kind,
        "spec": spec,
        "change": change,
        "latency": draw(st.sampled_from([1, 5])),
        "restart": draw(st.sampled_from([1, 3, 20])),
    }


def documents(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    kind = scenario["kind"]
    api, kind_name = {
        "Deployment": ("apps/v1", "Deployment"),
        "CloneSet": (KRUISE, "CloneSet"),
        "StatefulSet": ("apps/v1", "StatefulSet"),
        "AdvancedStatefulSet": ("apps.kruise.io/v1beta1", "StatefulSet"),
    }[kind]

    def version(at: float, image: str, cpu: str) -> dict[str, Any]:
        container = {"name": "app", "image": image, "resources": {"requests": {"cpu": cpu}}}
        return {
            "apiVersion": api,
            "kind": kind_name,
            "metadata": {"name": "w", "annotations": {"berth.io/submit-time": str(at)}},
            "spec": {
                **scenario["spec"],
                "selector": {"matchLabels": {"app": "w"}},
                "template": {
                    "metadata": {"labels": {"app": "w"}},
                    "spec": {"containers": [container]},
                },
            },
        }

    changed = ("app:2", "1") if scenario["change"] == "image" else ("app:1", "2")
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }
        for i in range(4)
    ]
    return [*nodes, version(0, "app:1", "1"), version(ROLLOUT_AT, *changed)]


def run(scenario: dict[str, Any]):
    manifests = parse_documents(documents(scenario), "property")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    simulation = {"startLatency": scenario["latency"], "restartLatency": scenario["restart"]}
    config = parse_config({"simulation": simulation}, "property")
    sim_config = SimConfig.from_raw(config.simulation, "property")
    return Simulation(manifests, config, sim_config=sim_config, until=3000).run()


@given(scenario=scenarios())
@settings(max_examples=100, deadline=None)
def test_rollouts_lose_no_pod_and_respect_max_unavailable(scenario: dict[str, Any]) -> None:
    result = run(scenario)
    (workload,) = result.workloads
    replicas = scenario["spec"]["replicas"]
    for pod in result.pods:
        assert pod.phase in (PodPhase.RUNNING, PodPhase.DELETED, PodPhase.EVICTED, PodPhase.FAILED)
        if pod.phase != PodPhase.RUNNING:
            assert result.reasons.get(pod.ref), pod.name
    running = [p for p in result.pods if p.phase == PodPhase.RUNNING]
    assert len(running) == replicas
    (rollout,) = workload.status.rollouts
    assert rollout.end is not None
    if rollout.max_unavailable is not None:
        assert rollout.peak_unavailable <= rollout.max_unavailable
    assert workload.status.available == replicas
    new = [p for p in running if p.containers == (("app", "app:2"),) or p.requests["cpu"] == 2000]
    assert len(new) == replicas - kept(scenario)


def kept(scenario: dict[str, Any]) -> int:
    """Pods the partition keeps on the old revision."""
    spec = scenario["spec"]
    if scenario["kind"] == "CloneSet":
        return partition_count(spec["updateStrategy"].get("partition"), spec["replicas"])
    if scenario["kind"] == "Deployment":
        return 0
    return min(spec["updateStrategy"]["rollingUpdate"]["partition"], spec["replicas"])
