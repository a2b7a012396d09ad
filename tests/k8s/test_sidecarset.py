"""OpenKruise's SidecarSet in ``berth serve --kruise`` on the real API server: the API server
calls berth's pod webhook (configured as deploy/kruise/webhook/ configures it, with a ``url``
and the test CA's caBundle), pods a user creates and pods berth's CloneSet controller creates
get the sidecars of the sets that select them and no others, a paused set injects nothing,
the webhook down refuses pods under failurePolicy Fail and admits them as they are under
Ignore, an image change upgrades the sidecars in place, status goes through /status, and
every request is one the RBAC of deploy/ grants."""

from __future__ import annotations

import base64
import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml

from berth.defaults import WEBHOOK_PORT
from berth.k8s.client import ApiError
from berth.k8s.kinds import POD, SIDECAR_SET, Resource
from berth.k8s.server import Server
from berth.k8s.webhook import MUTATE_POD, WebhookOptions
from tests.k8s.controlplane import free_port
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
from tests.k8s.test_kruise import clone_set_doc

KRUISE = DEPLOY / "kruise"
WEBHOOK = KRUISE / "webhook"
MUTATING = Resource(
    "MutatingWebhookConfiguration",
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    False,
)
HASH = "kruise.io/sidecarset-hash"


def sidecar_set_doc(
    name: str = "log",
    image: str = "log:1",
    app: str = "web",
    paused: bool = False,
    **strategy: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": app}},
            "containers": [
                {
                    "name": name,
                    "image": image,
                    "resources": {"requests": {"cpu": "100m"}},
                    "volumeMounts": [{"name": f"{name}-data", "mountPath": "/var/log/app"}],
                }
            ],
            "volumes": [{"name": f"{name}-data", "emptyDir": {}}],
            "injectionStrategy": {"paused": paused},
            "updateStrategy": {"type": "RollingUpdate", **strategy},
        },
    }


def web_pod(name: str, app: str = "web") -> dict[str, Any]:
    return pod_doc(name, cpu="500m", labels={"app": app})


@pytest.fixture
def sidecars(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, left without SidecarSets and webhook configurations afterwards, and with
    the API server no longer calling the webhook (its configuration cache lags a deletion), so
    no later test's pod meets a webhook that has gone."""
    try:
        yield cluster
    finally:
        for resource in (MUTATING, SIDECAR_SET):
            for item in cluster.admin.request("GET", resource.collection()).get("items") or []:
                try:
                    cluster.admin.request("DELETE", resource.item(None, item["metadata"]["name"]))
                except ApiError as exc:
                    if exc.status != 404:
                        raise
        wait_for(lambda: _uncalled(cluster))


def _uncalled(cluster: Cluster) -> bool:
    try:
        return not injects(cluster)
    except ApiError:
        return False  # refused by a webhook still configured (failurePolicy Fail)


def webhook_options(cluster: Cluster) -> WebhookOptions:
    """The API server's own serving certificate (issued for 127.0.0.1 by the test CA)."""
    pki = cluster.plane.pki
    return WebhookOptions(port=0, cert=pki / "serving.crt", key=pki / "serving.key")


def sidecar_options(cluster: Cluster, **overrides: Any):
    return fast_options(kruise=True, webhook=webhook_options(cluster), **overrides)


def configure(cluster: Cluster, port: int, policy: str = "Fail") -> None:
    """deploy/kruise/webhook's configuration, pointed at ``port`` on loopback."""
    (doc,) = [d for d in yaml.safe_load_all((WEBHOOK / "mutatingwebhookconfiguration.yaml").open())]
    (webhook,) = doc["webhooks"]
    ca = (cluster.plane.pki / "ca.crt").read_bytes()
    webhook["clientConfig"] = {
        "url": f"https://127.0.0.1:{port}{MUTATE_POD}",
        "caBundle": base64.b64encode(ca).decode(),
    }
    webhook["failurePolicy"] = policy
    cluster.admin.request("POST", MUTATING.collection(), body=doc)


def dry_run(cluster: Cluster, doc: dict[str, Any]) -> dict[str, Any]:
    """The pod as the API server would create it (mutating webhooks included)."""
    return cluster.admin.request(
        "POST", POD.collection("default"), body=doc, query={"dryRun": "All"}
    )


def injects(cluster: Cluster, app: str = "web") -> bool:
    annotations = dry_run(cluster, web_pod("probe", app))["metadata"].get("annotations") or {}
    return HASH in annotations


@contextmanager
def serving_sidecars(cluster: Cluster, probe: str = "web") -> Iterator[Server]:
    """berth serving with its webhook, the configuration in place and taking effect (a pod
    labelled ``app: probe`` would get sidecars)."""
    with serving(cluster, config(), sidecar_options(cluster)) as server:
        assert server.workloads.webhook is not None
        configure(cluster, server.workloads.webhook.port)
        settle(server)
        wait_for(lambda: injects(cluster, probe))
        yield server


def pod(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.admin.request("GET", POD.item("default", name))


def containers(raw: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["image"] for c in raw["spec"]["containers"]}


def status_of(cluster: Cluster, name: str = "log") -> dict[str, Any]:
    return cluster.admin.request("GET", SIDECAR_SET.item(None, name)).get("status") or {}


def test_the_crd_is_kruises_sidecar_set_served_at_v1alpha1():
    (crd,) = yaml.safe_load_all((KRUISE / "apps.kruise.io_sidecarsets.yaml").read_text())
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{SIDECAR_SET.plural}.{SIDECAR_SET.group}"
    assert spec["group"] == SIDECAR_SET.group and spec["names"]["kind"] == "SidecarSet"
    assert spec["scope"] == "Cluster"
    versions = {v["name"]: v for v in spec["versions"]}
    assert versions[SIDECAR_SET.version]["served"]
    assert "status" in versions[SIDECAR_SET.version]["subresources"]


def test_the_webhook_configuration_is_kruises_pod_webhook():
    (doc,) = yaml.safe_load_all((WEBHOOK / "mutatingwebhookconfiguration.yaml").read_text())
    (service,) = yaml.safe_load_all((WEBHOOK / "service.yaml").read_text())
    (webhook,) = doc["webhooks"]
    assert doc["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert webhook["rules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    ]
    assert webhook["failurePolicy"] == "Fail" and webhook["sideEffects"] == "None"
    assert webhook["namespaceSelector"] == {
        "matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]
    }
    client = webhook["clientConfig"]
    assert client["service"]["path"] == MUTATE_POD
    assert (client["service"]["name"], client["service"]["namespace"]) == (
        service["metadata"]["name"],
        service["metadata"]["namespace"],
    )
    (port,) = service["spec"]["ports"]
    assert port["port"] == client["service"]["port"] and port["targetPort"] == WEBHOOK_PORT
    assert base64.b64decode(client["caBundle"]) == b"CA_BUNDLE_PLACEHOLDER"


def test_created_pods_get_the_sidecars_of_the_sets_that_select_them(sidecars: Cluster):
    cluster = sidecars
    cluster.add(node_doc("n1"), node_doc("n2"), sidecar_set_doc())
    with serving_sidecars(cluster) as server, cluster.kubelet():
        cluster.add(web_pod("web-a"), web_pod("db-a", app="db"))
        # berth's own CloneSet pods come through its webhook too, while its loop waits
        cluster.add(clone_set_doc("web", replicas=2, cpu="500m"))
        wait_for(lambda: status_of(cluster).get("readyPods") == 3, timeout=30)
        settle(server)
        web, db = pod(cluster, "web-a"), pod(cluster, "db-a")
        assert list(containers(web)) == ["log", "c"] and containers(web)["log"] == "log:1"
        assert containers(db) == {"c": "busybox"}
        (log,) = [c for c in web["spec"]["containers"] if c["name"] == "log"]
        assert {"name": "IS_INJECTED", "value": "true"} in log["env"]
        assert {"name": "log-data", "emptyDir": {}} in web["spec"]["volumes"]
        annotations = web["metadata"]["annotations"]
        record = json.loads(annotations[HASH])["log"]
        assert record["sidecarSetName"] == "log" and record["sidecarList"] == ["log"]
        assert annotations["kruise.io/sidecarset-injected-list"] == "log"
        assert HASH not in (db["metadata"].get("annotations") or {})
        clones = [
            p
            for p in cluster.objects("Pod")
            if p["metadata"].get("labels", {}).get("app") == "web"
            and p["metadata"]["name"] != "web-a"
        ]
        assert len(clones) == 2 and all("log" in containers(p) for p in clones)
        assert web["spec"]["nodeName"]  # scheduled by berth with the sidecar's request
        (sidecar_set,) = cluster.objects("SidecarSet")
        assert status_of(cluster) == {
            "observedGeneration": sidecar_set["metadata"]["generation"],
            "matchedPods": 3,
            "updatedPods": 3,
            "readyPods": 3,
            "updatedReadyPods": 3,
        }


def test_a_paused_set_injects_nothing(sidecars: Cluster):
    cluster = sidecars
    cluster.add(
        node_doc("n1"),
        sidecar_set_doc("log", paused=True),
        sidecar_set_doc("probe", app="probe"),
    )
    with serving_sidecars(cluster, probe="probe") as server:
        assert not injects(cluster, "web")
        cluster.add(web_pod("web-a"))
        settle(server)
    assert containers(pod(cluster, "web-a")) == {"c": "busybox"}


def test_the_webhook_down_refuses_pods_under_fail_and_admits_them_under_ignore(
    sidecars: Cluster,
):
    cluster = sidecars
    cluster.add(sidecar_set_doc())
    configure(cluster, free_port(), "Fail")  # nothing listens there

    def refused() -> bool:
        try:
            dry_run(cluster, web_pod("probe"))
        except ApiError as exc:
            assert "failed calling webhook" in exc.message, exc.message
            return True
        return False

    wait_for(refused)
    items = cluster.admin.request("GET", MUTATING.collection()).get("items") or []
    (name,) = [item["metadata"]["name"] for item in items]
    patch = [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]
    cluster.admin.request(
        "PATCH", MUTATING.item(None, name), body=patch, content_type="application/json-patch+json"
    )
    wait_for(lambda: not refused())
    cluster.add(web_pod("web-a"))
    assert containers(pod(cluster, "web-a")) == {"c": "busybox"}


def test_an_image_change_upgrades_the_sidecars_in_place_with_only_the_rights_granted(
    sidecars: Cluster,
):
    cluster = sidecars
    cluster.add(node_doc("n1"), node_doc("n2"), sidecar_set_doc(maxUnavailable=1))
    server = Server(cluster.client(), config(), sidecar_options(cluster))
    assert server.workloads.webhook is not None
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        configure(cluster, server.workloads.webhook.port)
        settle(server)
        wait_for(lambda: injects(cluster))
        with cluster.kubelet():
            cluster.add(web_pod("web-a"), web_pod("web-b"))
            wait_for(lambda: status_of(cluster).get("readyPods") == 2, timeout=30)
            uids = {name: pod(cluster, name)["metadata"]["uid"] for name in ("web-a", "web-b")}
            # Someone labels the set just before berth's next status write: a real 409, after
            # which berth reads the latest (get).
            relabel = {"metadata": {"labels": {"touched": "yes"}}}
            cluster.api.before(
                "PUT",
                r"/sidecarsets/log/status$",
                lambda: cluster.patch("SidecarSet", "", "log", relabel),
            )
            update = copy.deepcopy(sidecar_set_doc(image="log:2")["spec"]["containers"])
            cluster.patch("SidecarSet", "", "log", {"spec": {"containers": update}})
            wait_for(lambda: status_of(cluster).get("updatedReadyPods") == 2, timeout=40)
            settle(server)
    finally:
        server.stop()
        thread.join(10)
    for name, uid in uids.items():
        raw = pod(cluster, name)
        assert raw["metadata"]["uid"] == uid  # the same pod, upgraded in place
        assert containers(raw) == {"log": "log:2", "c": "busybox"}
        restarts = {c["name"]: c["restartCount"] for c in raw["status"]["containerStatuses"]}
        assert restarts["log"] == 1 and restarts.get("c", 0) == 0
        state = json.loads(
            raw["metadata"]["annotations"]["kruise.io/sidecarset-inplace-update-state"]
        )
        assert list(state["log"]["lastContainerStatuses"]) == ["log"]
    status = status_of(cluster)
    assert (status["matchedPods"], status["updatedPods"]) == (2, 2)
    conflicts = [path for method, path, code in cluster.api.answers if code == 409]
    assert any(path.endswith("/sidecarsets/log/status") for path in conflicts), conflicts
    used = {_verb(method, path) for method, path in cluster.api.log}
    granted = (
        _granted() | _granted(KRUISE / "rbac.yaml") | _granted(KRUISE / "sidecarset-rbac.yaml")
    )
    assert not used - granted, used - granted
    forbidden = [(method, path) for method, path, code in cluster.api.answers if code == 403]
    assert not forbidden, forbidden
    sidecar_only = _granted(KRUISE / "sidecarset-rbac.yaml") - _granted()
    assert sidecar_only <= used  # it grants nothing berth does not use
