"""Decision parity for colocation: one scenario (tests/k8s/data/colocation-parity-*) through
``berth simulate`` and through ``berth serve --colocation`` on the real API server ends with
the same batch resources on each node, the same pods on the same nodes, and the same BE pod
evicted.

On the cluster the test plays the node agent: at each of the scenario's report times it
writes every pod's usage (its request × its usage curve or utilization at that time, what the
simulator uses) into ``berth.io/usage``, and the later pods (``berth.io/submit-time``) are
created in their order once berth has settled.

Where the two differ on purpose: the simulator submits an evicted plain pod again
(``be-1-retry1``: a trace's task is not lost), while on a cluster a bare pod evicted is gone
(a Job or another controller would make it again); the simulator's copy finds no batch memory
left and waits, so it changes nothing else, and it is checked apart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from berth.api.keys import SUBMIT_TIME_ANNOTATION
from berth.api.objects import PodPhase
from berth.api.qos import BATCH_CPU, BATCH_MEMORY
from berth.api.usage import (
    USAGE_CURVE_ANNOTATION,
    USAGE_PERIOD_ANNOTATION,
    UsageProfile,
    parse_usage_curve,
)
from berth.controllers.colocation_config import ColocationConfig
from berth.framework.config_files import load_config
from berth.resources import CPU, MEMORY, to_canonical
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import Cluster, fast_options, serving, settle, wait_for
from tests.k8s.test_colocation import batch_of, report_usage
from tests.k8s.test_parity import _documents

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "colocation-parity-cluster.yaml"
WORKLOAD = DATA / "colocation-parity-workload.yaml"
SCHEDULER = DATA / "colocation-parity-scheduler.yaml"
UNTIL = 400.0
UTILIZATION = "berth.io/utilization"
GI = 2**30

#: node → batch (cpu, memory); pod → node; pods evicted
Outcome = tuple[dict[str, tuple[int, int]], dict[str, str], set[str]]


def simulated() -> tuple[Outcome, dict[str, PodPhase]]:
    """What ``berth simulate`` ends with, and the phase of every pod it made."""
    inputs = load_inputs(InputSpec(cluster=str(CLUSTER), workloads=(str(WORKLOAD),)), SCHEDULER)
    result = simulate(inputs, seed=0, until=UNTIL)
    state = result.scheduler.state
    cpu, memory = state.axis.index(BATCH_CPU), state.axis.index(BATCH_MEMORY)
    batch = {
        name: (int(state.allocatable[row, cpu]), int(state.allocatable[row, memory]))
        for name, row in state.rows.items()
    }
    bound = {
        pod.key: pod.bound_node
        for pod in result.pods
        if pod.phase in (PodPhase.RUNNING, PodPhase.BOUND)
    }
    evicted = {pod.key for pod in result.pods if pod.phase == PodPhase.EVICTED}
    return (batch, bound, evicted), {pod.key: pod.phase for pod in result.pods}


def usage_at(doc: dict[str, Any], t: float) -> tuple[float, float]:
    """What the simulator has the pod use at ``t``: its request × its profile there."""
    annotations = doc["metadata"].get("annotations") or {}
    curve = annotations.get(USAGE_CURVE_ANNOTATION)
    if curve is not None:
        period = annotations.get(USAGE_PERIOD_ANNOTATION)
        profile = parse_usage_curve(curve, float(period) if period else None)
    else:
        profile = UsageProfile.constant(float(annotations.get(UTILIZATION, "1")))
    requests = doc["spec"]["containers"][0]["resources"]["requests"]
    cpu_name = BATCH_CPU if BATCH_CPU in requests else CPU
    memory_name = BATCH_MEMORY if BATCH_MEMORY in requests else MEMORY
    cpu, memory = profile.at(t)
    return (
        to_canonical(cpu_name, requests[cpu_name]) * cpu,
        to_canonical(memory_name, requests[memory_name]) * memory,
    )


def served(cluster: Cluster) -> Outcome:
    docs = _documents(CLUSTER) + _documents(WORKLOAD)
    later = [d for d in docs if SUBMIT_TIME_ANNOTATION in d["metadata"].get("annotations", {})]
    later.sort(key=lambda d: float(d["metadata"]["annotations"][SUBMIT_TIME_ANNOTATION]))
    pods = {f"default/{d['metadata']['name']}": d for d in docs if d["kind"] == "Pod"}
    cluster.add(*(d for d in docs if d not in later))
    config = load_config(SCHEDULER)
    config.period = 0.02
    # the simulator's thresholds, reports at a test's pace
    colocation = ColocationConfig.from_raw(config.simulation["colocation"], str(SCHEDULER))
    options = fast_options(colocation=replace(colocation, report_interval=0.1))

    def report(t: float) -> None:
        """The node agent's reading at scenario time ``t``."""
        for key in sorted(cluster.bindings()):
            report_usage(cluster, key, *usage_at(pods[key], t))

    def batch_is(node: str, cpu: int, memory: int) -> None:
        wait_for(lambda: batch_of(cluster, node) == (cpu, memory), timeout=30)

    with serving(cluster, config, options) as server, cluster.kubelet():
        wait_for(lambda: len(cluster.bindings()) == 2, timeout=30)
        report(60.0)
        for node in ("n1", "n2"):
            batch_is(node, 4000, 9 * GI)
        settle(server)
        for doc in later:
            cluster.add(doc)
            settle(server)
        wait_for(lambda: len(cluster.bindings()) == 5, timeout=30)
        report(120.0)
        settle(server)
        assert cluster.api.evictions == []
        report(180.0)
        wait_for(lambda: cluster.api.evictions != [], timeout=30)
        batch_is("n1", 4000, 5 * GI)
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
        settle(server)
        batch = {node: batch_of(cluster, node) for node in ("n1", "n2")}
    return batch, cluster.bindings(), set(cluster.api.evictions)  # type: ignore[return-value]


def test_simulator_and_server_colocate_alike(cluster: Cluster):
    expected, phases = simulated()
    outcome = served(cluster)
    assert outcome == expected
    # The simulator's copy of the evicted plain pod waits (see the module's docstring).
    assert phases["default/be-1-retry1"] == PodPhase.PENDING


def test_the_scenario_fills_batch_resources_and_evicts_one_be_pod():
    """Guards the scenario: BE pods fill n1's batch cpu (be-4 waits), web-1's memory rise
    evicts one of n1's BE pods, n2 is left alone."""
    (batch, bound, evicted), phases = simulated()
    assert batch == {"n1": (4000, 5 * GI), "n2": (4000, 9 * GI)}
    assert bound == {
        "default/web-1": "n1",
        "default/web-2": "n2",
        "default/be-2": "n1",
        "default/be-3": "n2",
    }
    assert evicted == {"default/be-1"}
    assert phases["default/be-4"] == PodPhase.PENDING
