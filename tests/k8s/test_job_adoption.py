"""Which pod name a restarted berth's Volcano Job controller gives each slot first: the
latest its predecessor made (adopted), or the next when that one is terminating."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.objects import BatchJob
from berth.k8s.job_adoption import attempts_made


def pod(name: str, task: str = "worker", index: str | None = None, **meta: Any) -> dict[str, Any]:
    index = index if index is not None else name.split("-")[-1].split(".")[0]
    return {
        "metadata": {
            "name": name,
            "namespace": meta.pop("namespace", "default"),
            "labels": {
                "volcano.sh/job-name": meta.pop("job", "train"),
                "volcano.sh/task-spec": task,
            },
            "annotations": {"volcano.sh/task-index": index},
            **meta,
        }
    }


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([], {}),
        # The first pods: the slot's next (first here) pod takes name .0, i.e. the same.
        ([pod("train-worker-0"), pod("train-worker-1")], {("worker", 0): 1, ("worker", 1): 1}),
        # Replaced twice: the latest is .2, whatever order the API lists them in.
        (
            [pod("train-worker-0.2"), pod("train-worker-0"), pod("train-worker-0.1")],
            {("worker", 0): 3},
        ),
        # The latest is terminating: its name is not free, the next is .2.
        (
            [pod("train-worker-0.1", deletionTimestamp="2026-11-27T12:00:00Z")],
            {("worker", 0): 3},
        ),
        # Another job's, another namespace's and a stranger's name are not this job's.
        (
            [
                pod("other-worker-0", job="other"),
                pod("train-worker-0", namespace="team"),
                pod("train-worker-0-x"),
                pod("train-worker-0.a"),
            ],
            {},
        ),
        # The task comes from the label; the index from the annotation.
        ([pod("train-ps-3", task="ps", index="3")], {("ps", 3): 1}),
    ],
)
def test_attempts_made(pods, expected) -> None:
    assert attempts_made(BatchJob(name="train", namespace="default"), pods) == expected
