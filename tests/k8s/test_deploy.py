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
from berth.controllers.colocation_config import ColocationConfig
from berth.controllers.loaning_config import LoaningConfig
from berth.framework.config import parse_config
from berth.framework.framework import Framework
from berth.k8s.kinds import COMMAND, JOB, KRUISE, POD_GROUP, QUEUE
from berth.k8s.server import Server
from tests.k8s import dra_docs
from tests.k8s.harness import (
    Cluster,
    config,
    fast_options,
    node_doc,
    pod_doc,
    priority_class_doc,
    serving,
    settle,
    wait_for,
)
from tests.k8s.test_profiles import CONFIG, gpu_node, gpu_pod

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
        colocation=ColocationConfig(report_interval=0.1),  # node status, the metrics API
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
    assert ("", "nodes/status", "patch") in used and ("metrics.k8s.io", "nodes", "list") in used


#: Granted but never a request path: the API server checks it before a status update may
#: change a claim's allocation or reservations.
_CLAIM_BINDING = ("resource.k8s.io", "resourceclaims/binding", "update")


def test_rbac_grants_exactly_the_dra_requests_serve_makes(cluster: Cluster):
    """A DRA pod placed while another writer races berth's claim status write: every DRA
    verb the ClusterRole grants is used (the read after the conflict too), and no other."""
    dra_docs.clean(cluster)
    cluster.add(
        node_doc("n1"),
        dra_docs.device_class(),
        dra_docs.node_slice("n1", [dra_docs.device("gpu-0")]),
        dra_docs.claim_template("one-gpu", dra_docs.request()),
        dra_docs.with_claims(pod_doc("p"), template="one-gpu"),
    )

    def race() -> None:
        for claim in dra_docs.all_claims(cluster):
            meta = claim["metadata"]
            labels = {"metadata": {"labels": {"raced": "yes"}}}
            cluster.patch("ResourceClaim", meta["namespace"], meta["name"], labels)

    cluster.api.before("PUT", r"/resourceclaims/[^/]+/status$", race)
    try:
        with serving(cluster) as server:
            wait_for(lambda: "default/p" in cluster.bindings(), timeout=60)
            settle(server)
        used = {_verb(m, p) for m, p in cluster.api.log}
        forbidden = [(m, p) for m, p, status in cluster.api.answers if status == 403]
    finally:
        cluster.delete("Pod", "default", "p")
        dra_docs.clean(cluster)
    assert not forbidden, forbidden
    dra_used = {v for v in used if v[0] == "resource.k8s.io"}
    dra_granted = {g for g in _granted() if g[0] == "resource.k8s.io"} - {_CLAIM_BINDING}
    assert dra_used == dra_granted
    assert _CLAIM_BINDING in _granted()


def _kruise_needs() -> set[tuple[str, str, str]]:
    """What ``serve --kruise`` asks beyond deploy/rbac.yaml, by what it runs: each Kruise
    workload listed, watched, read after a conflict and its status updated; revisions kept,
    read back and pruned; the in-place readiness gate patched."""
    needs = {("apps", "controllerrevisions", verb) for verb in ("create", "list", "delete")}
    needs.add(("", "pods/status", "patch"))
    for resource in KRUISE:
        needs.update((resource.group, resource.plural, v) for v in ("get", "list", "watch"))
        needs.add((resource.group, f"{resource.plural}/status", "update"))
    return needs


def test_kruise_rbac_grants_exactly_what_serve_kruise_needs():
    """Checked without a cluster: a verb dropped from (or added to) deploy/kruise/rbac.yaml
    fails here; test_kruise.py checks the same rules against the requests berth makes."""
    assert _granted(DEPLOY / "kruise" / "rbac.yaml") == _kruise_needs()


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


def test_rbac_grants_exactly_the_configmap_requests_of_gpu_profiles(cluster: Cluster):
    """gpu-load-aware's profiles: read when a server starts (get), created the first time,
    updated after; the Role grants those three verbs on ConfigMaps and nothing else, and the
    API server, applying it with berth's token, refuses none."""
    name = "berth-gpu-profiles-rbac"
    cluster.add(gpu_node("a", 4))
    options = fast_options(
        profiles_configmap=f"berth-system/{name}", profiles_interval=0.05, leader_elect=True
    )
    try:
        with cluster.kubelet():
            for run in range(2):  # the second run reads what the first wrote, then updates it
                with serving(cluster, config(CONFIG), options) as server:
                    settle(server)
                    for pod in (f"p{run}", f"q{run}"):
                        cluster.add(gpu_pod(pod, 1))
                        wait_for(lambda p=pod: f"default/{p}" in cluster.bindings(), timeout=60)
                        settle(server)
                        cluster.delete("Pod", "default", pod)
                        settle(server)
    finally:
        cluster._delete_quietly(f"/api/v1/namespaces/berth-system/configmaps/{name}")
    used = {_verb(m, p) for m, p in cluster.api.log}
    forbidden = [(m, p) for m, p, status in cluster.api.answers if status == 403]
    assert not forbidden, forbidden
    configmaps = {v for v in used if v[1] == "configmaps"}
    assert configmaps == {g for g in _granted() if g[1] == "configmaps"}
    assert configmaps == {("", "configmaps", verb) for verb in ("get", "create", "update")}
