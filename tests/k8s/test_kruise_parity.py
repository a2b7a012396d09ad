"""Decision parity for OpenKruise's CloneSet: one scenario (tests/k8s/data/kruise-parity-*)
through ``berth simulate`` and through ``berth serve --kruise`` on the real API server ends
with the same pods (the controller names them alike in both), on the same nodes, running the
same images, with the pods updated in place still the pods first made.

The scenario's later versions of the CloneSet (``berth.io/submit-time``) are applied on the
cluster one by one, each once berth has settled after the one before; the simulator's times
are far enough apart for each step to be over before the next."""

from __future__ import annotations

from pathlib import Path

import yaml

from berth.api.keys import SUBMIT_TIME_ANNOTATION
from berth.api.objects import PodPhase
from berth.api.workloads import CLONE_SET
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import Cluster, config, fast_options, serving, settle, wait_for
from tests.k8s.test_parity import _documents

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "kruise-parity-cluster.yaml"
WORKLOAD = DATA / "kruise-parity-workload.yaml"

#: pod key → (node, image of its container, restarts); pods not on a node are left out.
Outcome = dict[str, tuple[str, str, int]]


def simulated() -> tuple[Outcome, set[str]]:
    """What ``berth simulate`` ends with, and the pods the controller made first."""
    inputs = load_inputs(InputSpec(cluster=str(CLUSTER), workloads=(str(WORKLOAD),)), None)
    result = simulate(inputs, seed=0)
    outcome = {
        pod.key: (pod.bound_node, dict(pod.containers).get("main", ""), pod.restarts)
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND)
    }
    first = {pod.key for pod in result.pods if pod.owner_kind == CLONE_SET and pod.submit_time == 0}
    return outcome, first


def _outcome(cluster: Cluster) -> Outcome:
    outcome = {}
    for pod in cluster.objects("Pod"):
        meta, spec = pod["metadata"], pod["spec"]
        if not spec.get("nodeName") or meta.get("deletionTimestamp"):
            continue
        statuses = pod.get("status", {}).get("containerStatuses") or []
        restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
        image = {c["name"]: c["image"] for c in spec["containers"]}
        outcome[f"{meta['namespace']}/{meta['name']}"] = (
            spec["nodeName"],
            image.get("main", ""),
            restarts,
        )
    return outcome


def _ready(cluster: Cluster, replicas: int) -> bool:
    (cs,) = cluster.objects("CloneSet")
    status = cs.get("status") or {}
    return status.get("replicas") == replicas and status.get("observedGeneration") == cs[
        "metadata"
    ].get("generation")


def served(cluster: Cluster) -> tuple[Outcome, set[str]]:
    docs = _documents(CLUSTER) + _documents(WORKLOAD)
    later = [d for d in docs if SUBMIT_TIME_ANNOTATION in d["metadata"].get("annotations", {})]
    later.sort(key=lambda d: float(d["metadata"]["annotations"][SUBMIT_TIME_ANNOTATION]))
    cluster.add(*(d for d in docs if d not in later))
    first: set[str] = set()
    with serving(cluster, config(), fast_options(kruise=True)) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: _ready(cluster, 3))
        first = {key for key in _outcome(cluster) if key.startswith("default/web-")}
        for doc in later:
            cluster.patch("CloneSet", "default", "web", {"spec": doc["spec"]})
            wait_for(lambda doc=doc: _ready(cluster, doc["spec"]["replicas"]), timeout=30)
            settle(server)
            wait_for(lambda: _settled_pods(cluster))
    return _outcome(cluster), first


def _settled_pods(cluster: Cluster, ended_too: bool = False) -> bool:
    """No pod mid-update or on its way out (``ended_too``: pods that ended are left out)."""
    for pod in cluster.objects("Pod"):
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            return False
        if ended_too and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or []}
        if pod["spec"].get("nodeName") and conditions.get("Ready") != "True":
            return False
    return True


def test_simulator_and_server_run_a_clone_set_alike(cluster: Cluster):
    expected, expected_first = simulated()
    outcome, first = served(cluster)
    assert outcome == expected
    assert first == expected_first


def test_the_scenario_updates_in_place_and_scales_past_the_nodes():
    """Guards the scenario: the image change is made in place on the first pods, some
    replicas wait for room at the peak, and the scale-in leaves five on nodes."""
    outcome, first = simulated()
    web = {key: value for key, value in outcome.items() if key.startswith("default/web-")}
    assert len(web) == 5 and len(first) == 3 and first <= web.keys()
    assert all(outcome[key][1:] == ("nginx:1.27", 1) for key in first)
    assert all(image == "nginx:1.27" for _, image, _ in web.values())
    doc = yaml.safe_load_all(WORKLOAD.read_text())
    peak = max(d["spec"].get("replicas", 0) for d in doc if d["kind"] == "CloneSet")
    assert peak > 5  # more than the nodes hold


# ------------------------------------------------ an Advanced StatefulSet and a BroadcastJob

WORKLOADS_CLUSTER = DATA / "kruise-workloads-parity-cluster.yaml"
WORKLOADS = DATA / "kruise-workloads-parity-workload.yaml"
ASTS = "StatefulSet.apps.kruise.io"

#: pod key → (node, phase, image of its container, restarts).
Placed = dict[str, tuple[str, str, str, int]]


def simulated_workloads() -> Placed:
    inputs = load_inputs(
        InputSpec(cluster=str(WORKLOADS_CLUSTER), workloads=(str(WORKLOADS),)), None
    )
    result = simulate(inputs, seed=0)
    return {
        pod.key: (pod.bound_node, str(pod.phase), dict(pod.containers)["main"], pod.restarts)
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND, PodPhase.SUCCEEDED)
    }


def _placed(cluster: Cluster) -> Placed:
    placed = {}
    for pod in cluster.objects("Pod"):
        meta, spec = pod["metadata"], pod["spec"]
        if not spec.get("nodeName") or meta.get("deletionTimestamp"):
            continue
        status = pod.get("status") or {}
        restarts = sum(
            int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []
        )
        image = {c["name"]: c["image"] for c in spec["containers"]}["main"]
        placed[f"{meta['namespace']}/{meta['name']}"] = (
            spec["nodeName"],
            status.get("phase", ""),
            image,
            restarts,
        )
    return placed


def _asts_settled(cluster: Cluster, replicas: int) -> bool:
    (sts,) = cluster.objects(ASTS)
    status = sts.get("status") or {}
    return (
        status.get("replicas") == status.get("readyReplicas") == replicas
        and status.get("observedGeneration") == sts["metadata"].get("generation")
        and status.get("updatedReadyReplicas") == status.get("updatedReplicas")
    )


def _job_phase(cluster: Cluster) -> str | None:
    (job,) = cluster.objects("BroadcastJob")
    return (job.get("status") or {}).get("phase")


def served_workloads(cluster: Cluster) -> Placed:
    docs = _documents(WORKLOADS_CLUSTER) + _documents(WORKLOADS)
    later = [d for d in docs if SUBMIT_TIME_ANNOTATION in d["metadata"].get("annotations", {})]
    later.sort(key=lambda d: float(d["metadata"]["annotations"][SUBMIT_TIME_ANNOTATION]))
    cluster.add(*(d for d in docs if d not in later))
    with serving(cluster, config(), fast_options(kruise=True)) as server, cluster.kubelet():
        wait_for(lambda: _asts_settled(cluster, 4), timeout=30)
        settle(server)
        for doc in later:
            if doc["kind"] == "BroadcastJob":
                cluster.add(doc)
                wait_for(lambda: _job_phase(cluster) == "Completed", timeout=30)
            else:
                cluster.patch(ASTS, "default", "db", {"spec": doc["spec"]})
                replicas = doc["spec"]["replicas"]
                wait_for(lambda replicas=replicas: _asts_settled(cluster, replicas), timeout=30)
            settle(server)
            wait_for(lambda: _settled_pods(cluster, ended_too=True))
    return _placed(cluster)


def test_simulator_and_server_run_an_advanced_stateful_set_and_a_broadcast_job_alike(
    cluster: Cluster,
):
    assert served_workloads(cluster) == simulated_workloads()


def test_the_workloads_scenario_updates_in_place_down_to_the_partition():
    """Guards the scenario: a job pod ended on each node, beside the first four replicas
    (on all three nodes), db-1..db-3 updated in place, db-0 held by the partition, db-4 made
    at the new revision."""
    placed = simulated_workloads()
    assert {placed[f"default/db-{i}"][0] for i in range(4)} == {"node-a", "node-b", "node-c"}
    jobs = {key: value for key, value in placed.items() if key.startswith("default/warm-")}
    assert sorted(node for node, *_ in jobs.values()) == ["node-a", "node-b", "node-c"]
    assert {phase for _, phase, *_ in jobs.values()} == {"Succeeded"}
    db = {key: value[2:] for key, value in placed.items() if key.startswith("default/db-")}
    assert db == {
        "default/db-0": ("redis:7.0", 0),
        "default/db-1": ("redis:7.2", 1),
        "default/db-2": ("redis:7.2", 1),
        "default/db-3": ("redis:7.2", 1),
        "default/db-4": ("redis:7.2", 0),
    }
