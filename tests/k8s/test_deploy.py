"""The manifests under deploy/: they parse, their CRDs match the resources berth uses (and the
real API server establishes them), the Deployment's arguments are ones ``berth serve`` accepts,
and the RBAC rules allow every request a busy ``berth serve`` makes, checked twice: against
the rules as written, and by the API server itself while berth runs with its service account's
token (and the ClusterRole grants nothing beyond the verbs a named part of berth uses)."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import yaml

from berth.cli import _parser
from berth.controllers.loaning_config import LoaningConfig
from berth.framework.config import parse_config
from berth.framework.framework import Framework
from berth.k8s.kinds import COMMAND, JOB, POD_GROUP, QUEUE
from berth.k8s.server import Server
from tests.k8s.harness import (
    Cluster,
    config,
    fast_options,
    node_doc,
    pod_doc,
    priority_class_doc,
    settle,
    wait_for,
)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def test_crds_declare_the_resources_berth_reads_in_volcanos_shapes():
    crds = {}
    for path in sorted((DEPLOY / "crds").glob("*.yaml")):
        (crd,) = _docs(f"crds/{path.name}")
        crds[crd["spec"]["names"]["kind"]] = crd
    for resource in (POD_GROUP, QUEUE, JOB, COMMAND):
        spec = crds[resource.kind]["spec"]
        assert crds[resource.kind]["metadata"]["name"] == f"{resource.plural}.{resource.group}"
        assert spec["group"] == resource.group and spec["names"]["plural"] == resource.plural
        assert spec["scope"] == ("Namespaced" if resource.namespaced else "Cluster")
        (version,) = spec["versions"]
        assert version["name"] == resource.version and version["served"] and version["storage"]
        has_status = "status" in (version.get("subresources") or {})
        if resource.kind != "Command":
            assert has_status == resource.status_subresource, resource.kind


def test_the_configmap_holds_a_configuration_berth_loads():
    (configmap,) = _docs("configmap.yaml")
    raw = yaml.safe_load(configmap["data"]["scheduler.yaml"])
    Framework(parse_config(raw, "deploy/configmap.yaml"))


def test_the_deployment_runs_two_replicas_with_leader_election():
    (deployment,) = _docs("deployment.yaml")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    args = [arg.replace("$(POD_NAME)", "berth-0") for arg in container["args"]]
    parsed = _parser().parse_args(args)  # every flag is one berth serve has
    assert parsed.leader_elect and parsed.identity == "berth-0"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["serviceAccountName"] == "berth"
    namespaces = {d["metadata"]["name"] for d in _docs("namespace.yaml")}
    assert deployment["metadata"]["namespace"] in namespaces


_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/[^/]+)?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


def _verb(method: str, path: str) -> tuple[str, str, str]:
    match = _PATH.match(path)
    assert match is not None, path
    group, plural = match["group"] or "", match["plural"]
    resource = f"{plural}/{match['sub']}" if match["sub"] else plural
    if method == "WATCH":
        verb = "watch"
    elif method == "GET":
        verb = "get" if match["name"] else "list"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
    return group, resource, verb


def _granted(path: Path = DEPLOY / "rbac.yaml") -> set[tuple[str, str, str]]:
    """(group, resource, verb) for every rule of the RBAC manifest at ``path``."""
    granted = set()
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        for rule in doc.get("rules", []):
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        granted.add((group, resource, verb))
    return granted


def test_rbac_allows_every_request_serve_makes(cluster: Cluster):
    classes = [priority_class_doc("high", 1000), priority_class_doc("low", 1)]
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "schedulerName": "berth",
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
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
    cluster.add(node_doc("n1", cpu="2"), *classes, job, pod_doc("low", priority_class="low"))
    raw = {
        "actions": "enqueue, allocate, preempt, backfill",
        "tiers": [
            # priority decides victims in its own tier: beside gang, Volcano's vote would
            # spare the single-pod groups (gang keeps minMember, here 1).
            {"plugins": [{"name": "priority"}]},
            {"plugins": [{"name": "gang"}, {"name": "resource-fit"}]},
        ],
    }
    options = fast_options(
        leader_elect=True,
        lease_namespace="berth-system",
        annotate=[lambda pod, node: {"berth.io/gpu-devices": ""}],
    )
    server = Server(cluster.client(), config(raw), options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        # The kubelet removes the victim, so the preemptor's bind goes out.
        with cluster.kubelet():
            settle(server)
            cluster.add(pod_doc("urgent", cpu="2", priority_class="high"))
            wait_for(lambda: cluster.api.evictions != [])
            settle(server)
    finally:
        server.stop()
        thread.join(10)
    used = {_verb(method, path) for method, path in cluster.api.log}
    missing = used - _granted()
    assert not missing, missing
    # berth ran with its service account's token: the API server applied deploy/rbac.yaml
    forbidden = [(method, path) for method, path, status in cluster.api.answers if status == 403]
    assert not forbidden, forbidden
    assert ("", "pods/binding", "create") in used and ("", "pods/eviction", "create") in used
    assert ("coordination.k8s.io", "leases", "update") in used


def test_rbac_allows_what_capacity_loaning_does(cluster: Cluster):
    """``--loaning`` patches nodes (lend, reclaim), patches inference pods (their deletion
    cost) and evicts training pods: each verb is in deploy/rbac.yaml, and the API server,
    applying it, refuses none."""
    inference = {"berth.io/pool": "inference"}
    chat = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {
            "schedulerName": "berth",
            "tasks": [
                {
                    "name": "server",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "nodeSelector": inference,
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "server",
                                    "resources": {"requests": {"cpu": "2"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }
    burst = pod_doc("burst", cpu="2")
    burst["spec"]["nodeSelector"] = inference
    cluster.add(node_doc("inf-a", cpu="2", **inference), node_doc("inf-b", cpu="2", **inference))
    cluster.add(chat)
    loaning = LoaningConfig(idle_before_lend=0.2, check_interval=0.05, wait_bound=5.0)
    server = Server(cluster.client(), config(), fast_options(loaning=loaning))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with cluster.kubelet():
            wait_for(lambda: server.loaning is not None and server.loaning.lent == {"inf-b"})
            cluster.add(pod_doc("train", cpu="2"))
            wait_for(lambda: cluster.bindings().get("default/train") == "inf-b")
            cluster.add(burst)
            wait_for(lambda: cluster.bindings().get("default/burst") == "inf-b")
            settle(server)
    finally:
        server.stop()
        thread.join(10)
    used = {_verb(method, path) for method, path in cluster.api.log}
    missing = used - _granted()
    assert not missing, missing
    forbidden = [(method, path) for method, path, status in cluster.api.answers if status == 403]
    assert not forbidden, forbidden
    assert {("", "nodes", "patch"), ("", "pods", "patch"), ("", "pods/eviction", "create")} <= used
