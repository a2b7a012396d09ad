"""The JobSet controller with berth's batch/v1 Job controller under it, on the controller
harness: Job names and labels, the exclusive-placement affinity, and the success and failure
policies as JobSet's controller tests state them (all / any of the target replicated Jobs
complete; a failed Job restarts the set until maxRestarts, then fails it)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from berth.api.jobset import (
    EXCLUSIVE_KEY,
    JOB_GLOBAL_INDEX_KEY,
    JOB_INDEX_KEY,
    JOB_KEY,
    JOBSET_NAME_KEY,
    REPLICATED_JOB_NAME_KEY,
    RESTART_ATTEMPT_KEY,
)
from berth.api.manifest import parse_documents
from berth.api.objects import PodPhase
from berth.api.selectors import Requirement
from berth.api.workloads import KUBE_JOB, Workload
from tests.controllers.harness import Harness
from tests.controllers.workload_docs import load, template, workload

API = "jobset.x-k8s.io/v1alpha2"


def rjob(name: str, replicas: int = 1, completions: int = 1) -> dict[str, Any]:
    job = {"completions": completions, "parallelism": completions, "backoffLimit": 0}
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {**job, "template": template(name)}},
    }


def jobset(
    *rjobs: dict[str, Any], annotations: dict[str, str] | None = None, **spec: Any
) -> Workload:
    doc = workload(API, "JobSet", "js", replicatedJobs=list(rjobs), **spec)
    doc["metadata"]["annotations"].update(annotations or {})
    return load(doc)[0]


def jobs(h: Harness) -> dict[str, Workload]:
    return {job.name: job for job in h.store.list(KUBE_JOB)}


def finish(h: Harness, job: str, phase: PodPhase) -> None:
    """Every live pod of the Job runs and ends in ``phase``."""
    for pod in h.pods():
        if pod.owner == f"default/{job}":
            h.run(pod)
            h.end(pod, phase)


def test_jobs_names_and_labels() -> None:
    h = Harness()
    h.apply(jobset(rjob("driver"), rjob("workers", replicas=2, completions=2)))
    made = jobs(h)
    assert sorted(made) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    job = made["js-workers-1"]
    assert job.owner == "default/js"
    key = hashlib.sha1(b"default/js-workers-1").hexdigest()
    expected = {
        JOBSET_NAME_KEY: "js",
        REPLICATED_JOB_NAME_KEY: "workers",
        JOB_INDEX_KEY: "1",
        JOB_GLOBAL_INDEX_KEY: "2",
        RESTART_ATTEMPT_KEY: "0",
        JOB_KEY: key,
    }
    assert expected.items() <= job.labels.items()
    pods = [p for p in h.pods() if p.owner == job.key]
    assert len(pods) == 2
    assert all(expected.items() <= p.labels.items() for p in pods)
    assert all(not p.affinity.has_pod_terms for p in pods)


def test_exclusive_topology_affinity() -> None:
    h = Harness()
    h.apply(jobset(rjob("workers", replicas=2, completions=2), annotations={EXCLUSIVE_KEY: "rack"}))
    for pod in h.pods():
        key = pod.labels[JOB_KEY]
        assert pod.annotations[EXCLUSIVE_KEY] == "rack"
        (together,) = pod.affinity.pod_required
        (alone,) = pod.affinity.anti_required
        assert together.topology_key == alone.topology_key == "rack"
        assert together.selector.requirements == (Requirement(JOB_KEY, "In", (key,)),)
        assert alone.selector.requirements == (
            Requirement(JOB_KEY, "Exists"),
            Requirement(JOB_KEY, "NotIn", (key,)),
        )


# name: (successPolicy, Jobs that complete, Jobs that fail, maxRestarts,
#        expected phase, restarts)
POLICIES: dict[str, tuple[Any, ...]] = {
    "all jobs completed": (None, ["js-a-0", "js-a-1", "js-b-0"], [], 0, "Completed", 0),
    "some jobs completed": (None, ["js-a-0", "js-b-0"], [], 0, "Running", 0),
    "any: one completed": ({"operator": "Any"}, ["js-a-1"], [], 0, "Completed", 0),
    "all of the target completed": (
        {"operator": "All", "targetReplicatedJobs": ["a"]},
        ["js-a-0", "js-a-1"],
        [],
        0,
        "Completed",
        0,
    ),
    "not all of the target completed": (
        {"operator": "All", "targetReplicatedJobs": ["a"]},
        ["js-a-0", "js-b-0"],
        [],
        0,
        "Running",
        0,
    ),
    "any of the target: another completed": (
        {"operator": "Any", "targetReplicatedJobs": ["a"]},
        ["js-b-0"],
        [],
        0,
        "Running",
        0,
    ),
    "a failed job, no failure policy": (None, [], ["js-b-0"], 0, "Failed", 0),
    "a failed job, restarts left": (None, [], ["js-b-0"], 1, "Running", 1),
    "failures beyond maxRestarts": (None, [], ["js-b-0", "js-a-0"], 1, "Failed", 1),
    "failures within maxRestarts": (None, [], ["js-b-0", "js-a-0"], 3, "Running", 2),
}


@pytest.mark.parametrize("case", POLICIES.values(), ids=list(POLICIES))
def test_success_and_failure_policies(case: tuple[Any, ...]) -> None:
    success, complete, fail, max_restarts, phase, restarts = case
    spec: dict[str, Any] = {"failurePolicy": {"maxRestarts": max_restarts}}
    if success:
        spec["successPolicy"] = success
    h = Harness()
    js = h.apply(jobset(rjob("a", replicas=2), rjob("b"), **spec))
    for name in complete:
        finish(h, name, PodPhase.SUCCEEDED)
    for name in fail:  # one failure after another, each after the restart it caused
        finish(h, name, PodPhase.FAILED)
    assert js.status.phase == phase
    assert js.status.restarts == restarts
    if phase == "Running":
        assert sorted(jobs(h)) == ["js-a-0", "js-a-1", "js-b-0"]
        attempts = {job.labels[RESTART_ATTEMPT_KEY] for job in jobs(h).values()}
        assert attempts == {str(restarts)}
    else:  # nothing is left running
        assert not h.pods()


def test_restart_recreates_every_job_and_its_pods() -> None:
    h = Harness()
    h.apply(jobset(rjob("a", replicas=2), failurePolicy={"maxRestarts": 1}))
    before = {p.name: p.uid for p in h.pods()}
    finish(h, "js-a-1", PodPhase.FAILED)
    after = {p.uid for p in h.pods()}
    assert len(after) == 2 and not after & set(before.values())
    assert {job.labels[RESTART_ATTEMPT_KEY] for job in jobs(h).values()} == {"1"}


def test_manifest_checks() -> None:
    doc = workload(
        API,
        "JobSet",
        "bad",
        replicatedJobs=[rjob("a"), rjob("a")],
        successPolicy={"operator": "All", "targetReplicatedJobs": ["x"]},
    )
    problems = [str(p) for p in parse_documents([doc], "test").errors]
    assert any("replicatedJobs[1].name" in p for p in problems), problems
    assert any("targetReplicatedJobs[0]" in p for p in problems), problems
    doc["spec"] = {"replicatedJobs": []}
    assert parse_documents([doc], "test").errors
