"""``berth serve --loaning`` against the real API server, with kube-controller-manager's
Deployment and ReplicaSet controllers making the inference pods: idle inference nodes are lent
(label and taint patched), a Deployment scaled up by hand (as an HPA would) gets nodes taken
back cheapest first, their training pods evicted through the Eviction API, and its pods bound
within the stated wait bound; scaled down, the emptied nodes are lent again. Restarts in the
middle of a loan and of a reclaim lose no pod and bind none twice."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from berth.cli import main
from berth.controllers.loaning_config import LoaningConfig, LoaningConfigError
from berth.controllers.scaling.config import ScalingConfig
from berth.defaults import STARVATION_WAIT
from berth.input_failures import EXIT_INPUT
from berth.k8s.kinds import Resource
from berth.k8s.loaning import read_config
from tests.builders import elastic_job_doc
from tests.k8s.conftest import _clean, _running
from tests.k8s.controlplane import CONTROLLERS, ControlPlane
from tests.k8s.harness import Cluster, fast_options, node_doc, serving, settle, wait_for
from tests.k8s.proxy import FaultProxy

DEPLOYMENT = Resource("Deployment", "apps", "v1", "deployments", True)
REPLICA_SET = Resource("ReplicaSet", "apps", "v1", "replicasets", True)
POOL = "berth.io/pool"
#: Lent after half a second idle; an inference pod may wait two seconds (the evicted pods'
#: kubelet takes a tenth of a second to stop them, below).
LOANING = LoaningConfig(idle_before_lend=0.5, check_interval=0.1, wait_bound=2.0)


@pytest.fixture(scope="module")
def apps_plane() -> Iterator[tuple[ControlPlane, FaultProxy]]:
    """A control plane whose controller manager also runs Deployments and ReplicaSets."""
    with _running(controllers=f"{CONTROLLERS},deployment,replicaset") as running:
        yield running


@pytest.fixture
def apps(apps_plane: tuple[ControlPlane, FaultProxy]) -> Iterator[Cluster]:
    with _clean(*apps_plane) as cluster:
        cluster.node_agent.max_grace = 0.1
        try:
            yield cluster
        finally:
            for resource in (DEPLOYMENT, REPLICA_SET):
                cluster.admin.request(
                    "DELETE", resource.collection("default"), query={"gracePeriodSeconds": "0"}
                )


def inference_node(name: str) -> dict[str, Any]:
    return node_doc(name, cpu="4", **{POOL: "inference"})


def deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "chat"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": "berth",
                    "nodeSelector": {POOL: "inference"},
                    "containers": [
                        {"name": "c", "image": "server", "resources": {"requests": {"cpu": "4"}}}
                    ],
                },
            },
        },
    }


def scale(cluster: Cluster, replicas: int) -> None:
    """What an HPA (or a person with kubectl scale) does."""
    cluster.admin.request(
        "PATCH",
        DEPLOYMENT.item("default", "chat"),
        body={"spec": {"replicas": replicas}},
        content_type="application/merge-patch+json",
    )


def training_job(name: str, workers: int) -> dict[str, Any]:
    """A rigid Volcano Job of ``workers`` pods of four cores."""
    doc = elastic_job_doc({"cpu": "4"}, replicas=workers, min_available=workers)
    doc["metadata"] = {"name": name, "namespace": "default", "uid": f"{name}-uid"}
    doc["spec"]["schedulerName"] = "berth"
    return doc


def pools(cluster: Cluster) -> dict[str, str]:
    return {
        n["metadata"]["name"]: n["metadata"].get("labels", {}).get(POOL, "")
        for n in cluster.objects("Node")
    }


def lent(cluster: Cluster) -> list[str]:
    return sorted(name for name, pool in pools(cluster).items() if pool == "lent")


def bound(cluster: Cluster, prefix: str) -> dict[str, str]:
    return {k: n for k, n in cluster.bindings().items() if k.startswith(f"default/{prefix}")}


def options(**overrides: Any) -> Any:
    return fast_options(loaning=LOANING, **overrides)


def start(apps: Cluster) -> None:
    """Three inference nodes (one Deployment pod), one training node; a two-pod job and a
    one-pod job fill the training node and the two lent nodes."""
    apps.add(inference_node("inf-a"), inference_node("inf-b"), inference_node("inf-c"))
    apps.add(node_doc("train-1", cpu="4"))
    apps.admin.request("POST", DEPLOYMENT.collection("default"), body=deployment(1))


def test_a_deployment_scaled_up_takes_lent_nodes_back_cheapest_first(apps: Cluster):
    start(apps)
    with serving(apps, options=options()) as server, apps.kubelet():
        wait_for(lambda: len(bound(apps, "chat-")) == 1)
        wait_for(lambda: len(lent(apps)) == 2)
        (chat_node,) = bound(apps, "chat-").values()
        assert sorted(set(pools(apps)) - {chat_node, "train-1"}) == lent(apps)
        for node in apps.objects("Node"):  # each pool node carries its pool's taint
            pool = pools(apps)[node["metadata"]["name"]]
            taints = [t for t in node["spec"].get("taints") or [] if t["key"] == POOL]
            assert taints == (
                [{"key": POOL, "value": pool, "effect": "NoSchedule"}] if pool else []
            )
        apps.add(training_job("pair", 2), training_job("solo", 1))
        wait_for(lambda: len(bound(apps, "pair-")) == 2 and len(bound(apps, "solo-")) == 1)
        settle(server)
        where = {**bound(apps, "pair-"), **bound(apps, "solo-")}
        # A node holding one of pair's two pods costs 1/2, solo's whole job costs 1.
        cost = {
            node: 0.5 if key.startswith("default/pair-") else 1.0 for key, node in where.items()
        }
        cheapest = min((cost[n], n) for n in lent(apps))[1]
        dearest = max((cost[n], n) for n in lent(apps))[1]

        scale(apps, 2)
        wait_for(lambda: len(bound(apps, "chat-")) == 2)
        assert pools(apps)[cheapest] == "inference"
        assert lent(apps) == [dearest]
        first = [key for key, node in where.items() if node == cheapest]
        assert apps.api.evictions == first

        scale(apps, 3)
        wait_for(lambda: len(bound(apps, "chat-")) == 3)
        assert lent(apps) == []
        assert apps.api.evictions == first + [k for k, n in where.items() if n == dearest]
        loaning = server.loaning
        assert loaning is not None
        assert [node for _, node, _ in loaning.reclaims] == [cheapest, dearest]
        # The stated bound holds: each inference pod bound within waitBound of its arrival.
        assert len(loaning.waits) == 3 and max(loaning.waits) <= LOANING.wait_bound
        exposition = server.metrics.exposition().decode()
        assert "berth_loaning_reclaims_total 2.0" in exposition
        assert "berth_loaning_preempted_pods_total 2.0" in exposition

        # Scaled down, the ReplicaSet removes pods; the nodes they leave are lent again.
        scale(apps, 1)
        wait_for(lambda: len(bound(apps, "chat-")) == 1)
        wait_for(lambda: len(lent(apps)) == 2)
        # (a lend is counted just after its node's labels are written)
        wait_for(lambda: "berth_loaning_lends_total 4.0" in server.metrics.exposition().decode())


def test_inference_pods_get_a_deletion_cost_of_their_nodes_occupancy(apps: Cluster):
    # Two-core replicas: two share a node. The cost tells the ReplicaSet to remove pods from
    # the emptier node first, so scaling down drains whole nodes.
    apps.add(inference_node("inf-a"), inference_node("inf-b"))
    doc = deployment(3)
    doc["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    apps.admin.request("POST", DEPLOYMENT.collection("default"), body=doc)
    with serving(apps, options=options()), apps.kubelet():
        wait_for(lambda: len(bound(apps, "chat-")) == 3)

        def costs() -> dict[str, str]:
            return {
                p["spec"]["nodeName"]: p["metadata"]
                .get("annotations", {})
                .get("controller.kubernetes.io/pod-deletion-cost", "")
                for p in apps.objects("Pod")
                if p["spec"].get("nodeName")
            }

        wait_for(lambda: sorted(costs().values()) == ["1", "2"])
        scale(apps, 2)
        wait_for(lambda: len(bound(apps, "chat-")) == 2)
        assert len(set(bound(apps, "chat-").values())) == 1  # the lone pod went
        wait_for(lambda: len(lent(apps)) == 1)


def _no_pod_lost(cluster: Cluster, jobs: dict[str, int]) -> None:
    """Each job has a live pod (bound or waiting) in every slot, and no pod was bound twice."""
    live = [
        p["metadata"]["name"]
        for p in cluster.objects("Pod")
        if not p["metadata"].get("deletionTimestamp")
    ]
    for job, workers in jobs.items():
        slots = {name.split(".")[0] for name in live if name.startswith(f"{job}-")}
        assert len(slots) == workers, (job, live)
    assert all(count == 1 for count in cluster.api.binds.values()), cluster.api.binds


def test_a_restart_while_nodes_are_lent_keeps_the_loans(apps: Cluster):
    start(apps)
    apps.add(training_job("pair", 2), training_job("solo", 1))
    with serving(apps, options=options()) as server, apps.kubelet():
        wait_for(lambda: len(lent(apps)) == 2)
        wait_for(lambda: len(bound(apps, "pair-")) + len(bound(apps, "solo-")) == 3)
        settle(server)
    loans = lent(apps)
    with serving(apps, options=options()) as server, apps.kubelet():
        settle(server)
        assert server.loaning is not None and server.loaning.lent == set(loans)
        assert not server.loaning.lends and not apps.api.evictions  # nothing undone or redone
        scale(apps, 2)
        wait_for(lambda: len(bound(apps, "chat-")) == 2)
        wait_for(lambda: len(lent(apps)) == 1)
        settle(server)
    _no_pod_lost(apps, {"pair": 2, "solo": 1})


def test_a_reclaim_cut_short_by_a_restart_is_finished_by_the_next_server(apps: Cluster):
    start(apps)
    apps.add(training_job("pair", 2), training_job("solo", 1))
    # The first server relabels a node, then every eviction it posts fails: it stops there.
    apps.api.inject("POST", r"/eviction$", 500, "InternalError", times=10_000)
    with serving(apps, options=options()) as server, apps.kubelet():
        wait_for(lambda: len(lent(apps)) == 2)
        wait_for(lambda: len(bound(apps, "pair-")) + len(bound(apps, "solo-")) == 3)
        settle(server)
        scale(apps, 2)
        wait_for(lambda: len(lent(apps)) == 1)
        assert len(bound(apps, "chat-")) == 1  # its node still holds a training pod
    apps.api.run(apps.api.injected.clear)
    with serving(apps, options=options()) as server, apps.kubelet():
        wait_for(lambda: len(bound(apps, "chat-")) == 2)
        settle(server)
        assert server.loaning is not None and not server.loaning.reclaims  # resumed, not redone
        assert len(apps.api.evictions) == 1 and len(lent(apps)) == 1
    _no_pod_lost(apps, {"pair": 2, "solo": 1})


def test_a_restart_mid_scale_keeps_the_elastic_targets_and_the_loans(apps: Cluster):
    # An elastic job under EDL grows onto the lent nodes; berth restarts; the job keeps its
    # workers, and a reclaim takes a worker above its minimum first (it costs nothing).
    start(apps)
    job = elastic_job_doc({"cpu": "4"}, replicas=3, min_available=1, namespace="default")
    job["metadata"]["uid"] = "train-uid"
    job["spec"]["schedulerName"] = "berth"
    apps.add(job, training_job("solo", 1))
    scaled = options(scaling=ScalingConfig("edl", 0.05, 1.0))
    with serving(apps, options=scaled) as server, apps.kubelet():
        wait_for(lambda: len(lent(apps)) == 2)
        wait_for(lambda: len(bound(apps, "train-")) == 2 and len(bound(apps, "solo-")) == 1)
        settle(server)
    with serving(apps, options=scaled) as server, apps.kubelet():
        settle(server)
        assert server.scaling is not None
        assert server.scaling.wait == STARVATION_WAIT  # loaning turns the guard on
        assert server.scaling.holding.targets == {"default/train": 2}
        scale(apps, 2)
        wait_for(lambda: len(bound(apps, "chat-")) == 2)
        settle(server)
        (evicted,) = apps.api.evictions
        assert evicted.startswith("default/train-worker-")
        wait_for(lambda: server.scaling.holding.targets == {"default/train": 1})
    _no_pod_lost(apps, {"train": 3, "solo": 1})


@pytest.mark.parametrize(("lend_to", "on_lent"), [("elastic", False), ("all", True)])
def test_lending_to_elastic_jobs_only_keeps_rigid_jobs_off_the_lent_nodes(
    apps: Cluster, lend_to: str, on_lent: bool
):
    # Two rigid one-pod jobs, one training node, two lent nodes: with lendTo: elastic one runs
    # on the training node and the other waits for it; with all both run, on lent nodes too.
    start(apps)
    loaning = replace(LOANING, lend_to=lend_to)
    with serving(apps, options=fast_options(loaning=loaning)) as server, apps.kubelet():
        wait_for(lambda: len(lent(apps)) == 2)
        apps.add(training_job("one", 1), training_job("two", 1))
        wait_for(lambda: len(bound(apps, "one-")) + len(bound(apps, "two-")) >= 1)
        settle(server)
        nodes = [*bound(apps, "one-").values(), *bound(apps, "two-").values()]
        if on_lent:
            assert len(nodes) == 2 and any(node in ("inf-b", "inf-c") for node in nodes)
        else:
            assert nodes == ["train-1"]


@pytest.mark.parametrize("relend", [False, True])
def test_a_rigid_job_a_reclaim_restarted_is_lent_to_again_only_if_asked(
    apps: Cluster, relend: bool
):
    # pair and solo fill train-1 and the two lent nodes; inference takes both lent nodes back
    # and gives them up again. The jobs the reclaims restarted get the lent nodes back only
    # with relendRestarted: true; with false they wait for train-1.
    start(apps)
    loaning = replace(LOANING, relend_restarted=relend)
    with serving(apps, options=fast_options(loaning=loaning)) as server, apps.kubelet():
        assert server.loaning is not None
        wait_for(lambda: len(lent(apps)) == 2)
        apps.add(training_job("pair", 2), training_job("solo", 1))
        wait_for(lambda: len(bound(apps, "pair-")) + len(bound(apps, "solo-")) == 3)
        settle(server)
        scale(apps, 3)
        wait_for(lambda: len(bound(apps, "chat-")) == 3)
        restarted = {key.split("/")[1].split("-")[0] for key in apps.api.evictions}
        assert restarted
        scale(apps, 1)
        wait_for(lambda: len(bound(apps, "chat-")) == 1 and len(lent(apps)) == 2)

        def on_lent() -> list[str]:
            return [
                node
                for job in restarted
                for node in bound(apps, f"{job}-").values()
                if node in lent(apps)
            ]

        if relend:
            wait_for(on_lent)
            return
        settle(server)
        assert not on_lent()
        assert len(server.loaning.restarted) == len(restarted)
        _no_pod_lost(apps, {"pair": 2, "solo": 1})
        # Forgotten with their jobs.
        for job in restarted:
            apps.delete("Job", "default", job)
        wait_for(lambda: not server.loaning.restarted)


def test_without_loaning_no_node_is_lent(apps: Cluster):
    """Without --loaning nothing is lent, however idle the inference nodes."""
    start(apps)
    with serving(apps) as server, apps.kubelet():
        wait_for(lambda: len(bound(apps, "chat-")) == 1)
        settle(server)
        assert server.loaning is None and lent(apps) == []


READ_CASES = [
    # (file text, the config read, or the error's text after "<file>: ")
    (
        "simulation:\n  loaning: {idleBeforeLend: 60, waitBound: 10}\n",
        LoaningConfig(idle_before_lend=60.0, wait_bound=10.0),
    ),
    (
        "poolLabel: example.com/pool\ncheckInterval: 5\n",
        LoaningConfig("example.com/pool", check_interval=5.0),
    ),
    ("simulation:\n  scaling: {policy: edl}\n", "simulation.loaning: field required"),
    ("simulation:\n  loaning: {waitBound: 1}\n", "simulation.loaning.waitBound: 1s cannot be kept"),
    ("idleBeforeLend: soon\n", "simulation.loaning.idleBeforeLend: expected seconds >= 0"),
    ("lentPool: inference\n", "simulation.loaning.lentPool: must differ from inferencePool"),
    ("[unclosed\n", "cannot read:"),
    ("- 1\n", "simulation.loaning: expected a mapping"),
]


@pytest.mark.parametrize(("text", "expected"), READ_CASES)
def test_the_loaning_file_is_read_or_refused_in_one_line(tmp_path, text: str, expected: Any):
    path = tmp_path / "loaning.yaml"
    path.write_text(text)
    if isinstance(expected, LoaningConfig):
        assert read_config(path, period=1.0) == expected
        return
    with pytest.raises(LoaningConfigError) as caught:
        read_config(path, period=1.0)
    message = str(caught.value)
    assert message.startswith(f"{path}: {expected}") and "\n" not in message, message


def test_serve_refuses_a_bad_loaning_file_before_connecting(tmp_path, capsys):
    path = tmp_path / "loaning.yaml"
    path.write_text("simulation:\n  loaning: {checkInterval: 0}\n")
    code = main(["serve", "--loaning", str(path), "--kubeconfig", str(tmp_path / "none")])
    assert code == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: simulation.loaning.checkInterval: expected seconds > 0"
