"""The caBundle of berth's webhook configuration (berth/k8s/ca_bundle.py): the patch for each
shape of configuration, and on the real API server a replica started with ``--webhook-cert``
writing its certificate into deploy/kruise/webhook/'s configuration (its placeholder caBundle
refused by the API server until then) with exactly the rights deploy/kruise/webhook/rbac.yaml
grants."""

from __future__ import annotations

import base64
import threading
from typing import Any

import pytest
import yaml

from berth.k8s.ca_bundle import CONFIGURATION, bundle_patch
from berth.k8s.client import ApiError
from berth.k8s.server import Server
from tests.k8s.harness import Cluster, config, wait_for
from tests.k8s.test_deploy import _granted, _verb
from tests.k8s.test_sidecarset import (
    MUTATING,
    WEBHOOK,
    dry_run,
    injects,
    sidecar_options,
    sidecar_set_doc,
    sidecars,  # noqa: F401  # the fixture
    web_pod,
)


def hook(name: str, bundle: str | None) -> dict[str, Any]:
    client: dict[str, Any] = {"url": "https://127.0.0.1:9876/mutate-pod"}
    if bundle is not None:
        client["caBundle"] = bundle
    return {"name": name, "clientConfig": client}


def written(index: int, name: str) -> list[dict[str, Any]]:
    return [
        {"op": "test", "path": f"/webhooks/{index}/name", "value": name},
        {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": "NEW"},
    ]


# the configuration's webhooks → the patch that gives each the bundle "NEW"
CASES = {
    "a placeholder": ([hook("a", "OLD")], written(0, "a")),
    "no caBundle yet": ([hook("a", None)], written(0, "a")),
    "the bundle already": ([hook("a", "NEW")], []),
    "two, the second behind": ([hook("a", "NEW"), hook("b", "OLD")], written(1, "b")),
    "two, both behind": ([hook("a", "OLD"), hook("b", None)], written(0, "a") + written(1, "b")),
    "no webhooks": ([], []),
}


@pytest.mark.parametrize(("webhooks", "patch"), CASES.values(), ids=CASES)
def test_the_patch_gives_every_webhook_the_bundle(webhooks, patch):
    assert bundle_patch({"webhooks": webhooks}, "NEW") == patch


@pytest.mark.usefixtures("sidecars")
def test_a_replica_given_its_certificate_writes_the_ca_bundle(cluster: Cluster):
    cluster.add(sidecar_set_doc())
    rbac = list(yaml.safe_load_all((WEBHOOK / "rbac.yaml").read_text()))
    cluster.plane.apply([WEBHOOK / "rbac.yaml"])
    options = sidecar_options(cluster)
    assert options.webhook is not None
    options.webhook.configuration = CONFIGURATION  # as --webhook-cert sets it
    server = Server(cluster.client(), config(), options)
    assert server.workloads.webhook is not None
    # deploy/'s configuration as it is, its placeholder caBundle, at the replica's port
    (doc,) = yaml.safe_load_all((WEBHOOK / "mutatingwebhookconfiguration.yaml").read_text())
    url = f"https://127.0.0.1:{server.workloads.webhook.port}/mutate-pod"
    doc["webhooks"][0]["clientConfig"] = {**doc["webhooks"][0]["clientConfig"], "url": url}
    del doc["webhooks"][0]["clientConfig"]["service"]
    cluster.admin.request("POST", MUTATING.collection(), body=doc)
    wait_for(lambda: _refused(cluster))  # the API server cannot verify the webhook yet
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: injects(cluster), timeout=30)
    finally:
        server.stop()
        thread.join(10)
        for item in rbac:
            path = f"/apis/rbac.authorization.k8s.io/v1/{item['kind'].lower()}s"
            cluster.admin.request("DELETE", f"{path}/{item['metadata']['name']}")
    stored = cluster.admin.request("GET", MUTATING.item(None, CONFIGURATION))
    certificate = (cluster.plane.pki / "serving.crt").read_bytes()
    assert base64.b64decode(stored["webhooks"][0]["clientConfig"]["caBundle"]) == certificate
    used = {_verb(m, p) for m, p in cluster.api.log if "/mutatingwebhookconfigurations" in p}
    assert (
        used
        == _granted(WEBHOOK / "rbac.yaml")
        == {
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"),
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"),
        }
    )
    forbidden = [(m, p) for m, p, code in cluster.api.answers if code == 403]
    assert not forbidden, forbidden


def _refused(cluster: Cluster) -> bool:
    try:
        dry_run(cluster, web_pod("probe"))
    except ApiError as exc:
        return "failed calling webhook" in exc.message
    return False
