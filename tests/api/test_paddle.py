"""PaddlePaddle EDL TrainingJob manifests: master, parameter-server and trainer tasks named as
EDL names its pods, the elastic range from the trainers' min-instance and max-instance, bad
specs refused with one line each, and a simulated job that ends at the hand-computed time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from berth.api.manifest import cross_check, load_file, parse_documents
from berth.api.objects import JobPhase, PodPhase
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation
from tests.builders import node_doc, timed_pod_doc

EXAMPLE = Path(__file__).parents[2] / "examples" / "elastic" / "paddle-trainingjob.yaml"


def training_job(spec_extra: dict[str, Any], low: int = 2, high: int = 6) -> dict[str, Any]:
    trainer = {
        "entrypoint": "python train.py",
        "min-instance": low,
        "max-instance": high,
        "resources": {"requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}},
    }
    return {
        "apiVersion": "paddlepaddle.org/v1",
        "kind": "TrainingJob",
        "metadata": {"name": "mnist", "annotations": {"berth.io/duration": "3600"}},
        "spec": {"image": "paddle", "fault_tolerant": True, "trainer": trainer, **spec_extra},
    }


PSERVER = {"min-instance": 2, "max-instance": 2, "resources": {"requests": {"cpu": "2"}}}


def parsed(doc: dict[str, Any]):
    m = parse_documents([doc], "test")
    assert not m.errors, [str(p) for p in m.errors]
    (job,) = m.jobs
    return m, job


def test_an_elastic_training_job() -> None:
    _, job = parsed(training_job({}))
    assert [(t.name, t.replicas) for t in job.tasks] == [("master", 1), ("trainer", 6)]
    assert [t.template.name for t in job.tasks] == ["mnist-master", "mnist-trainer"]
    assert job.min_available == 3 and job.min_success == 3
    assert job.annotations["berth.io/elastic"] == "true"
    assert job.elastic is not None
    assert (job.elastic.min_workers, job.elastic.max_workers, job.elastic.reference) == (3, 7, 7)
    assert job.elastic.duration == 3600
    assert all(t.template.duration is None for t in job.tasks)
    trainer = job.tasks[1].template
    assert trainer.requests["nvidia.com/gpu"] == 1000 and trainer.requests["cpu"] == 4000
    assert trainer.containers == (("trainer", "paddle"),)
    assert trainer.labels == {"paddle-job": "mnist"}


def test_parameter_servers_and_a_master_join_the_gang() -> None:
    _, job = parsed(training_job({"pserver": PSERVER, "master": {"resources": {}}}))
    assert [(t.name, t.replicas) for t in job.tasks] == [
        ("master", 1),
        ("pserver", 2),
        ("trainer", 6),
    ]
    assert job.min_available == 1 + 2 + 2 and job.min_success == 5
    assert job.elastic is not None
    assert (job.elastic.min_workers, job.elastic.max_workers, job.elastic.reference) == (5, 9, 9)
    assert job.tasks[1].template.requests["cpu"] == 2000
    assert job.tasks[0].template.requests == {"pods": 1}  # a master that requests nothing


def test_without_a_range_it_is_a_gang_of_all_its_pods() -> None:
    doc = training_job({"pserver": PSERVER, "fault_tolerant": False}, low=3, high=3)
    _, job = parsed(doc)
    assert [(t.name, t.replicas) for t in job.tasks] == [("pserver", 2), ("trainer", 3)]
    assert job.min_available == 5 and job.min_success is None and job.elastic is None
    assert "berth.io/elastic" not in job.annotations
    assert [t.template.duration for t in job.tasks] == [3600, 3600]


def test_the_old_gpu_name_and_limits_without_requests() -> None:
    doc = training_job({})
    doc["spec"]["image"] = ""
    doc["spec"]["trainer"]["resources"] = {
        "limits": {"alpha.kubernetes.io/nvidia-gpu": "2", "cpu": "8", "memory": "4Gi"},
        "requests": {"cpu": "6"},
    }
    _, job = parsed(doc)
    trainer = job.tasks[1].template
    assert trainer.requests == {
        "nvidia.com/gpu": 2000,
        "cpu": 6000,
        "memory": 4 * 2**30,
        "pods": 1,
    }
    assert trainer.containers == (("trainer", "paddlepaddle/paddlecloud-job"),)


def test_fields_berth_does_not_use_are_accepted_warned_about_or_refused() -> None:
    doc = training_job({"port": 7164, "passes": 10, "NodeSelector": {"a": "b"}, "speed": 1})
    doc["spec"]["trainer"]["workspace"] = "/home/job-1/"
    m = parse_documents([doc], "test")
    assert [str(p) for p in m.warnings] == [
        "test: TrainingJob/mnist: spec.NodeSelector: not supported by berth, ignored",
    ]
    assert [str(p) for p in m.errors] == ["test: TrainingJob/mnist: spec.speed: unknown field"]


def _with(path: str, value: Any) -> dict[str, Any]:
    doc = training_job({"pserver": dict(PSERVER)})
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize(
    "path,value,message",
    [
        ("spec.trainer.min-instance", 7,
         "spec.trainer.min-instance: 7 exceeds max-instance (6)"),
        ("spec.trainer.min-instance", 0, "spec.trainer.min-instance: must be >= 1 (got 0)"),
        ("spec.trainer.max-instance", "6", 'spec.trainer.max-instance: "6" is not an integer'),
        ("spec.trainer", None, "spec.trainer: field required"),
        ("spec.trainer.max-instance", None, "spec.trainer.max-instance: field required"),
        ("spec.fault_tolerant", False, "spec.fault_tolerant: trainers between 2 and 6 need "
         "fault_tolerant: true (EDL scales only fault-tolerant jobs)"),
        ("spec.fault_tolerant", "yes",
         'spec.fault_tolerant: "yes" is not a boolean (expected true or false)'),
        ("spec.pserver.min-instance", 3, "spec.pserver.min-instance: 3 exceeds max-instance (2)"),
        ("spec.pserver.resources", {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
         'spec.pserver.resources.requests.cpu: must be <= its limit 1 (got "2")'),
        ("spec.trainer.resources", {"requests": {"cpu": "lots"}},
         'spec.trainer.resources.requests.cpu: "lots" is not a quantity (expected e.g. 500m, '
         "2, 4Gi)"),
        ("spec.trainer.resources",
         {"limits": {"nvidia.com/gpu": "1", "alpha.kubernetes.io/nvidia-gpu": "1"}},
         "spec.trainer.resources.limits.alpha.kubernetes.io/nvidia-gpu: given together with "
         "nvidia.com/gpu (expected one of the two)"),
        ("metadata.annotations", {},
         "metadata.annotations.berth.io/duration: an elastic job needs its run time at its 9 "
         "workers"),
    ],
)  # fmt: skip
def test_bad_training_jobs(path, value, message) -> None:
    m = parse_documents([_with(path, value)], "test")
    assert [str(p) for p in m.errors] == [f"test: TrainingJob/mnist: {message}"]


def test_a_master_without_fault_tolerance_is_ignored_with_a_warning() -> None:
    doc = training_job({"fault_tolerant": False, "master": {}}, low=2, high=2)
    m, job = parsed(doc)
    assert [t.name for t in job.tasks] == ["trainer"]
    assert [str(p) for p in m.warnings] == [
        "test: TrainingJob/mnist: spec.master: EDL runs a master only for a fault_tolerant job, "
        "ignored"
    ]


def test_the_example_loads() -> None:
    m = load_file(EXAMPLE)
    assert not m.problems, [str(p) for p in m.problems]
    (job,) = m.jobs
    assert job.elastic is not None


# -- simulated ------------------------------------------------------------------------------------


def node(name: str) -> dict[str, Any]:
    return node_doc(name, **{"nvidia.com/gpu": "1"})


def gpu_blocker(name: str, on: str, seconds: int) -> dict[str, Any]:
    return timed_pod_doc(name, on, seconds, {"nvidia.com/gpu": "1"})


def test_a_training_job_that_gains_trainers_ends_at_the_hand_computed_time() -> None:
    # Four one-GPU nodes, two of them taken until t=300. The job: a master and a pserver
    # (one cpu each), 2..4 one-GPU trainers, 1000 s with all 6 pods, linear 0.9. From t=1 the
    # gang of 4 runs at speed(4) = 3.24; at t=300 two trainers join: a 30 s pause, then the
    # rest of the work at speed(6).
    job = training_job({"pserver": {"min-instance": 1, "resources": {"requests": {"cpu": "1"}}},
                        "master": {"resources": {"requests": {"cpu": "1"}}}},
                       low=2, high=4)  # fmt: skip
    job["metadata"]["annotations"] = {"berth.io/duration": "1000"}
    job["spec"]["trainer"]["resources"] = {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}
    docs = [node(f"n{i}") for i in range(4)]
    docs += [gpu_blocker("b2", "n2", 300), gpu_blocker("b3", "n3", 300), job]
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config({"simulation": {"startLatency": 0}}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    result = Simulation(manifests, config, sim_config=sim).run()
    (done,) = result.jobs
    assert done.phase == JobPhase.COMPLETED and done.resizes == 1
    pods = sorted((p for p in result.pods if p.owner == done.key), key=lambda p: p.name)
    assert [p.name for p in pods] == [
        "mnist-master-0",
        "mnist-pserver-0",
        "mnist-trainer-0",
        "mnist-trainer-1",
        "mnist-trainer-2",
        "mnist-trainer-3",
    ]
    assert {p.phase for p in pods} == {PodPhase.SUCCEEDED}
    assert sorted(p.start_time for p in pods) == [1, 1, 1, 1, 300, 300]

    def speed(n: int) -> float:
        return n * 0.9 ** math.log2(n)

    end = 330 + (1000 * speed(6) - speed(4) * 299) / speed(6)
    assert [p.end_time for p in pods] == [pytest.approx(end)] * 6
    assert result.end_time == pytest.approx(end)
