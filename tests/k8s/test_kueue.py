"""Kueue as a second oracle, on quota admission: which jobs a queue with a quota lets start.

Kueue's manager (built by ``make controlplane`` from controlplane/kueue, v0.17.0) runs against
the session's API server. Each generated case (tests/k8s/kueue_cases.py) is a ClusterQueue
with a nominal quota in cpu and memory on one ResourceFlavor, a LocalQueue, and suspended
batch/v1 Jobs labelled with the LocalQueue (and, in half the cases, a WorkloadPriorityClass).
Every case runs twice, under a BestEffortFIFO and a StrictFIFO ClusterQueue; Kueue's answer is
the set of Jobs it unsuspends. berth's answer to the same case is what ``berth serve``'s
enqueue admits: a Volcano Queue whose capability is the quota, one PodGroup per job (minMember
the job's pods, minResources their requests) with its pods pending, on nodes that hold
everything, so only the quota limits.

Both must see every job at once and in the same order. The ClusterQueues are held
(``stopPolicy: Hold``) while the jobs arrive and released together; berth starts once they are
all there. Both order a queue by priority, then creation time, which the API server keeps to
the second (Kueue then goes by UID, berth by name): so job k of every case arrives in round k,
each round in a later second than the one before, for Kueue's Workloads as for berth's
PodGroups.

berth's enqueue has one behaviour: in queue order, each job is admitted if it fits, and the
ones behind a job that does not fit are still considered. That is Kueue's BestEffortFIFO;
berth has nothing like StrictFIFO, where the queue's head blocks everyone behind it until it
fits. So the BestEffortFIFO answers must agree case by case, and StrictFIFO's may differ only
where a job that does not fit comes before one that does, berth admitting exactly what
BestEffortFIFO admits and Kueue exactly the jobs ahead of the first that does not fit.

Running Kueue outside a cluster: its webhooks are not needed (the Jobs are created suspended
and labelled, which is what its mutating webhook would do) and no webhook configuration points
at it. It is still run with ``internalCertManagement`` on, since with it off the manager reads
its metrics certificate from the fixed /etc/kueue/metrics/certs: its certificate rotator fills
a Secret made empty for it, the test copies the serving certificate from the Secret into the
manager's certDir (a kubelet would mount it), and the conversion webhooks of the CRDs it
insists on injecting its CA into point at the manager's loopback port. Nothing here asks for a
version other than v1beta2 (the stored one), so the API server never calls them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from berth.k8s.client import KubeClient
from tests.k8s.controlplane import ControlPlane, collection_path
from tests.k8s.harness import Cluster, config, priority_class_doc, serving, settle, wait_for
from tests.k8s.kueue import GROUP, Manager, unavailable
from tests.k8s.kueue_cases import (
    PRIORITIES,
    Case,
    Job,
    generate,
    pod_template,
    quantity_cpu,
    quantity_memory,
)
from tests.k8s.proxy import FaultProxy

CASES = 40
SEED = 0
STRATEGIES = {"best-effort": "BestEffortFIFO", "strict": "StrictFIFO"}
FLAVOR = "default-flavor"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
#: berth: enqueue with the queue's capability, then allocate; priority and gang for the job
#: order Kueue's queues keep (priority, then arrival).
BERTH = {
    "actions": "enqueue, allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "capacity"}, {"name": "resource-fit"}]},
    ],
}
NODES = 8
QUIET = 2.0  # seconds an answer must hold to count as Kueue's last word


# ---------------------------------------------------------------------------- the objects


def _flavor() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": FLAVOR},
    }


def _workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _cluster_queue(case: Case, strategy: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": f"{case.name}-{strategy}"},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": STRATEGIES[strategy],
            "stopPolicy": "Hold",
            "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": FLAVOR,
                            "resources": [
                                {"name": "cpu", "nominalQuota": quantity_cpu(case.cpu)},
                                {"name": "memory", "nominalQuota": quantity_memory(case.memory)},
                            ],
                        }
                    ],
                }
            ],
        },
    }


def _local_queue(case: Case, strategy: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": strategy, "namespace": case.name},
        "spec": {"clusterQueue": f"{case.name}-{strategy}"},
    }


def _batch_job(case: Case, job: Job, strategy: str) -> dict[str, Any]:
    labels = {QUEUE_LABEL: strategy}
    if job.priority_class:
        labels[PRIORITY_LABEL] = job.priority_class
    template = pod_template(job)
    template["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{strategy}-{job.name}", "namespace": case.name, "labels": labels},
        "spec": {
            "suspend": True,
            "parallelism": job.parallelism,
            "completions": job.completions,
            "template": {"spec": template},
        },
    }


def _volcano_queue(case: Case) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": case.name},
        "spec": {
            "weight": 1,
            "capability": {"cpu": quantity_cpu(case.cpu), "memory": quantity_memory(case.memory)},
        },
    }


def _pod_group(case: Case, job: Job) -> dict[str, Any]:
    cpu, memory = job.need
    spec: dict[str, Any] = {
        "minMember": job.pods,
        "minResources": {"cpu": quantity_cpu(cpu), "memory": quantity_memory(memory)},
        "queue": case.name,
    }
    if job.priority_class:
        spec["priorityClassName"] = job.priority_class
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": job.name, "namespace": case.name},
        "spec": spec,
    }


def _pods(case: Case, job: Job) -> list[dict[str, Any]]:
    pods = []
    for index in range(job.pods):
        spec = pod_template(job, scheduler="berth")
        if job.priority_class:
            spec["priorityClassName"] = job.priority_class
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{job.name}-{index}",
                    "namespace": case.name,
                    "annotations": {"scheduling.k8s.io/group-name": job.name},
                },
                "spec": spec,
            }
        )
    return pods


def _node(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"kq-node-{index}", "labels": {}},
        "status": {"allocatable": {"cpu": "128", "memory": "512Gi", "pods": "1000"}},
    }


# ---------------------------------------------------------------------------- the run


def _post(admin: KubeClient, doc: dict[str, Any]) -> None:
    admin.request("POST", collection_path(doc), body=doc)


def _next_second() -> None:
    """Sleep into the next whole second of the clock the API server stamps objects with."""
    time.sleep(1.05 - time.time() % 1.0)


def _workloads(admin: KubeClient) -> list[dict[str, Any]]:
    return admin.request("GET", f"{GROUP}/workloads").get("items") or []


def _create(admin: KubeClient, docs: list[dict[str, Any]]) -> None:
    """Create ``docs`` a few at a time (their order is not kept)."""
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda doc: _post(admin, doc), docs))


def _arrive(cluster: Cluster, cases: list[Case]) -> None:
    """Job k of every case in round k, Kueue's Jobs and berth's PodGroups alike; a round
    starts once Kueue has made the previous round's Workloads, in a later second. (berth's
    pods come later: a PodGroup's place in the queue is its own creation time.)"""
    admin = cluster.admin
    made = 0
    for k in range(max(len(case.jobs) for case in cases)):
        docs = []
        for case in cases:
            if k < len(case.jobs):
                job = case.jobs[k]
                docs += [_batch_job(case, job, strategy) for strategy in STRATEGIES]
                docs.append(_pod_group(case, job))
        _create(admin, docs)
        made += sum(doc["kind"] == "Job" for doc in docs)
        wait_for(lambda made=made: len(_workloads(admin)) >= made, timeout=30)
        _next_second()


def _kueue_answer(admin: KubeClient) -> dict[str, dict[str, set[str]]]:
    """strategy → case → the jobs Kueue unsuspended."""
    answer: dict[str, dict[str, set[str]]] = {s: {} for s in STRATEGIES}
    for item in admin.request("GET", "/apis/batch/v1/jobs").get("items") or []:
        meta = item["metadata"]
        if not meta["namespace"].startswith("kq-"):
            continue
        strategy, job = meta["name"].rsplit("-", 1)
        admitted = answer[strategy].setdefault(meta["namespace"], set())
        if not item["spec"].get("suspend", False):
            admitted.add(job)
    return answer


def _admitted_workloads(admin: KubeClient) -> int:
    return sum(
        any(
            c["type"] == "Admitted" and c["status"] == "True"
            for c in (w.get("status") or {}).get("conditions") or []
        )
        for w in _workloads(admin)
    )


def _run_kueue(cluster: Cluster, cases: list[Case]) -> dict[str, dict[str, set[str]]]:
    """Release every ClusterQueue at once; Kueue's answer once it has settled. berth's pods
    are created meanwhile."""
    admin = cluster.admin
    for case in cases:
        for strategy in STRATEGIES:
            admin.request(
                "PATCH",
                f"{GROUP}/clusterqueues/{case.name}-{strategy}",
                body={"spec": {"stopPolicy": "None"}},
                content_type="application/merge-patch+json",
            )
    _create(admin, [pod for case in cases for job in case.jobs for pod in _pods(case, job)])
    last: list[Any] = [None, time.monotonic()]

    def decided() -> bool:
        # Kueue's last word: the unsuspended Jobs are the admitted Workloads, and that answer
        # has held for QUIET seconds.
        now = _kueue_answer(admin)
        admitted = sum(len(v) for s in now.values() for v in s.values())
        if now != last[0] or admitted != _admitted_workloads(admin):
            last[:] = [now, time.monotonic()]
            return False
        return time.monotonic() - last[1] >= QUIET

    wait_for(decided, timeout=60)
    return last[0]


def _berth_answer(cluster: Cluster) -> dict[str, set[str]]:
    """case → the PodGroups berth admitted (Inqueue or further, or with a pod bound)."""
    bound = {key.rsplit("-", 1)[0] for key in cluster.bindings()}
    answer: dict[str, set[str]] = {}
    for group in cluster.objects("PodGroup"):
        meta = group["metadata"]
        admitted = answer.setdefault(meta["namespace"], set())
        phase = (group.get("status") or {}).get("phase") or "Pending"
        if phase not in ("Pending", "") or f"{meta['namespace']}/{meta['name']}" in bound:
            admitted.add(meta["name"])
    return answer


def _run_berth(cluster: Cluster) -> dict[str, set[str]]:
    with serving(cluster, config(BERTH)) as server:
        answer: dict[str, set[str]] | None = None
        while True:
            settle(server)
            now = _berth_answer(cluster)
            if now == answer:
                return now
            answer = now


@dataclass
class Outcome:
    cases: list[Case]
    kueue: dict[str, dict[str, set[str]]]
    berth: dict[str, set[str]]


@pytest.fixture(scope="module")
def outcome(control_plane: tuple[ControlPlane, FaultProxy]) -> Iterator[Outcome]:
    why = unavailable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    plane, proxy = control_plane
    cluster = Cluster(plane, proxy)
    cluster.clean()
    manager = Manager(plane, plane.folder / "kueue")
    try:
        manager.start()
        cases = generate(CASES, seed=SEED)
        admin = cluster.admin
        admin.request("POST", f"{GROUP}/resourceflavors", body=_flavor())
        for name, value in PRIORITIES.items():
            admin.request(
                "POST",
                f"{GROUP}/workloadpriorityclasses",
                body=_workload_priority_class(name, value),
            )
            cluster.add(priority_class_doc(name, value))
        cluster.add(*(_node(i) for i in range(NODES)))
        for case in cases:
            manager.create_namespace(case.name)
            cluster.add(_volcano_queue(case))
            for strategy in STRATEGIES:
                admin.request("POST", f"{GROUP}/clusterqueues", body=_cluster_queue(case, strategy))
                _post(admin, _local_queue(case, strategy))
        _arrive(cluster, cases)
        kueue = _run_kueue(cluster, cases)
        berth = _run_berth(cluster)
        yield Outcome(cases, kueue, berth)
    finally:
        manager.stop()
        cluster.clean()
        manager.remove_everything(cluster.admin)


def _compare(outcome: Outcome, strategy: str) -> tuple[int, list[str]]:
    agreed, differences = 0, []
    for case in outcome.cases:
        theirs = outcome.kueue[strategy].get(case.name, set())
        mine = outcome.berth.get(case.name, set())
        if theirs == mine:
            agreed += 1
        else:
            differences.append(
                f"{case.describe()}\n    kueue {sorted(theirs)}  berth {sorted(mine)}  model:"
                f" best-effort {sorted(case.admitted())} strict {sorted(case.admitted(True))}"
            )
    return agreed, differences


def test_best_effort_fifo_agrees_with_kueue(outcome: Outcome):
    """Kueue's BestEffortFIFO against berth's enqueue: the same jobs admitted in every case."""
    agreed, differences = _compare(outcome, "best-effort")
    print(f"BestEffortFIFO: {agreed}/{len(outcome.cases)} cases agree")
    assert not differences, "\n".join(differences)


def test_strict_fifo_differs_only_where_a_job_blocks(outcome: Outcome):
    """Kueue's StrictFIFO against the same berth answer: they may differ only where a job that
    does not fit comes before one that does; there Kueue admits the jobs ahead of it and berth
    what BestEffortFIFO admits."""
    agreed, differences = _compare(outcome, "strict")
    unexplained = []
    for case in outcome.cases:
        theirs = outcome.kueue["strict"].get(case.name, set())
        mine = outcome.berth.get(case.name, set())
        if theirs == mine:
            continue
        blocked = case.admitted(strict=True) != case.admitted()
        best_effort = outcome.kueue["best-effort"].get(case.name, set())
        if not (blocked and theirs == case.admitted(strict=True) and mine == best_effort):
            unexplained.append(case.name)
    print(
        f"StrictFIFO: {agreed}/{len(outcome.cases)} cases agree; "
        f"{len(differences)} differ where a job that does not fit blocks the queue"
    )
    assert not unexplained, "\n".join(d for d in differences if d.split()[0] in unexplained)
