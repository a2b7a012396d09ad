"""What berth writes for a PyTorchJob, without a cluster: the environment, labels and condition
rules of the training operator (v1.8). The elastic table is the operator's own
``TestElasticGenerate`` (pkg/controller.v1/pytorch/elastic_test.go), ported."""

from __future__ import annotations

from typing import Any

import pytest

from berth.k8s import pytorch


def job(spec: dict[str, Any], name: str = "test") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def worker(replicas: int = 1, **container: Any) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "x", **container}]}},
    }


ELASTIC_CASES = [
    # (name, elasticPolicy, expected variables; None: none)
    ("Without ElasticPolicy", None, None),
    (
        "With ElasticPolicy",
        {
            "minReplicas": 1,
            "maxReplicas": 3,
            "rdzvBackend": "c10d",
            "rdzvPort": 1234,
            "rdzvHost": "localhost",
            "rdzvId": "rdzv-id",
            "rdzvConf": [
                {"key": "rdzv-conf-name", "value": "rdzv-conf-value"},
                {"key": "rdzv-conf-name-1", "value": "rdzv-conf-value-1"},
            ],
            "maxRestarts": 3,
        },
        {
            "PET_MAX_RESTARTS": "3",
            "PET_RDZV_BACKEND": "c10d",
            "PET_RDZV_ENDPOINT": "localhost:1234",
            "PET_RDZV_ID": "rdzv-id",
            "PET_RDZV_CONF": "rdzv-conf-name=rdzv-conf-value,rdzv-conf-name-1=rdzv-conf-value-1",
            "PET_NNODES": "1:3",
        },
    ),
    # berth's own: the defaults the operator fills in
    (
        "defaults",
        {"minReplicas": 2, "maxReplicas": 4},
        {
            "PET_RDZV_BACKEND": "c10d",
            "PET_RDZV_ENDPOINT": "test-worker-0:23456",
            "PET_NNODES": "2:4",
        },
    ),
    ("min alone is max too", {"minReplicas": 2}, None),
    ("neither: the Worker replicas", {}, None),
]


@pytest.mark.parametrize(
    ("name", "policy", "expected"), ELASTIC_CASES, ids=[c[0] for c in ELASTIC_CASES]
)
def test_elastic_variables(name: str, policy: dict[str, Any] | None, expected: dict | None):
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Worker": worker(3)}}
    if policy is not None:
        spec["elasticPolicy"] = policy
    variables = pytorch.elastic_env(job(spec))
    names = [v["name"] for v in variables]
    assert len(names) == len(set(names))
    got = {v["name"]: v["value"] for v in variables}
    if name == "min alone is max too":
        assert got["PET_NNODES"] == "2:2"
    elif name == "neither: the Worker replicas":
        assert got["PET_NNODES"] == "3"
    elif expected is None:
        assert variables == []
    else:
        assert got == expected


def test_a_master_sets_the_address_world_size_and_ranks():
    raw = job({"pytorchReplicaSpecs": {"Master": worker(1), "Worker": worker(3)}})
    ranks = {("master", 0): "0", ("worker", 0): "1", ("worker", 2): "3"}
    for (rtype, index), rank in ranks.items():
        got = {v["name"]: v["value"] for v in pytorch.env(raw, rtype, index)}
        assert got["MASTER_ADDR"] == got["PET_MASTER_ADDR"] == "test-master-0"
        assert got["MASTER_PORT"] == got["PET_MASTER_PORT"] == "23456"
        assert got["WORLD_SIZE"] == "4" and got["PET_NNODES"] == "4"
        assert got["RANK"] == got["PET_NODE_RANK"] == rank
        assert got["PET_NPROC_PER_NODE"] == "auto"


def test_nproc_per_node_multiplies_the_world_size_and_a_named_port_is_kept():
    port = [{"name": "pytorchjob-port", "containerPort": 29500}]
    spec = {
        "nprocPerNode": "4",
        "pytorchReplicaSpecs": {"Master": worker(1, ports=port), "Worker": worker(1)},
    }
    got = {v["name"]: v["value"] for v in pytorch.env(job(spec), "worker", 0)}
    assert got["WORLD_SIZE"] == "8" and got["PET_NPROC_PER_NODE"] == "4"
    assert got["MASTER_PORT"] == "29500"


def test_without_a_master_there_is_no_rank_and_worker_0_is_the_master_role():
    raw = job({"pytorchReplicaSpecs": {"worker": worker(2)}})  # any case, as defaulting reads
    got = {v["name"] for v in pytorch.env(raw, "worker", 1)}
    assert not {"MASTER_ADDR", "RANK", "WORLD_SIZE"} & got
    specs = pytorch.replica_specs(raw)
    assert pytorch.is_master_role(specs, "worker", 0)
    assert not pytorch.is_master_role(specs, "worker", 1)


def test_the_pod_keeps_its_template_and_takes_the_operators_fields():
    spec = {"pytorchReplicaSpecs": {"Worker": {**worker(2, env=[{"name": "A", "value": "1"}])}}}
    spec["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    spec["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"] = {"labels": {"app": "t"}}
    owner = [{"kind": "PyTorchJob", "name": "test"}]
    pod = pytorch.pod_manifest(
        job(spec), "worker", 1, "test-worker-1", {"x": "y"}, {"a": "b"}, "berth", owner
    )
    assert pod["metadata"]["labels"] == {
        "x": "y",
        "app": "t",
        pytorch.OPERATOR_NAME_LABEL: "pytorchjob-controller",
        pytorch.JOB_NAME_LABEL: "test",
        pytorch.REPLICA_TYPE_LABEL: "worker",
        pytorch.REPLICA_INDEX_LABEL: "1",
    }
    assert pod["metadata"]["annotations"] == {"a": "b", "volcano.sh/task-spec": "worker"}
    assert pod["spec"]["restartPolicy"] == "Never"  # ExitCode: the operator restarts
    assert pod["spec"]["schedulerName"] == "berth"
    (container,) = pod["spec"]["containers"]
    assert container["env"][0] == {"name": "A", "value": "1"}
    assert container["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    # the job's own template is left as it was
    assert "ports" not in spec["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


def test_conditions_follow_the_operators_rules():
    conditions: list[dict[str, Any]] = []
    conditions = pytorch.set_condition(conditions, "Created", "True", "created", 0.0)
    conditions = pytorch.set_condition(conditions, "Running", "True", "running", 1.0)
    same = pytorch.set_condition(conditions, "Running", "True", "running", 2.0)
    assert same is conditions  # nothing changes when the condition already says it
    done = pytorch.set_condition(conditions, "Succeeded", "True", "done", 3.0)
    assert [(c["type"], c["status"]) for c in done] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    assert done[-1]["reason"] == "PyTorchJobSucceeded"
    failed = pytorch.set_condition(conditions, "Failed", "True", "x", 3.0)
    assert pytorch.set_condition(failed, "Running", "True", "again", 4.0) is failed
    restarting = pytorch.set_condition(conditions, "Restarting", "True", "r", 3.0)
    assert [c["type"] for c in restarting] == ["Created", "Restarting"]


def test_the_selector_is_the_replica_types_labels():
    assert pytorch.selector("mnist", "Worker") == (
        "training.kubeflow.org/job-name=mnist,"
        "training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=worker"
    )
