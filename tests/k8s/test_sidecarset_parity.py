"""Decision parity for OpenKruise's SidecarSet: one scenario (tests/k8s/data/sidecarset-parity-*)
through ``berth simulate`` and through ``berth serve --kruise`` with its pod webhook on the real
API server ends with the same pods, with the same containers and images, on the same nodes (the
sidecars' requests count where they land: one pod waits for room in both), with the same
restarts after the sidecar's in-place upgrade.

The scenario's objects are applied on the cluster in the order of their
``berth.io/submit-time`` (in name order at one time), each step once berth has settled after
the one before; a later version of a SidecarSet replaces its spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from berth.api.keys import SUBMIT_TIME_ANNOTATION
from berth.api.objects import PodPhase
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import Cluster, settle, wait_for
from tests.k8s.test_kruise_parity import _settled_pods
from tests.k8s.test_parity import _documents
from tests.k8s.test_sidecarset import serving_sidecars, sidecars, status_of  # noqa: F401

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "sidecarset-parity-cluster.yaml"
WORKLOAD = DATA / "sidecarset-parity-workload.yaml"

#: pod key → (node, container name → image, restarts); a pod still waiting has node "".
Outcome = dict[str, tuple[str, dict[str, str], int]]


def simulated() -> Outcome:
    inputs = load_inputs(InputSpec(cluster=str(CLUSTER), workloads=(str(WORKLOAD),)), None)
    result = simulate(inputs, seed=0)
    active = (PodPhase.PENDING, PodPhase.BOUND, PodPhase.RUNNING)
    return {
        pod.key: (pod.bound_node, dict(pod.containers), pod.restarts)
        for pod in result.pods
        if pod.phase in active
    }


def _outcome(cluster: Cluster) -> Outcome:
    outcome = {}
    for pod in cluster.objects("Pod"):
        meta, spec = pod["metadata"], pod["spec"]
        if meta.get("deletionTimestamp"):
            continue
        statuses = pod.get("status", {}).get("containerStatuses") or []
        outcome[f"{meta['namespace']}/{meta['name']}"] = (
            spec.get("nodeName") or "",
            {c["name"]: c["image"] for c in spec["containers"]},
            sum(int(c.get("restartCount") or 0) for c in statuses),
        )
    return outcome


def _time(doc: dict[str, Any]) -> float:
    return float((doc["metadata"].get("annotations") or {}).get(SUBMIT_TIME_ANNOTATION, 0))


def _upgraded(cluster: Cluster, name: str) -> bool:
    (sidecar_set,) = [s for s in cluster.objects("SidecarSet") if s["metadata"]["name"] == name]
    status = status_of(cluster, name)
    return status.get("observedGeneration") == sidecar_set["metadata"]["generation"] and status.get(
        "updatedReadyPods"
    ) == status.get("matchedPods")


def served(cluster: Cluster) -> Outcome:
    docs = _documents(CLUSTER) + _documents(WORKLOAD)
    docs.sort(key=lambda d: (_time(d), d["metadata"]["name"]))
    cluster.add(*(d for d in docs if _time(d) == 0))
    with serving_sidecars(cluster) as server, cluster.kubelet():
        known = {d["metadata"]["name"] for d in docs if _time(d) == 0}
        for doc in (d for d in docs if _time(d) > 0):
            name = doc["metadata"]["name"]
            if doc["kind"] == "SidecarSet" and name in known:
                cluster.patch("SidecarSet", "", name, {"spec": doc["spec"]})
                wait_for(lambda name=name: _upgraded(cluster, name), timeout=40)
            else:
                cluster.add(doc)
                known.add(name)
            settle(server)
            wait_for(lambda: _settled_pods(cluster), timeout=30)
        settle(server)
    return _outcome(cluster)


def test_simulator_and_server_inject_and_upgrade_sidecars_alike(sidecars: Cluster):  # noqa: F811
    expected = simulated()
    assert served(sidecars) == expected


def test_the_scenario_injects_upgrades_and_leaves_a_pod_waiting():
    """Guards the scenario: every web pod has both sidecars, upgraded in place; the paused
    set injects nothing; a plain pod's sidecar makes it too big for the room left; a pod made
    after the upgrade gets the new image."""
    outcome = simulated()
    web = {k: v for k, v in outcome.items() if k.startswith("default/web-")}
    assert len(web) == 3
    for node, containers, restarts in web.values():
        assert node and restarts == 1
        assert containers == {"main": "nginx:1.25", "log": "log:2", "proxy": "proxy:1"}
    assert outcome["default/solo"] == ("", {"c": "busybox", "proxy": "proxy:1"}, 0)
    assert outcome["default/other"][1] == {"c": "busybox"}
    assert outcome["default/late"] == ("", {"c": "busybox", "log": "log:2"}, 0)
