"""DRA pods placed by the real kube-scheduler and by ``berth serve`` on one API server give the
same node and the same devices, on generated cases with one right answer
(``oracle_cases.generate_dra``: one node with exactly the devices asked, a CEL selector that
leaves one device, allocationMode All on the one node the pod fits). kube-scheduler runs first;
once its pods are deleted and their claims gone, berth places the same pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.k8s import dra_docs as d
from tests.k8s.harness import Cluster, fast_options, serving, settle, wait_for
from tests.k8s.oracle_cases import DRA_KINDS, Case, dra_class, generate_dra
from tests.k8s.test_oracle import kube_scheduler  # noqa: F401 - the oracle, a fixture

CASES = 24


def _outcome(cluster: Cluster, cases: list[Case], scheduler: str) -> dict[str, Any] | None:
    """case → (node, devices of its pod's claim) once every pod is bound with its claim
    allocated or called unschedulable; None before that."""
    pods = {p["metadata"]["name"]: p for p in cluster.objects("Pod")}
    answer = {}
    for case in cases:
        raw = pods.get(case.pod(scheduler)["metadata"]["name"])
        if raw is None:
            return None
        node = raw["spec"].get("nodeName")
        if node:
            claim = d.pod_claim(cluster, raw["metadata"]["name"])
            devices = d.devices_of(claim)
            if not devices:
                return None
            answer[case.name] = (node, devices)
            continue
        refused = any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in (raw.get("status") or {}).get("conditions") or []
        )
        if not refused:
            return None
        answer[case.name] = ("", [])
    return answer


def _run(cluster: Cluster, cases: list[Case], scheduler: str) -> dict[str, Any]:
    docs = [case.pod(scheduler) for case in cases]
    if scheduler == "berth":
        with serving(cluster, options=fast_options()) as server:
            settle(server)
            cluster.add(*docs)
            wait_for(lambda: _outcome(cluster, cases, scheduler) is not None, timeout=120)
            settle(server)
    else:
        cluster.add(*docs)
        wait_for(lambda: _outcome(cluster, cases, scheduler) is not None, timeout=120)
    outcome = _outcome(cluster, cases, scheduler)
    assert outcome is not None
    for doc in docs:
        cluster.delete("Pod", "default", doc["metadata"]["name"])
    # The resourceclaim controller frees and deletes the pods' claims: the next run starts
    # from free devices.
    wait_for(lambda: not d.all_claims(cluster), timeout=60)
    return outcome


def test_berth_allocates_the_devices_kube_scheduler_allocates(
    cluster: Cluster,
    kube_scheduler: Path,  # noqa: F811
):
    d.clean(cluster)
    cases = generate_dra(CASES, seed=5)
    cluster.add(dra_class())
    for case in cases:
        cluster.add(*case.nodes, *case.objects)
    try:
        theirs = _run(cluster, cases, "default-scheduler")
        ours = _run(cluster, cases, "berth")
    finally:
        d.clean(cluster)
    differ = [(c.name, c.kind, theirs[c.name], ours[c.name]) for c in cases
              if theirs[c.name] != ours[c.name]]  # fmt: skip
    placed = {kind: sum(1 for c in cases if c.kind == kind and ours[c.name][0]) for kind in
              DRA_KINDS}  # fmt: skip
    print(f"dra: {CASES - len(differ)}/{CASES} agree; placed by kind {placed}")
    assert not differ, "\n".join(map(str, differ))
    assert all(placed.values()), placed  # every kind has cases that were placed
