"""Decision parity for PaddlePaddle EDL's TrainingJob under EDL's scaling policy: one scenario
(tests/k8s/data/paddle-parity-workload.yaml, on kubeflow-parity's cluster and configuration)
through ``berth simulate`` and through ``berth serve --paddle --scaling edl`` on the real API
server ends with the same pods on the same nodes and the same trainer cut.

As in test_kubeflow_parity, the pod submitted later is created on the cluster once berth has
settled with the jobs grown, and can go to one node only."""

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
from tests.k8s.test_kubeflow_parity import CLUSTER, SCHEDULER, UNTIL, _running
from tests.k8s.test_parity import _documents

WORKLOAD = Path(__file__).parent / "data" / "paddle-parity-workload.yaml"

Outcome = tuple[dict[str, str], set[str], int]  # pod → node, pods evicted, resnet's trainers


def _trainers(bound: dict[str, str]) -> int:
    return sum(1 for key in bound if key.startswith("default/resnet-trainer-"))


def simulated() -> Outcome:
    inputs = load_inputs(InputSpec(cluster=str(CLUSTER), workloads=(str(WORKLOAD),)), SCHEDULER)
    result = simulate(inputs, seed=0, until=UNTIL)
    bound = {
        pod.key: pod.bound_node
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND)
    }
    evicted = {pod.key for pod in result.pods if pod.phase == PodPhase.EVICTED}
    return bound, evicted, _trainers(bound)


def served(cluster: Cluster) -> Outcome:
    docs: list[dict[str, Any]] = _documents(CLUSTER) + _documents(WORKLOAD)
    later = [d for d in docs if SUBMIT_TIME_ANNOTATION in d["metadata"].get("annotations", {})]
    cluster.add(*(d for d in docs if d not in later))
    config = load_config(SCHEDULER)
    config.period = 0.02
    # the policy's rounds as configured, at a test's pace
    scaling = replace(ScalingConfig.from_raw(config.simulation["scaling"], "-"), interval=0.05)
    options = fast_options(paddle=True, scaling=scaling)
    with serving(cluster, config, options) as server, cluster.kubelet():
        wait_for(lambda: _running(cluster, 9), timeout=30)
        settle(server)
        cluster.add(*later)
        wait_for(lambda: "default/urgent" in cluster.bindings(), timeout=30)
        wait_for(lambda: _trainers(cluster.bindings()) == 3, timeout=30)
        settle(server)
        wait_for(lambda: _running(cluster, 9), timeout=30)
    bound = cluster.bindings()
    return bound, set(cluster.api.evictions), _trainers(bound)


def test_simulator_and_server_run_training_jobs_alike(cluster: Cluster):
    expected = simulated()
    assert served(cluster) == expected


def test_the_scenario_grows_the_elastic_job_and_cuts_it_for_the_later_pod():
    """Guards the scenario: the elastic job grows to its maximum, the pod that comes later
    runs, and one trainer is cut for it."""
    bound, evicted, trainers = simulated()
    assert trainers == 3
    assert evicted == {"default/resnet-trainer-3"}
    assert bound["default/urgent"] == "node-c" and len(bound) == 9
