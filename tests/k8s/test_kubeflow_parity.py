"""Decision parity for Kubeflow's PyTorchJob under EDL's scaling policy: one scenario
(tests/k8s/data/kubeflow-parity-*) through ``berth simulate`` and through ``berth serve
--kubeflow --scaling edl`` on the real API server ends with the same pods on the same nodes,
the same workers cut, and the elastic job's target of workers (on the cluster, its Worker
replicas) the same.

The pod submitted later (``berth.io/submit-time``) is created on the cluster once berth has
settled with the jobs grown. It can go to one node only (by its nodeSelector), where the one
core left free is, so where it lands does not depend on whether the scheduler's cycle or the
policy's round comes first, which on the cluster is a matter of milliseconds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from berth.api.keys import SUBMIT_TIME_ANNOTATION
from berth.api.objects import PodPhase
from berth.controllers.scaling.config import ScalingConfig
from berth.framework.config_files import load_config
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import Cluster, fast_options, serving, settle, wait_for
from tests.k8s.test_parity import _documents

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "kubeflow-parity-cluster.yaml"
WORKLOAD = DATA / "kubeflow-parity-workload.yaml"
SCHEDULER = DATA / "kubeflow-parity-scheduler.yaml"
#: Simulated seconds: long after the later pod, long before the elastic job's work is done.
UNTIL = 1000.0

Outcome = tuple[dict[str, str], set[str], int]  # pod → node, pods evicted, llama's workers


def simulated() -> Outcome:
    inputs = load_inputs(InputSpec(cluster=str(CLUSTER), workloads=(str(WORKLOAD),)), SCHEDULER)
    result = simulate(inputs, seed=0, until=UNTIL)
    bound = {
        pod.key: pod.bound_node
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND)
    }
    evicted = {pod.key for pod in result.pods if pod.phase == PodPhase.EVICTED}
    workers = sum(1 for key in bound if key.startswith("default/llama-worker-"))
    return bound, evicted, workers


def _worker_replicas(cluster: Cluster) -> int:
    (job,) = [j for j in cluster.objects("PyTorchJob") if j["metadata"]["name"] == "llama"]
    return int(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"])


def _running(cluster: Cluster, count: int) -> bool:
    return (
        sum(1 for p in cluster.objects("Pod") if p.get("status", {}).get("phase") == "Running")
        == count
    )


def served(cluster: Cluster) -> Outcome:
    docs: list[dict[str, Any]] = _documents(CLUSTER) + _documents(WORKLOAD)
    later = [d for d in docs if SUBMIT_TIME_ANNOTATION in d["metadata"].get("annotations", {})]
    cluster.add(*(d for d in docs if d not in later))
    config = load_config(SCHEDULER)
    config.period = 0.02
    # the policy's rounds as configured, at a test's pace
    scaling = replace(ScalingConfig.from_raw(config.simulation["scaling"], "-"), interval=0.05)
    options = fast_options(kubeflow=True, scaling=scaling)
    with serving(cluster, config, options) as server, cluster.kubelet():
        wait_for(lambda: _worker_replicas(cluster) == 4, timeout=30)
        wait_for(lambda: _running(cluster, 9), timeout=30)
        settle(server)
        cluster.add(*later)
        wait_for(lambda: _worker_replicas(cluster) == 3, timeout=30)
        wait_for(lambda: "default/urgent" in cluster.bindings(), timeout=30)
        settle(server)
        wait_for(lambda: _running(cluster, 9), timeout=30)
    return cluster.bindings(), set(cluster.api.evictions), _worker_replicas(cluster)


def test_simulator_and_server_run_pytorch_jobs_alike(cluster: Cluster):
    expected = simulated()
    assert served(cluster) == expected


def test_the_scenario_grows_the_elastic_job_and_cuts_it_for_the_later_pod():
    """Guards the scenario: the elastic job grows to its maximum, the pod that comes later
    runs, and one worker is cut for it."""
    bound, evicted, workers = simulated()
    assert workers == 3
    assert evicted == {"default/llama-worker-3"}
    assert bound["default/urgent"] == "node-c" and len(bound) == 9
