"""PaddlePaddle EDL's TrainingJob in ``berth serve --paddle`` on the real API server: the CRD
and RBAC of deploy/paddle, pods as EDL's controller makes them (names, role labels, command,
ports, environment, owner), the job's PodGroup and EDL's status, trainers cut under
``--scaling edl``, a restart adopting what berth made, and nothing done without the flag."""

from __future__ import annotations

import threading
from typing import Any

import yaml

from berth.controllers.scaling.config import ScalingConfig
from berth.k8s.kinds import TRAINING_JOB
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

PADDLE = DEPLOY / "paddle"
ROLE_LABELS = ("paddle-job-master", "paddle-job-pserver", "paddle-job")


def training_job_doc(
    name: str = "ctr",
    trainers: tuple[int, int] = (2, 2),
    pservers: int = 1,
    fault_tolerant: bool = False,
    duration: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if duration is not None:
        meta["annotations"] = {"berth.io/duration": duration}  # the fake kubelet ends it then
    body: dict[str, Any] = {
        "image": "paddlepaddle/paddle:ctr",
        "fault_tolerant": fault_tolerant,
        "trainer": {
            "entrypoint": "python train.py",
            "workspace": "/workspace",
            "min-instance": trainers[0],
            "max-instance": trainers[1],
            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
        },
        **spec,
    }
    if pservers:
        body["pserver"] = {
            "min-instance": pservers,
            "max-instance": pservers,
            "resources": {"requests": {"cpu": "1"}},
        }
    return {
        "apiVersion": "paddlepaddle.org/v1",
        "kind": "TrainingJob",
        "metadata": meta,
        "spec": body,
    }


def paddle_options(**overrides: Any):
    return fast_options(paddle=True, **overrides)


def pods_of(cluster: Cluster, job: str = "ctr") -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in cluster.objects("Pod")
        if job in [(p["metadata"].get("labels") or {}).get(label) for label in ROLE_LABELS]
        and not p["metadata"].get("deletionTimestamp")
    }


def job_of(cluster: Cluster, name: str = "ctr") -> dict[str, Any]:
    (job,) = [j for j in cluster.objects("TrainingJob") if j["metadata"]["name"] == name]
    return job


def phase(cluster: Cluster, name: str = "ctr") -> str | None:
    return (job_of(cluster, name).get("status") or {}).get("phase")


def env(pod: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod["spec"]["containers"]
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def roles(cluster: Cluster) -> dict[str, dict[str, Any]]:
    status = job_of(cluster).get("status") or {}
    return {r["training_resource_type"]: r for r in status.get("replica_statuses") or []}


def test_the_crd_is_edls_training_job_served_at_v1():
    (crd,) = [
        d
        for d in yaml.safe_load_all((PADDLE / "paddlepaddle.org_trainingjobs.yaml").read_text())
        if d
    ]
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{TRAINING_JOB.plural}.{TRAINING_JOB.group}"
    assert spec["group"] == TRAINING_JOB.group and spec["names"]["kind"] == "TrainingJob"
    (version,) = spec["versions"]
    assert version["name"] == TRAINING_JOB.version and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    trainer = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["trainer"]
    assert {"min-instance", "max-instance", "entrypoint"} <= set(trainer["properties"])


def test_a_training_job_runs_as_edl_runs_it(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), training_job_doc(duration="3", port=7200))
    with serving(cluster, config(), paddle_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: phase(cluster) == "running")
        uid = job_of(cluster)["metadata"]["uid"]
        pods = pods_of(cluster)
        assert sorted(pods) == ["ctr-pserver-0", "ctr-trainer-0", "ctr-trainer-1"]
        for name, pod in pods.items():
            role = name.split("-")[1]
            meta = pod["metadata"]
            label = "paddle-job" if role == "trainer" else "paddle-job-pserver"
            assert meta["labels"][label] == "ctr"
            assert not {*ROLE_LABELS} - {label} & set(meta["labels"])
            (owner,) = meta["ownerReferences"]
            assert (owner["apiVersion"], owner["kind"], owner["uid"], owner["controller"]) == (
                "paddlepaddle.org/v1",
                "TrainingJob",
                uid,
                True,
            )
            assert meta["annotations"]["scheduling.k8s.io/group-name"] == "ctr"
            assert pod["spec"]["nodeName"] in ("n1", "n2")
            (container,) = pod["spec"]["containers"]
            assert container["name"] == role and container["image"] == "paddlepaddle/paddle:ctr"
            start = "start_trainer" if role == "trainer" else "start_pserver"
            assert container["command"][:2] == ["paddle_k8s", start]
            assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
                ("jobport-7200", 7200),
                ("jobport-7201", 7201),
            ]
            assert container["resources"]["requests"] == {"cpu": "1"}
            assert env(pod) == {
                "PADDLE_JOB_NAME": "ctr",
                "TRAINERS": "2",
                "PSERVERS": "1",
                "ENTRY": "python train.py",
                "TOPOLOGY": "python train.py",
                "TRAINER_PACKAGE": "/workspace",
                "PADDLE_INIT_PORT": "7200",
                "PADDLE_INIT_TRAINER_COUNT": "1",
                "PADDLE_INIT_PORTS_NUM": "1",
                "PADDLE_INIT_PORTS_NUM_FOR_SPARSE": "1",
                "PADDLE_INIT_NUM_GRADIENT_SERVERS": "2",
                "PADDLE_INIT_NUM_PASSES": "1",
                "PADDLE_INIT_USE_GPU": "0",
                "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
                "NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
                "POD_IP": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
            }
        assert pods["ctr-trainer-0"]["spec"]["restartPolicy"] == "Never"
        (group,) = cluster.objects("PodGroup")
        assert group["metadata"]["name"] == "ctr" and group["spec"]["minMember"] == 3
        assert group["metadata"]["ownerReferences"][0]["uid"] == uid
        answer = cluster.admin.request("GET", "/api/v1/namespaces/default/services")
        owned = [
            s["metadata"]["name"]
            for s in answer["items"]
            if any(o["uid"] == uid for o in s["metadata"].get("ownerReferences") or [])
        ]
        assert owned == []  # EDL makes no Service
        wait_for(lambda: roles(cluster).get("TRAINER", {}).get("state") == "running")
        assert roles(cluster)["TRAINER"]["resource_states"] == {"running": 2}
        assert roles(cluster)["PSERVER"]["resource_states"] == {"running": 1}

        wait_for(lambda: phase(cluster) == "succeeded", timeout=20)
        settle(server)
    status = job_of(cluster)["status"]
    assert status["reason"] == ""
    assert [(r["training_resource_type"], r["state"]) for r in status["replica_statuses"]] == [
        ("PSERVER", "succeeded"),
        ("TRAINER", "succeeded"),
    ]
    assert roles(cluster)["TRAINER"]["resource_states"] == {"succeeded": 2}


def test_a_fault_tolerant_job_gets_its_master(cluster: Cluster):
    cluster.add(
        node_doc("n1", cpu="8"),
        training_job_doc(trainers=(1, 2), fault_tolerant=True, master={}),
    )
    with serving(cluster, config(), paddle_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: len(pods_of(cluster)) == 4)
        pods = pods_of(cluster)
    assert sorted(pods) == ["ctr-master-0", "ctr-pserver-0", "ctr-trainer-0", "ctr-trainer-1"]
    master = pods["ctr-master-0"]
    assert master["metadata"]["labels"]["paddle-job-master"] == "ctr"
    (container,) = master["spec"]["containers"]
    assert container["command"] == ["paddle_k8s", "start_master"]
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
        ("master-port", 8080),
        ("etcd-port", 2379),
    ]
    trainer = pods["ctr-trainer-1"]["spec"]["containers"][0]
    assert trainer["command"] == ["paddle_k8s", "start_new_trainer"]
    assert env(pods["ctr-trainer-1"])["TRAINERS"] == "1"  # EDL gives the minimum
    (group,) = cluster.objects("PodGroup")
    assert group["spec"]["minMember"] == 3  # the master, the pserver, one trainer


def _trainers(cluster: Cluster, placed: bool = True) -> int:
    return sum(
        1
        for name, p in pods_of(cluster).items()
        if "-trainer-" in name and (not placed or p["spec"].get("nodeName"))
    )


def test_the_scaling_policy_cuts_elastic_trainers(cluster: Cluster):
    cluster.add(
        node_doc("n1", cpu="4"),
        training_job_doc(trainers=(1, 4), pservers=0, fault_tolerant=True),
    )
    options = paddle_options(scaling=ScalingConfig("edl", 0.05, 1.0))
    with serving(cluster, config(), options) as server, cluster.kubelet():
        # four trainers fill the node's four cores (the master asks for nothing)
        wait_for(lambda: _trainers(cluster) == 4, timeout=20)
        wait_for(lambda: roles(cluster).get("TRAINER", {}).get("resource_states") == {"running": 4})
        # a pod of one core arrives: one trainer gives way
        cluster.add(pod_doc("other", cpu="1"))
        wait_for(lambda: "default/other" in cluster.bindings(), timeout=20)
        settle(server)
        wait_for(lambda: _trainers(cluster) == 3, timeout=20)
    assert [key for key in cluster.api.evictions if "-trainer-" in key]
    assert phase(cluster) == "running"


def test_a_restarted_server_adopts_its_pods_and_group(cluster: Cluster):
    cluster.add(node_doc("n1"), training_job_doc(trainers=(1, 1)))
    with serving(cluster, config(), paddle_options()) as server, cluster.kubelet():
        settle(server)
        wait_for(lambda: phase(cluster) == "running")
    before = {n: p["metadata"]["uid"] for n, p in pods_of(cluster).items()}
    assert sorted(before) == ["ctr-pserver-0", "ctr-trainer-0"]
    with serving(cluster, config(), paddle_options()) as server, cluster.kubelet():
        settle(server)
    after = {n: p["metadata"]["uid"] for n, p in pods_of(cluster).items()}
    assert after == before
    assert [g["metadata"]["name"] for g in cluster.objects("PodGroup")] == ["ctr"]
    assert phase(cluster) == "running"


def test_without_the_flag_training_jobs_are_left_alone(cluster: Cluster):
    cluster.add(node_doc("n1"), training_job_doc())
    with serving(cluster, config(), fast_options()) as server:
        settle(server)
    assert pods_of(cluster) == {} and "status" not in job_of(cluster)
    assert cluster.objects("PodGroup") == []


def test_rbac_allows_every_request_serve_paddle_makes(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="3"), training_job_doc(trainers=(1, 2), fault_tolerant=True))
    options = paddle_options(scaling=ScalingConfig("edl", 0.05, 1.0))
    server = Server(cluster.client(), config(), options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with cluster.kubelet():
            wait_for(lambda: phase(cluster) == "running")
            # (running with one trainer; the node is full once the second is placed too)
            wait_for(lambda: _trainers(cluster) == 2, timeout=20)
            # Someone edits the job just before berth's next status write: a real 409, after
            # which berth reads the latest (get).
            cluster.api.before(
                "PUT",
                r"/trainingjobs/ctr/status$",
                lambda: cluster.patch(
                    "TrainingJob", "default", "ctr", {"metadata": {"labels": {"team": "a"}}}
                ),
            )
            # the node is full: a trainer is cut for this pod, and the counts change
            cluster.add(pod_doc("other", cpu="1"))
            wait_for(lambda: "default/other" in cluster.bindings(), timeout=20)
            settle(server)
    finally:
        server.stop()
        thread.join(10)
    conflicts = [path for method, path, status in cluster.api.answers if status == 409]
    assert any(path.endswith("/trainingjobs/ctr/status") for path in conflicts), conflicts
    used = {_verb(method, path) for method, path in cluster.api.log}
    granted = _granted() | _granted(PADDLE / "rbac.yaml")
    missing = used - granted
    assert not missing, missing
    forbidden = [(method, path) for method, path, status in cluster.api.answers if status == 403]
    assert not forbidden, forbidden
    paddle_only = _granted(PADDLE / "rbac.yaml") - _granted()
    assert paddle_only <= used, paddle_only - used  # nothing granted that is not used
