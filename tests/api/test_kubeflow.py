"""Kubeflow PyTorchJob manifests: tasks and pod names as the training operator names them,
the elastic range from elasticPolicy, and bad specs refused with one line each."""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.manifest import parse_documents

CONTAINER = [{"name": "pytorch", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]


def pytorch_job(spec_extra: dict[str, Any], workers: int = 4, master: bool = True) -> dict:
    specs: dict[str, Any] = {
        "Worker": {"replicas": workers, "template": {"spec": {"containers": CONTAINER}}}
    }
    if master:
        specs["Master"] = {"replicas": 1, "template": {"spec": {"containers": CONTAINER}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llama", "annotations": {"berth.io/duration": "3600"}},
        "spec": {"pytorchReplicaSpecs": specs, **spec_extra},
    }  # fmt: skip


def test_an_elastic_pytorch_job() -> None:
    m = parse_documents(
        [pytorch_job({"elasticPolicy": {"minReplicas": 2, "maxReplicas": 6}})], "test"
    )
    assert not m.errors, [str(p) for p in m.errors]
    (job,) = m.jobs
    assert [(t.name, t.replicas) for t in job.tasks] == [("master", 1), ("worker", 6)]
    assert job.min_available == 3 and job.min_success == 3
    assert job.elastic is not None
    assert (job.elastic.min_workers, job.elastic.max_workers, job.elastic.reference) == (3, 7, 5)
    assert job.elastic.duration == 3600
    assert all(t.template.duration is None for t in job.tasks)


def test_without_an_elastic_policy_it_is_a_gang_of_all_its_pods() -> None:
    m = parse_documents([pytorch_job({}, master=False)], "test")
    (job,) = m.jobs
    assert [(t.name, t.replicas) for t in job.tasks] == [("worker", 4)]
    assert job.min_available == 4 and job.elastic is None
    assert job.tasks[0].template.duration == 3600


@pytest.mark.parametrize(
    "extra,workers,master,message",
    [
        ({"elasticPolicy": {"minReplicas": 5, "maxReplicas": 3}}, 4, True,
         "spec.elasticPolicy.minReplicas: 5 exceeds maxReplicas (3)"),
        ({"elasticPolicy": {"minReplicas": 1, "maxReplicas": 3}}, 4, True,
         "spec.pytorchReplicaSpecs.Worker.replicas: 4 is outside elasticPolicy's 1..3"),
    ],
)  # fmt: skip
def test_bad_elastic_policies(extra, workers, master, message) -> None:
    m = parse_documents([pytorch_job(extra, workers, master)], "test")
    assert any(message in str(p) for p in m.errors), [str(p) for p in m.errors]


def test_a_pytorch_job_needs_workers() -> None:
    doc = pytorch_job({})
    del doc["spec"]["pytorchReplicaSpecs"]["Worker"]
    m = parse_documents([doc], "test")
    assert any("a PyTorchJob needs a Worker replica spec" in str(p) for p in m.errors)
