"""``berth snapshot`` of the kinds ``berth serve`` runs when asked (OpenKruise, Kubeflow,
LeaderWorkerSet, JobSet, the Workload API) and of DRA objects, against the real API server: the
snapshot is replayed by ``berth simulate``, which must accept every object and start from the
cluster's placement."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.cli import main
from berth.k8s.client import ApiError
from berth.k8s.kinds import (
    JOB_SET,
    LEADER_WORKER_SET,
    SIDECAR_SET,
    WORKLOAD,
    WORKLOAD_POD_GROUP,
    Resource,
)
from tests.k8s import dra_docs as d
from tests.k8s.controlplane import DEPLOY
from tests.k8s.harness import Cluster, fast_options, node_doc, pod_doc, serving, settle, wait_for
from tests.k8s.test_jobset_serve import job_set_doc
from tests.k8s.test_kruise import clone_set_doc
from tests.k8s.test_kruise_broadcastjob import job_doc as broadcast_job_doc
from tests.k8s.test_kruise_statefulset import asts_doc
from tests.k8s.test_kubeflow import pytorch_job_doc
from tests.k8s.test_lws_serve import lws_doc
from tests.k8s.test_paddle import training_job_doc
from tests.k8s.test_sidecarset import sidecar_set_doc
from tests.k8s.test_workload_api import member
from tests.k8s.test_workload_api import pod_group as workload_pod_group

#: What the harness does not empty between tests.
EXTRA = (LEADER_WORKER_SET, JOB_SET, SIDECAR_SET, WORKLOAD_POD_GROUP, WORKLOAD)
ALL_OPT_IN = {"kruise": True, "kubeflow": True, "paddle": True, "lws": True, "jobset": True}


@pytest.fixture
def snap_cluster(cluster: Cluster) -> Iterator[Cluster]:
    d.clean(cluster)
    try:
        yield cluster
    finally:
        for pod in cluster.objects("Pod"):
            cluster.delete("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        for resource in EXTRA:
            cluster.admin.request("DELETE", resource.collection("default"))
        d.clean(cluster)
        for group in _items(cluster, WORKLOAD_POD_GROUP):  # nothing here takes their finalizers
            meta = group["metadata"]
            if meta.get("finalizers"):
                cluster.patch(WORKLOAD_POD_GROUP.kind, meta["namespace"], meta["name"],
                              {"metadata": {"finalizers": None}})  # fmt: skip
        wait_for(lambda: not any(_items(cluster, resource) for resource in EXTRA), timeout=60)


def _items(cluster: Cluster, resource: Resource) -> list[dict[str, Any]]:
    return cluster.admin.request("GET", resource.collection()).get("items") or []


def snapshot(cluster: Cluster, tmp_path: Path, capsys) -> tuple[list[dict[str, Any]], list[str]]:
    """Snapshot the cluster into ``tmp_path/snap``: the workload's documents and the notes."""
    out = tmp_path / "snap"
    kubeconfig = str(cluster.kubeconfig(tmp_path / "kc"))
    capsys.readouterr()
    assert main(["snapshot", "--kubeconfig", kubeconfig, "--out", str(out)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")]
    for doc in yaml.safe_load_all((out / "cluster.yaml").read_text()):
        assert set(doc["metadata"]) <= {"name", "namespace", "labels", "annotations"}
    docs = list(yaml.safe_load_all((out / "workload.yaml").read_text()))
    for doc in docs:
        # a pod keeps its controller ownerReference, what the replay adopts it by
        kept = {"ownerReferences"} if doc["kind"] == "Pod" else set()
        assert set(doc["metadata"]) <= {"name", "namespace", "labels", "annotations"} | kept, doc
    return docs, notes


def outputs(tmp_path: Path, table: str) -> list[dict[str, str]]:
    """The rows of the replay's ``jobs.csv`` or ``workloads.csv``."""
    with open(tmp_path / "sim" / table, newline="") as handle:
        return list(csv.DictReader(handle))


def replay(tmp_path: Path, capsys) -> dict[str, dict[str, str]]:
    """``berth validate`` (no warning, no error) and ``berth simulate`` of the snapshot: the
    simulation's pods by name."""
    out = tmp_path / "snap"
    files = [str(out / "cluster.yaml"), str(out / "workload.yaml")]
    capsys.readouterr()
    assert main(["validate", *files]) == 0
    said = capsys.readouterr()
    assert "warning" not in said.out + said.err, said
    args = ["simulate", "--cluster", files[0], "--workload", files[1]]
    assert main([*args, "--out", str(tmp_path / "sim"), "--quiet"]) == 0
    with open(tmp_path / "sim" / "pods.csv", newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def volcano_job_doc(name: str, workers: int, duration: str) -> dict[str, Any]:
    container = {"name": "w", "image": "trainer:1", "resources": {"requests": {"cpu": "1"}}}
    template = {
        "metadata": {"annotations": {"berth.io/duration": duration}},
        "spec": {"containers": [container]},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": workers,
            "schedulerName": "berth",
            "tasks": [{"name": "worker", "replicas": workers, "template": template}],
        },
    }


def kinds(docs: list[dict[str, Any]]) -> list[str]:
    return sorted({f"{doc['apiVersion']} {doc['kind']}" for doc in docs})


def test_placed_workloads_replay_with_their_pods_adopted_on_the_same_nodes(
    snap_cluster: Cluster, tmp_path: Path, capsys
):
    cluster = snap_cluster
    cluster.add(*(node_doc(f"n{i}", cpu="8") for i in range(3)))
    cluster.add(
        clone_set_doc(replicas=3),
        asts_doc(replicas=2, management="Parallel"),
        broadcast_job_doc(),
        pytorch_job_doc(workers=2, duration="600"),  # still running when the snapshot is taken
        training_job_doc(duration="600"),
        lws_doc("serve", 2, 2, "1"),
        job_set_doc("train", 1, 2, "1"),
        volcano_job_doc("sweep", 2, "600"),
    )
    # 3 + 2 + 3 (one a node) + 3 + 3 + 4 + 2 + 2
    with serving(cluster, options=fast_options(**ALL_OPT_IN)) as server, cluster.kubelet():
        wait_for(lambda: len(cluster.bindings()) == 22, timeout=60)
        settle(server)
    placed = {key.split("/")[1]: node for key, node in cluster.bindings().items()}
    docs, notes = snapshot(cluster, tmp_path, capsys)
    pods = {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "Pod"}
    assert sorted(pods) == sorted(placed)
    owners = {pod["metadata"]["ownerReferences"][0]["kind"] for pod in pods.values()}
    assert owners == {
        "BroadcastJob", "CloneSet", "Job", "JobSet", "LeaderWorkerSet", "PyTorchJob",
        "StatefulSet", "TrainingJob",
    }  # fmt: skip
    # the workloads with their pods (but a JobSet, whose pods its child Jobs make: it is written
    # as its pods), and only the PodGroups their controllers would not make again
    assert kinds(docs) == [
        "apps.kruise.io/v1alpha1 BroadcastJob",
        "apps.kruise.io/v1alpha1 CloneSet",
        "apps.kruise.io/v1beta1 StatefulSet",
        "batch.volcano.sh/v1alpha1 Job",
        "kubeflow.org/v1 PyTorchJob",
        "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet",
        "paddlepaddle.org/v1 TrainingJob",
        "scheduling.k8s.io/v1 PriorityClass",
        "scheduling.volcano.sh/v1beta1 PodGroup",
        "v1 Pod",
    ]
    groups = sorted(doc["metadata"]["name"] for doc in docs if doc["kind"] == "PodGroup")
    assert [g.rsplit("-", 1)[0] for g in groups] == ["job-train-workers", "serve-0", "serve-1"]
    said = sorted(note.removeprefix("note: ") for note in notes)
    assert said == [
        "BroadcastJob default/warm: written with its 3 pods, which the replay's controller adopts",
        "CloneSet default/web: written with its 3 pods, which the replay's controller adopts",
        "Job default/sweep: written with its 2 pods, which the replay's controller adopts",
        "JobSet default/train: written as its 2 pods and PodGroups (its pods exist)",
        "LeaderWorkerSet default/serve: written with its 4 pods, which the replay's controller "
        "adopts",
        "PyTorchJob default/mnist: written with its 3 pods, which the replay's controller adopts",
        "StatefulSet default/db: written with its 2 pods, which the replay's controller adopts",
        "TrainingJob default/ctr: written with its 3 pods, which the replay's controller adopts",
    ]
    simulated = replay(tmp_path, capsys)
    # the same pods, none made twice, each on its node from the start
    assert {name: row["node"] for name, row in simulated.items()} == placed
    assert all(float(row["bind_time"]) <= 1.0 for row in simulated.values()), simulated
    # the controllers went on: the training jobs finished their pods' work and succeeded
    jobs = {row["name"]: row["phase"] for row in outputs(tmp_path, "jobs.csv")}
    assert jobs["mnist"] == jobs["ctr"] == jobs["sweep"] == "Completed", jobs
    workloads = {row["name"]: row for row in outputs(tmp_path, "workloads.csv")}
    for name, replicas in (("web", "3"), ("db", "2")):
        row = workloads[name]
        assert (row["desired"], row["pods"], row["pods_created"]) == (replicas, replicas, "0")


def test_workloads_without_pods_are_written_whole_and_the_simulator_makes_their_pods(
    snap_cluster: Cluster, tmp_path: Path, capsys
):
    cluster = snap_cluster
    cluster.add(*(node_doc(f"n{i}", cpu="8") for i in range(3)))
    cluster.add(
        clone_set_doc(replicas=3),
        asts_doc(replicas=2),
        broadcast_job_doc(),
        pytorch_job_doc(workers=2),
        training_job_doc(),
        lws_doc("serve", 2, 2, "1"),
        job_set_doc("train", 1, 2, "1"),
        sidecar_set_doc(),
    )
    docs, notes = snapshot(cluster, tmp_path, capsys)
    assert notes == []
    assert kinds(docs) == [
        "apps.kruise.io/v1alpha1 BroadcastJob",
        "apps.kruise.io/v1alpha1 CloneSet",
        "apps.kruise.io/v1alpha1 SidecarSet",
        "apps.kruise.io/v1beta1 StatefulSet",
        "jobset.x-k8s.io/v1alpha2 JobSet",
        "kubeflow.org/v1 PyTorchJob",
        "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet",
        "paddlepaddle.org/v1 TrainingJob",
        "scheduling.k8s.io/v1 PriorityClass",
    ]
    assert all("status" not in doc for doc in docs)
    simulated = replay(tmp_path, capsys)
    # every workload's pods, each placed; the CloneSet's with the SidecarSet's container
    assert len(simulated) == 3 + 2 + 3 + 3 + 3 + 4 + 2
    assert all(row["node"] for row in simulated.values()), simulated


def test_a_workload_whose_pods_have_finished_is_left_out(
    snap_cluster: Cluster, tmp_path: Path, capsys
):
    cluster = snap_cluster
    cluster.add(node_doc("n1"), broadcast_job_doc(duration="0.2"), pod_doc("plain"))
    with serving(cluster, options=fast_options(kruise=True)) as server, cluster.kubelet():
        wait_for(lambda: _phases(cluster) == ["Running", "Succeeded"], timeout=60)
        settle(server)
    docs, notes = snapshot(cluster, tmp_path, capsys)
    assert notes == ["note: BroadcastJob default/warm: left out (its pods have finished)"]
    assert [doc["metadata"]["name"] for doc in docs if doc["kind"] != "PriorityClass"] == ["plain"]
    assert list(replay(tmp_path, capsys)) == ["plain"]


def _phases(cluster: Cluster) -> list[str]:
    return sorted((pod.get("status") or {}).get("phase", "") for pod in cluster.objects("Pod"))


def test_dra_pods_replay_on_their_nodes_with_their_claims(
    snap_cluster: Cluster, tmp_path: Path, capsys
):
    cluster = snap_cluster
    cluster.add(node_doc("n1"), node_doc("n2"), d.device_class())
    for node in ("n1", "n2"):
        cluster.add(d.node_slice(node, [d.device(f"gpu-{i}", index=i) for i in range(2)]))
    cluster.add(d.claim_template("one-gpu", d.request()), d.claim("shared", d.request()))
    cluster.add(*(d.with_claims(pod_doc(f"t{i}", cpu="3"), template="one-gpu") for i in range(2)))
    cluster.add(d.with_claims(pod_doc("s", cpu="1"), claim_name="shared"))
    with serving(cluster) as server:
        wait_for(lambda: len(cluster.bindings()) == 3, timeout=60)
        settle(server)
    placed = {key.split("/")[1]: node for key, node in cluster.bindings().items()}
    docs, notes = snapshot(cluster, tmp_path, capsys)
    assert kinds(docs) == [
        "resource.k8s.io/v1 ResourceClaim",
        "resource.k8s.io/v1 ResourceClaimTemplate",
        "scheduling.k8s.io/v1 PriorityClass",
        "v1 Pod",
    ]
    claims = [doc["metadata"]["name"] for doc in docs if doc["kind"] == "ResourceClaim"]
    assert claims == ["shared"]  # the template's claims are made again by the simulator
    assert notes == [
        "note: 2 ResourceClaims made for pods from templates: left out (the simulator makes "
        "them again from the template)"
    ]
    cluster_docs = list(yaml.safe_load_all((tmp_path / "snap" / "cluster.yaml").read_text()))
    assert [doc["kind"] for doc in cluster_docs] == ["Node", "Node", "DeviceClass"] + [
        "ResourceSlice"
    ] * 2
    devices = {name: [x[3] for x in d.devices_of(d.pod_claim(cluster, name))] for name in placed}
    simulated = replay(tmp_path, capsys)
    assert {name: row["node"] for name, row in simulated.items()} == placed

    # The simulator allocates the claims anew, the first free devices, so each node's pods hold
    # the devices they held in the cluster. Which of a node's pods came first is not in the
    # snapshot when they were created within one second (the cluster, under load, may also
    # have had one pod's claim made later than the other pod's).
    def per_node(held: dict[str, list[str]]) -> dict[str, list[str]]:
        nodes: dict[str, list[str]] = {}
        for name, names in held.items():
            nodes.setdefault(placed[name], []).extend(names)
        return {node: sorted(names) for node, names in nodes.items()}

    simulated_devices = {name: row["devices"].split(",") for name, row in simulated.items()}
    assert per_node(simulated_devices) == per_node(devices)


def test_workload_api_gangs_replay_with_their_groups(snap_cluster: Cluster, tmp_path: Path, capsys):
    cluster = snap_cluster
    workload = {
        "apiVersion": WORKLOAD.api_version,
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "podGroupTemplates": [
                {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}
            ]
        },
    }
    cluster.add(node_doc("n1"), node_doc("n2"))
    cluster.admin.request("POST", WORKLOAD.collection("default"), body=workload)
    group = workload_pod_group("fits", 2)
    group["metadata"]["namespace"] = "default"
    cluster.admin.request("POST", WORKLOAD_POD_GROUP.collection("default"), body=group)
    cluster.add(*(member(f"fits-{i}", "fits", "3") for i in range(2)))
    with serving(cluster, options=fast_options(workload_api=True)) as server:
        wait_for(lambda: len(cluster.bindings()) == 2, timeout=60)
        settle(server)
    placed = {key.split("/")[1]: node for key, node in cluster.bindings().items()}
    docs, notes = snapshot(cluster, tmp_path, capsys)
    assert notes == []
    assert kinds(docs) == [
        "scheduling.k8s.io/v1 PriorityClass",
        "scheduling.k8s.io/v1beta1 PodGroup",
        "scheduling.k8s.io/v1beta1 Workload",
        "v1 Pod",
    ]
    simulated = replay(tmp_path, capsys)
    assert {name: row["node"] for name, row in simulated.items()} == placed


@pytest.fixture
def without_lws(snap_cluster: Cluster) -> Iterator[Cluster]:
    """The cluster without the LeaderWorkerSet CRD, put back afterwards."""
    crd = DEPLOY / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    name = "leaderworkersets.leaderworkerset.x-k8s.io"
    cluster = snap_cluster
    cluster.admin.request("DELETE", f"{path}/{name}")
    collection = LEADER_WORKER_SET.collection()

    def gone() -> bool:
        try:
            cluster.admin.request("GET", collection)
        except ApiError as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout=60)
    try:
        yield cluster
    finally:
        wait_for(lambda: not _exists(cluster, f"{path}/{name}"), timeout=60)
        cluster.plane.apply([crd])
        cluster.plane._wait_for_crds(60)
        wait_for(lambda: not gone(), timeout=60)


def _exists(cluster: Cluster, path: str) -> bool:
    try:
        cluster.admin.request("GET", path)
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_a_kind_the_cluster_does_not_serve_is_skipped_with_a_note(
    without_lws: Cluster, tmp_path: Path, capsys
):
    cluster = without_lws
    cluster.add(node_doc("n1"), clone_set_doc(replicas=1))
    docs, notes = snapshot(cluster, tmp_path, capsys)
    assert notes == [
        "note: LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): not served by the cluster, skipped"
    ]
    assert "apps.kruise.io/v1alpha1 CloneSet" in kinds(docs)
    assert len(replay(tmp_path, capsys)) == 1
