"""Kubeflow's PyTorchJob in ``berth serve --kubeflow`` on the real API server: the CRD and RBAC
of deploy/kubeflow, pods, Services, PodGroup and status as the training operator (v1.8) makes
them, the rendezvous variables of an elastic job, its target of workers written into its
Worker replicas under ``--scaling edl``, a restart adopting what berth made, and nothing done
without the flag."""

from __future__ import annotations

import threading
from typing import Any

import yaml

from berth.controllers.scaling.config import ScalingConfig
from berth.k8s import pytorch
from berth.k8s.kinds import PYTORCH_JOB
from berth.k8s.server import Server
from tests.k8s.harness import (
    Cluster,
    config,
    fast_options,
    node_doc,
    pod_doc,
    serving,
    settle,
    wait_for,
)
from tests.k8s.test_deploy import DEPLOY, _granted, _verb

KUBEFLOW = DEPLOY / "kubeflow"


def replica(replicas: int, cpu: str = "1", duration: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if duration is not None:
        meta["annotations"] = {"berth.io/duration": duration}  # the fake kubelet ends it then
    return {
        "replicas": replicas,
        "restartPolicy": "OnFailure",
        "template": {
            "metadata": meta,
            "spec": {
                "schedulerName": "berth",
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "pytorch/pytorch:2.4.0",
                        "resources": {"requests": {"cpu": cpu}},
                    }
                ],
            },
        },
    }


def pytorch_job_doc(
    name: str = "mnist",
    workers: int = 2,
    master: bool = True,
    elastic: dict[str, Any] | None = None,
    cpu: str = "1",
    duration: str | None = None,
) -> dict[str, Any]:
    specs = {"Worker": replica(workers, cpu, duration)}
    if master:
        specs["Master"] = replica(1, cpu, duration)
    spec: dict[str, Any] = {"pytorchReplicaSpecs": specs}
    if elastic is not None:
        spec["elasticPolicy"] = elastic
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def kubeflow_options(**overrides: Any):
    return fast_options(kubeflow=True, **overrides)


def pods_of(cluster: Cluster, job: str = "mnist") -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in cluster.objects("Pod")
        if (p["metadata"].get("labels") or {}).get(pytorch.JOB_NAME_LABEL) == job
        and not p["metadata"].get("deletionTimestamp")
    }


def job_of(cluster: Cluster, name: str = "mnist") -> dict[str, Any]:
    (job,) = [j for j in cluster.objects("PyTorchJob") if j["metadata"]["name"] == name]
    return job


def conditions(cluster: Cluster, name: str = "mnist") -> dict[str, str]:
    status = job_of(cluster, name).get("status") or {}
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


def env(pod: dict[str, Any]) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {item["name"]: item.get("value", "") for item in container.get("env") or []}


def services(cluster: Cluster) -> dict[str, dict[str, Any]]:
    answer = cluster.admin.request("GET", "/api/v1/namespaces/default/services")
    return {
        s["metadata"]["name"]: s
        for s in answer["items"]
        if pytorch.JOB_NAME_LABEL in (s["metadata"].get("labels") or {})
    }


def test_the_crd_is_kubeflows_pytorch_job_served_at_v1():
    (crd,) = [
        d for d in yaml.safe_load_all((KUBEFLOW / "kubeflow.org_pytorchjobs.yaml").read_text()) if d
    ]
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{PYTORCH_JOB.plural}.{PYTORCH_JOB.group}"
    assert spec["group"] == PYTORCH_JOB.group and spec["names"]["kind"] == "PyTorchJob"
    (version,) = spec["versions"]
    assert version["name"] == PYTORCH_JOB.version and version["served"] and version["storage"]
    scale = version["subresources"]["scale"]
    assert scale["specReplicasPath"] == ".spec.pytorchReplicaSpecs.Worker.replicas"
    assert scale["statusReplicasPath"] == ".status.replicaStatuses.Worker.active"
    assert "status" in version["subresources"]


def test_a_pytorch_job_runs_as_the_training_operator_runs_it(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), pytorch_job_doc(duration="3"))
    with serving(cluster, config(), kubeflow_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: conditions(cluster).get("Running") == "True")
        job = job_of(cluster)
        uid = job["metadata"]["uid"]
        pods = pods_of(cluster)
        assert sorted(pods) == ["mnist-master-0", "mnist-worker-0", "mnist-worker-1"]
        for name, pod in pods.items():
            meta = pod["metadata"]
            rtype, index = name.split("-")[1], name.split("-")[2]
            labels = meta["labels"]
            assert labels[pytorch.JOB_NAME_LABEL] == "mnist"
            assert labels[pytorch.OPERATOR_NAME_LABEL] == "pytorchjob-controller"
            assert labels[pytorch.REPLICA_TYPE_LABEL] == rtype
            assert labels[pytorch.REPLICA_INDEX_LABEL] == index
            assert labels.get(pytorch.JOB_ROLE_LABEL) == ("master" if rtype == "master" else None)
            (owner,) = meta["ownerReferences"]
            assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
                "kubeflow.org/v1",
                "PyTorchJob",
                uid,
            )
            assert owner["controller"] is True
            assert meta["annotations"]["scheduling.k8s.io/group-name"] == "mnist"
            assert pod["spec"]["restartPolicy"] == "OnFailure"
            assert pod["spec"]["nodeName"] in ("n1", "n2")
            (container,) = pod["spec"]["containers"]
            assert container["ports"] == [
                {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}
            ]
            rank = 0 if rtype == "master" else int(index) + 1
            assert env(pod) == {
                "PYTHONUNBUFFERED": "1",
                "MASTER_PORT": "23456",
                "PET_MASTER_PORT": "23456",
                "MASTER_ADDR": "mnist-master-0",
                "PET_MASTER_ADDR": "mnist-master-0",
                "WORLD_SIZE": "3",
                "RANK": str(rank),
                "PET_NODE_RANK": str(rank),
                "PET_NPROC_PER_NODE": "auto",
                "PET_NNODES": "3",
            }
        svc = services(cluster)
        assert sorted(svc) == sorted(pods)
        master = svc["mnist-master-0"]
        assert master["spec"]["clusterIP"] == "None"
        assert master["spec"]["selector"] == {
            pytorch.OPERATOR_NAME_LABEL: "pytorchjob-controller",
            pytorch.JOB_NAME_LABEL: "mnist",
            pytorch.REPLICA_TYPE_LABEL: "master",
            pytorch.REPLICA_INDEX_LABEL: "0",
        }
        assert [(p["name"], p["port"]) for p in master["spec"]["ports"]] == [
            ("pytorchjob-port", 23456)
        ]
        assert master["metadata"]["ownerReferences"][0]["uid"] == uid
        (group,) = cluster.objects("PodGroup")
        assert group["metadata"]["name"] == "mnist" and group["spec"]["minMember"] == 3
        assert group["metadata"]["ownerReferences"][0]["uid"] == uid
        status = job_of(cluster)["status"]
        assert status["replicaStatuses"]["Master"] == {
            "active": 1,
            "selector": pytorch.selector("mnist", "Master"),
        }
        assert status["replicaStatuses"]["Worker"]["active"] == 2
        assert status["startTime"]

        wait_for(lambda: conditions(cluster).get("Succeeded") == "True", timeout=20)
        settle(server)
    status = job_of(cluster)["status"]
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Running", "False", "PyTorchJobRunning"),
        ("Succeeded", "True", "PyTorchJobSucceeded"),
    ]
    assert status["completionTime"]
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2


def test_an_elastic_job_gets_the_rendezvous_variables(cluster: Cluster):
    elastic = {"minReplicas": 1, "maxReplicas": 3, "rdzvBackend": "c10d", "maxRestarts": 5}
    cluster.add(node_doc("n1", cpu="8"), pytorch_job_doc(workers=2, master=False, elastic=elastic))
    with serving(cluster, config(), kubeflow_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: len(pods_of(cluster)) == 3)
        pods = pods_of(cluster)
    assert sorted(pods) == ["mnist-worker-0", "mnist-worker-1", "mnist-worker-2"]
    for name, pod in pods.items():
        assert env(pod) == {
            "PYTHONUNBUFFERED": "1",
            "PET_NPROC_PER_NODE": "auto",
            "PET_RDZV_ENDPOINT": "mnist-worker-0:23456",
            "PET_RDZV_BACKEND": "c10d",
            "PET_NNODES": "1:3",
            "PET_MAX_RESTARTS": "5",
        }
        role = pod["metadata"]["labels"].get(pytorch.JOB_ROLE_LABEL)
        assert role == ("master" if name == "mnist-worker-0" else None)
    (group,) = cluster.objects("PodGroup")
    assert group["spec"]["minMember"] == 1


def test_the_scaling_policy_writes_its_target_into_the_worker_replicas(cluster: Cluster):
    elastic = {"minReplicas": 1, "maxReplicas": 4}
    cluster.add(
        node_doc("n1", cpu="4"),
        pytorch_job_doc(workers=1, master=True, elastic=elastic),
    )
    options = kubeflow_options(scaling=ScalingConfig("edl", 0.05, 1.0))
    with serving(cluster, config(), options) as server, cluster.kubelet():
        # the master and three workers fill the node's four cores
        wait_for(lambda: _worker_replicas(cluster) == 3, timeout=20)
        wait_for(
            lambda: len([p for p in pods_of(cluster).values() if p["spec"].get("nodeName")]) == 4
        )
        # a pod of one core arrives: one worker gives way, and the target follows
        cluster.add(pod_doc("other", cpu="1"))
        wait_for(lambda: _worker_replicas(cluster) == 2, timeout=20)
        settle(server)
        scale = cluster.admin.request("GET", PYTORCH_JOB.item("default", "mnist", "scale"))
        assert scale["spec"]["replicas"] == 2


def _worker_replicas(cluster: Cluster) -> int:
    return job_of(cluster)["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]


def test_a_restarted_server_adopts_its_pods_group_and_status(cluster: Cluster):
    cluster.add(node_doc("n1"), pytorch_job_doc(workers=1))
    with serving(cluster, config(), kubeflow_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: conditions(cluster).get("Running") == "True")
    before = {n: p["metadata"]["uid"] for n, p in pods_of(cluster).items()}
    created = job_of(cluster)["status"]["conditions"][0]
    with serving(cluster, config(), kubeflow_options()) as server, cluster.kubelet():
        settle(server)
    after = {n: p["metadata"]["uid"] for n, p in pods_of(cluster).items()}
    assert after == before
    assert [g["metadata"]["name"] for g in cluster.objects("PodGroup")] == ["mnist"]
    assert job_of(cluster)["status"]["conditions"][0] == created


def test_without_the_flag_pytorch_jobs_are_left_alone(cluster: Cluster):
    cluster.add(node_doc("n1"), pytorch_job_doc())
    with serving(cluster, config(), fast_options()) as server:
        settle(server)
    assert pods_of(cluster) == {} and "status" not in job_of(cluster)
    assert cluster.objects("PodGroup") == []


def test_rbac_allows_every_request_serve_kubeflow_makes(cluster: Cluster):
    elastic = {"minReplicas": 1, "maxReplicas": 2}
    cluster.add(node_doc("n1", cpu="3"), pytorch_job_doc(workers=1, master=True, elastic=elastic))
    options = kubeflow_options(scaling=ScalingConfig("edl", 0.05, 1.0))
    server = Server(cluster.client(), config(), options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with cluster.kubelet():
            wait_for(lambda: conditions(cluster).get("Running") == "True")
            wait_for(lambda: _worker_replicas(cluster) == 2, timeout=20)
            # Someone edits the job just before berth's next status write: a real 409, after
            # which berth reads the latest (get).
            cluster.api.before(
                "PUT",
                r"/pytorchjobs/mnist/status$",
                lambda: cluster.patch(
                    "PyTorchJob", "default", "mnist", {"metadata": {"labels": {"team": "a"}}}
                ),
            )
            cluster.add(pod_doc("other", cpu="1"))
            wait_for(lambda: _worker_replicas(cluster) == 1, timeout=20)
            settle(server)
    finally:
        server.stop()
        thread.join(10)
    conflicts = [path for method, path, status in cluster.api.answers if status == 409]
    assert any(path.endswith("/pytorchjobs/mnist/status") for path in conflicts), conflicts
    used = {_verb(method, path) for method, path in cluster.api.log}
    granted = _granted() | _granted(KUBEFLOW / "rbac.yaml")
    missing = used - granted
    assert not missing, missing
    forbidden = [(method, path) for method, path, status in cluster.api.answers if status == 403]
    assert not forbidden, forbidden
    kubeflow_only = _granted(KUBEFLOW / "rbac.yaml") - _granted()
    assert kubeflow_only <= used, kubeflow_only - used  # nothing granted that is not used
