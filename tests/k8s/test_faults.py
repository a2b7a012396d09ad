"""Faults between berth and a real API server: watches cut by the proxy, a real 410 Gone after
an etcd compaction, a real 409 when someone else binds first, 5xx answers, the API server and
etcd restarted, and leadership passing from a killed leader to its standby on a real Lease. In
every case each pod is bound exactly once."""

from __future__ import annotations

import threading

import pytest

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


def _bound_once(cluster: Cluster, names: list[str]) -> None:
    bindings = cluster.bindings()
    for name in names:
        assert f"default/{name}" in bindings, name
        assert cluster.api.binds[f"default/{name}"] == 1, name


def _informer(server: Server, kind: str):
    return next(i for i in server.informers if i.resource.kind == kind)


def test_dropped_watch_streams_resume_from_the_last_resource_version(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"), pod_doc("a"), pod_doc("b"))
    with serving(cluster) as server:
        settle(server)
        pods = _informer(server, "Pod")
        lists = pods.counts["list"]
        # Pods arrive, and the streams drop while their cycle and binds may be under way.
        cluster.add(pod_doc("c"), pod_doc("d"))
        cluster.api.drop_watches()
        cluster.add(pod_doc("e"), pod_doc("f"))
        wait_for(lambda: len(cluster.bindings()) == 6)
        settle(server)
        assert pods.counts["list"] == lists  # resumed from the last resourceVersion
    _bound_once(cluster, ["a", "b", "c", "d", "e", "f"])


def test_410_gone_after_an_etcd_compaction_relists_and_reports_what_vanished(
    uncached: Cluster,
):
    """The API server of this test serves watches from etcd (no watch cache), so a compaction
    in etcd makes the resourceVersion berth resumes from too old: the server answers 410."""
    cluster = uncached
    cluster.add(node_doc("n1", cpu="1"), pod_doc("fits"), pod_doc("stuck-1"), pod_doc("stuck-2"))
    with serving(cluster) as server:
        settle(server)
        pods = _informer(server, "Pod")
        # berth loses the server; meanwhile a pod goes and etcd compacts its history away.
        cluster.api.down = True
        cluster.api.drop_watches()
        cluster.delete("Pod", "default", "stuck-1")
        cluster.add(pod_doc("later"))
        cluster.plane.compact()
        cluster.api.down = False
        wait_for(lambda: pods.counts.get("gone", 0) >= 1)
        wait_for(lambda: "default/stuck-1" not in pods.known)
        settle(server)
        assert server.store.get("Pod", "default/stuck-1") is None
        assert "default/stuck-1" not in server.books.pending
        assert pods.counts["list"] >= 2
    _bound_once(cluster, ["fits"])


def test_409_on_bind_takes_the_node_the_api_reports(cluster: Cluster):
    cluster.add(node_doc("n1"), node_doc("n2"))

    def someone_else_binds() -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "taken"},
            "target": {"kind": "Node", "name": "n2"},
        }
        cluster.admin.request("POST", "/api/v1/namespaces/default/pods/taken/binding", body=body)

    cluster.api.before("POST", r"/pods/taken/binding$", someone_else_binds)
    cluster.add(pod_doc("taken", cpu="3"))
    with serving(cluster) as server:
        settle(server)
        assert cluster.bindings()["default/taken"] == "n2"
        assert server.books.placed["default/taken"] == "n2"
        state = server.scheduler.state
        assert state.requested[state.rows["n2"], 0] == 3000
        assert state.requested[state.rows["n1"], 0] == 0
        assert server.metrics.binds.labels("failed")._value.get() == 1
    assert cluster.api.binds["default/taken"] == 1
    assert ("POST", "/api/v1/namespaces/default/pods/taken/binding", 409) in cluster.api.answers


def test_5xx_answers_are_retried_with_backoff(cluster: Cluster):
    cluster.add(node_doc("n1"), pod_doc("a"))
    cluster.api.inject("POST", r"/pods/a/binding$", 503, "Unavailable", 2)
    cluster.api.inject("GET", r"^/api/v1/nodes$", 500, "Internal", 1)
    with serving(cluster) as server:
        settle(server)
        assert server.client.retried == {"503": 2, "500": 1}
    assert cluster.bindings() == {"default/a": "n1"}
    assert cluster.api.binds["default/a"] == 3  # two refused attempts, then the bind


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
def test_a_restarted_control_plane_binds_nothing_twice(cluster: Cluster, component: str):
    """The API server (or etcd behind it) killed and started again while pods arrive: berth
    rides out the outage on its retries and relists, without a restart of its own."""
    cluster.add(node_doc("n1"), node_doc("n2"), *(pod_doc(f"p{i}") for i in range(4)))
    with serving(cluster, retries=8) as server:
        settle(server)
        cluster.plane.restart(component, kill=True)
        cluster.add(*(pod_doc(f"q{i}") for i in range(3)))
        wait_for(lambda: len(cluster.bindings()) == 7, timeout=60)
        settle(server, timeout=60)
        assert server.synced and not server.stopping.is_set()
    _bound_once(cluster, [f"p{i}" for i in range(4)] + [f"q{i}" for i in range(3)])


def test_the_standby_takes_over_from_a_killed_leader(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="16"), *(pod_doc(f"p{i}") for i in range(3)))
    servers, threads, crashes = [], [], []
    for identity in ("replica-a", "replica-b"):
        crash = threading.Event()
        server = Server(
            cluster.client(),
            config(),
            fast_options(leader_elect=True, identity=identity, lease_namespace="berth-system"),
        )
        thread = threading.Thread(target=server.run, args=(crash,), daemon=True)
        thread.start()
        servers.append(server)
        threads.append(thread)
        crashes.append(crash)
        if identity == "replica-a":
            wait_for(server.elector.leading.is_set)
    first, second = servers
    try:
        settle(first)
        assert len(cluster.bindings()) == 3
        assert not second.elector.leading.is_set() and not second.synced
        assert second.ready()  # a standby is healthy
        crashes[0].set()  # killed: the Lease is not released
        first.stop()
        threads[0].join(10)
        cluster.add(*(pod_doc(f"q{i}") for i in range(3)))
        wait_for(second.elector.leading.is_set, timeout=10)
        settle(second)
    finally:
        for server, thread in zip(servers, threads, strict=True):
            server.stop()
            thread.join(10)
    (lease,) = [
        lease
        for lease in cluster.objects("Lease")
        if lease["metadata"]["namespace"] == "berth-system"
    ]
    assert lease["spec"]["holderIdentity"] == ""  # released by the orderly stop of b
    assert lease["spec"]["leaseTransitions"] == 1
    _bound_once(cluster, [f"p{i}" for i in range(3)] + [f"q{i}" for i in range(3)])


def test_a_restarted_server_adopts_what_its_job_controller_made(cluster: Cluster):
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "minAvailable": 2,
            "schedulerName": "berth",
            "tasks": [
                {
                    "name": "w",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
    cluster.add(node_doc("n1"), job)
    with cluster.kubelet():
        for _ in range(2):  # the second server starts on what the first one made
            with serving(cluster) as server:
                settle(server)
                wait_for(lambda: cluster.objects("Job")[0].get("status", {}).get("running") == 2)
                run = server.controller.runs["default/train"]
                assert sorted(p.phase for p in run.slots.values()) == ["Running", "Running"]
    assert sorted(p["metadata"]["name"] for p in cluster.objects("Pod")) == [
        "train-w-0",
        "train-w-1",
    ]
    assert len(cluster.objects("PodGroup")) == 1
    _bound_once(cluster, ["train-w-0", "train-w-1"])


def test_slow_answers_bind_every_pod_once(cluster: Cluster):
    """Every answer a quarter of a second late: watches, lists and binds all wait, nothing is
    bound twice."""
    cluster.add(node_doc("n1"), node_doc("n2"), *(pod_doc(f"p{i}") for i in range(4)))
    cluster.api.delay = 0.25
    with serving(cluster) as server:
        settle(server, timeout=60)
    _bound_once(cluster, [f"p{i}" for i in range(4)])


def test_a_bind_that_keeps_failing_is_forgotten_and_the_pod_requeued(cluster: Cluster):
    cluster.add(node_doc("n1"), pod_doc("a"))
    # One more failure than the client retries: the bind fails, berth undoes its assumption.
    cluster.api.inject("POST", r"/pods/a/binding$", 500, "Internal", 6)
    with serving(cluster, retries=5) as server:
        settle(server)
        assert server.metrics.binds.labels("failed")._value.get() == 1
        assert server.metrics.binds.labels("bound")._value.get() == 1
        assert server.books.placed == {"default/a": "n1"}
    assert cluster.bindings() == {"default/a": "n1"}
    assert cluster.api.binds["default/a"] == 7  # six refused attempts, then the next cycle's


def test_a_periodic_relist_repairs_what_no_event_reported(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="1"), pod_doc("first"), pod_doc("second"))
    with serving(cluster, options=fast_options(resync=0.3)) as server:
        settle(server)
        assert list(cluster.bindings()) == ["default/first"]
        cluster.api.hide(r"^default/first$")  # its deletion never reaches berth's watch
        cluster.delete("Pod", "default", "first")
        wait_for(lambda: cluster.bindings().get("default/second") == "n1")
        assert _informer(server, "Pod").counts["resync"] >= 1
    _bound_once(cluster, ["second"])
