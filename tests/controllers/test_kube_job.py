"""The Kubernetes batch/v1 Job controller: ``TestControllerSyncJob``
(``pkg/controller/job/job_controller_test.go``) ported onto ``plan_job`` (one pass: counts of
pods by phase in, creations, deletions and verdict out), then Jobs in the simulator."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from berth.api.objects import Pod, PodPhase
from berth.api.workloads import KubeJobSpec
from berth.controllers.kube_job import INDEX_KEY, backoff, plan_job
from tests.controllers.workload_docs import load, template, workload

PHASES = {
    "pending": PodPhase.PENDING,
    "active": PodPhase.RUNNING,
    "succeeded": PodPhase.SUCCEEDED,
    "failed": PodPhase.FAILED,
}


def spec(
    parallelism: int, completions: int | None, backoff_limit: int, mode: str = "NonIndexed"
) -> KubeJobSpec:
    base = load(workload("batch/v1", "Job", "foobar", template=template("foobar")))[0].spec
    return replace(
        base,
        parallelism=parallelism,
        completions=completions,
        backoff_limit=backoff_limit,
        completion_mode=mode,
    )


def pods_of(counts: dict[str, int], indexed: list[tuple[str, str]]) -> list[Pod]:
    pods = []
    for phase, count in counts.items():
        for i in range(count):
            pods.append(Pod(f"{phase}-{i}", uid=f"{phase}-{i}", phase=PHASES[phase]))
    for i, (index, phase) in enumerate(indexed):
        pod = Pod(f"indexed-{i}", uid=f"indexed-{i}", phase=PHASES[phase])
        if index != "invalid":
            pod.annotations[INDEX_KEY] = index
        pods.append(pod)
    return pods


# name: (parallelism, completions (None: work queue), backoffLimit, pods by phase, indexed pods,
#        expected creations (count or indexes), deletions, active, succeeded, verdict)
CASES: dict[str, tuple[Any, ...]] = {
    "job start": (2, 5, 6, {}, None, 2, 0, 2, 0, ""),
    "WQ job start": (2, None, 6, {}, None, 2, 0, 2, 0, ""),
    "pending pods": (2, 5, 6, {"pending": 2}, None, 0, 0, 2, 0, ""),
    "correct # of pods": (2, 5, 6, {"active": 2}, None, 0, 0, 2, 0, ""),
    "WQ job: correct # of pods": (2, None, 6, {"active": 2}, None, 0, 0, 2, 0, ""),
    "too few active pods": (2, 5, 6, {"active": 1, "succeeded": 1}, None, 1, 0, 2, 1, ""),
    "too few active pods with a dynamic job": (2, None, 6, {"active": 1}, None, 1, 0, 2, 0, ""),
    "too many active pods": (2, 5, 6, {"active": 3}, None, 0, 1, 2, 0, ""),
    "new failed pod": (2, 5, 6, {"active": 1, "failed": 1}, None, 1, 0, 2, 0, ""),
    "job finish": (2, 5, 6, {"succeeded": 5}, None, 0, 0, 0, 5, "Complete"),
    "WQ job finishing": (2, None, 6, {"active": 1, "succeeded": 1}, None, 0, 0, 1, 1, ""),
    "WQ job all finished": (2, None, 6, {"succeeded": 2}, None, 0, 0, 0, 2, "Complete"),
    "WQ job all finished despite one failure": (
        2,
        None,
        6,
        {"succeeded": 1, "failed": 1},
        None,
        0,
        0,
        0,
        1,
        "Complete",
    ),
    "more active pods than parallelism": (2, 5, 6, {"active": 10}, None, 0, 8, 2, 0, ""),
    "more active pods than remaining completions": (
        3,
        4,
        6,
        {"active": 3, "succeeded": 2},
        None,
        0,
        1,
        2,
        2,
        "",
    ),
    "status change": (2, 5, 6, {"active": 2, "succeeded": 2}, None, 0, 0, 2, 2, ""),
    "too many job failures": (2, 5, 0, {"failed": 1}, None, 0, 0, 0, 0, "Failed"),
    "indexed job start": (2, 5, 6, {}, [], [0, 1], 0, 2, 0, ""),
    "indexed job completed": (
        2,
        3,
        6,
        {},
        [("0", "succeeded"), ("1", "failed"), ("1", "succeeded"), ("2", "succeeded")],
        [],
        0,
        0,
        3,
        "Complete",
    ),
    "indexed job repeated completed index": (
        2,
        3,
        6,
        {},
        [("0", "succeeded"), ("1", "succeeded"), ("1", "succeeded")],
        [2],
        0,
        1,
        2,
        "",
    ),
    "indexed job some running and completed pods": (
        8,
        20,
        6,
        {},
        [
            ("0", "active"),
            ("2", "succeeded"),
            ("3", "pending"),
            ("4", "succeeded"),
            ("5", "succeeded"),
            ("7", "succeeded"),
            ("8", "succeeded"),
            ("9", "succeeded"),
        ],
        [1, 6, 10, 11, 12, 13],
        0,
        8,
        6,
        "",
    ),
    "indexed job some failed pods": (
        3,
        4,
        6,
        {},
        [("0", "failed"), ("1", "pending"), ("2", "failed")],
        [0, 2],
        0,
        3,
        0,
        "",
    ),
    "indexed job some pods without index": (
        2,
        5,
        6,
        {"active": 1, "succeeded": 1, "failed": 1},
        [
            ("invalid", "active"),
            ("invalid", "succeeded"),
            ("invalid", "failed"),
            ("invalid", "pending"),
            ("0", "succeeded"),
            ("1", "active"),
            ("2", "active"),
        ],
        [],
        3,
        2,
        1,
        "",
    ),
    "indexed job repeated indexes": (
        5,
        5,
        6,
        {"succeeded": 1, "failed": 1},
        [
            ("invalid", "active"),
            ("0", "succeeded"),
            ("1", "active"),
            ("2", "active"),
            ("2", "pending"),
        ],
        [],
        2,
        2,
        1,
        "",
    ),
    "indexed job with indexes outside of range": (
        2,
        5,
        6,
        {},
        [
            ("0", "succeeded"),
            ("5", "active"),
            ("6", "succeeded"),
            ("7", "pending"),
            ("8", "failed"),
        ],
        [],
        2,
        0,
        1,
        "",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_sync_job(case: tuple[Any, ...]) -> None:
    (
        parallelism,
        completions,
        limit,
        counts,
        indexed,
        creations,
        deletions,
        active,
        succeeded,
        verdict,
    ) = case
    mode = "NonIndexed" if indexed is None else "Indexed"
    pods = pods_of(counts, indexed or [])
    failed = sum(1 for p in pods if p.phase == PodPhase.FAILED)
    plan = plan_job(spec(parallelism, completions, limit, mode), pods, failed, expired=False)
    got_creations = plan.create if indexed is None else plan.indexes
    assert (got_creations, len(plan.delete), plan.active, plan.succeeded) == (
        creations,
        deletions,
        active,
        succeeded,
    )
    assert plan.verdict.partition(":")[0] == verdict


def test_deadline_fails_the_job_and_deletes_its_pods() -> None:
    pods = pods_of({"active": 2}, [])
    plan = plan_job(spec(2, 5, 6), pods, 0, expired=True)
    assert plan.verdict.startswith("Failed: DeadlineExceeded") and len(plan.delete) == 2


@pytest.mark.parametrize(
    "failures,seconds", [(0, 0), (1, 10), (2, 20), (3, 40), (7, 600), (20, 600)]
)
def test_pod_failure_backoff(failures: int, seconds: float) -> None:
    assert backoff(failures) == seconds
