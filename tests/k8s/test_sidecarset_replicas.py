"""The pod webhook of ``berth serve --kruise`` on every replica, on the real API server: with a
leader and a standby both listening, the webhook configuration pointed at the standby injects
pods as the leader would; when the leader is killed the standby goes on injecting while it takes
the Lease and after; a replica that has not listed its SidecarSets answers 503, so the
configuration's failurePolicy decides, and is not ready until it has."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from berth.k8s.client import ApiError
from berth.k8s.server import Server
from tests.k8s.harness import Cluster, config, node_doc, wait_for
from tests.k8s.test_sidecarset import (
    HASH,
    MUTATING,
    configure,
    containers,
    dry_run,
    injects,
    pod,
    sidecar_options,
    sidecar_set_doc,
    sidecars,  # noqa: F401  # the fixture
    web_pod,
)

pytestmark = pytest.mark.usefixtures("sidecars")


@contextmanager
def replicas(cluster: Cluster, *identities: str) -> Iterator[list[tuple[Server, threading.Event]]]:
    """Replicas electing a leader on one Lease, started in order (the first leads); each with
    the event that kills it (the Lease kept, as a crashed process keeps it)."""
    running: list[tuple[Server, threading.Event, threading.Thread]] = []
    try:
        for identity in identities:
            options = sidecar_options(
                cluster, leader_elect=True, identity=identity, lease_namespace="berth-system"
            )
            server = Server(cluster.client(), config(), options)
            crash = threading.Event()
            thread = threading.Thread(target=server.run, args=(crash,), daemon=True)
            thread.start()
            running.append((server, crash, thread))
            if len(running) == 1:
                assert server.elector is not None
                wait_for(server.elector.leading.is_set)
        yield [(server, crash) for server, crash, _ in running]
    finally:
        for server, _, thread in running:
            server.stop()
            thread.join(10)


def kill(server: Server, crash: threading.Event) -> None:
    crash.set()
    server.stop()


def port(server: Server) -> int:
    assert server.workloads.webhook is not None
    return server.workloads.webhook.port


def answer(server: Server, raw: dict[str, Any], loop: bool = False) -> tuple[list[Any], list[str]]:
    """What the replica's webhook answers for ``raw`` created in ``default`` (``loop``: what
    the same function answers over the serve loop's own cache, a leader's)."""
    assert server.workloads.webhook is not None and server.workloads.sidecars is not None
    if loop:
        return server.workloads.sidecars.admit(raw, "default")
    return server.workloads.webhook.admit(raw, "default")


def test_the_standby_injects_as_the_leader_and_goes_on_when_the_leader_is_killed(
    cluster: Cluster,
):
    cluster.add(node_doc("n1"), sidecar_set_doc())
    with replicas(cluster, "replica-a", "replica-b") as [(leader, crash), (standby, _)]:
        assert standby.elector is not None
        wait_for(standby.ready)  # its webhook's cache has synced
        assert not standby.elector.leading.is_set() and not standby.synced
        configure(cluster, port(standby))  # the API server calls the standby alone
        wait_for(lambda: injects(cluster))
        cluster.add(web_pod("web-a"))
        assert list(containers(pod(cluster, "web-a"))) == ["log", "c"]
        # the same decision everywhere: the standby's, the leader's webhook's, and over the
        # leader's serve loop's cache
        review = web_pod("web-a")
        by_standby = answer(standby, review)
        assert by_standby[0] and by_standby[1] == []
        # A loaded machine may get here before the leader's serve loop has its first lists
        # (it leads before it has them).
        wait_for(lambda: leader.synced)
        assert answer(leader, review) == by_standby == answer(leader, review, loop=True)

        kill(leader, crash)
        answers = []  # every pod created while the standby takes the Lease is injected
        while not standby.elector.leading.is_set():
            answers.append(injects(cluster))
            assert len(answers) < 2000, "the standby did not take over"
        assert answers and all(answers)
        wait_for(lambda: standby.synced, timeout=60)
        cluster.add(web_pod("web-b"))
        assert list(containers(pod(cluster, "web-b"))) == ["log", "c"]
        wait_for(lambda: bool(pod(cluster, "web-b")["spec"].get("nodeName")), timeout=30)
    assert HASH in pod(cluster, "web-b")["metadata"]["annotations"]


def test_a_replica_that_has_not_listed_its_sidecar_sets_answers_503(cluster: Cluster):
    cluster.add(sidecar_set_doc())
    # Every list of the SidecarSets is refused until the proxy is reset.
    cluster.api.inject("GET", r"/sidecarsets$", 403, "Forbidden", times=1_000_000)
    with replicas(cluster, "replica-a") as [(server, _)]:
        configure(cluster, port(server), "Fail")

        def refused() -> str:
            try:
                dry_run(cluster, web_pod("probe"))
            except ApiError as exc:
                return exc.message
            return ""

        wait_for(lambda: "the server is currently unable to handle the request" in refused())
        assert not server.ready()  # /readyz: a Service sends it no calls yet
        policy = [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]
        cluster.admin.request(
            "PATCH",
            MUTATING.item(None, "berth-mutating-webhook-configuration"),
            body=policy,
            content_type="application/json-patch+json",
        )
        wait_for(lambda: not refused())
        assert not injects(cluster)  # admitted as it is
        cluster.api.reset()
        wait_for(server.ready, timeout=30)
        wait_for(lambda: injects(cluster))
