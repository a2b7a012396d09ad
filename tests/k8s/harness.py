"""Helpers for the Kubernetes backend tests: a real control plane (tests/k8s/controlplane.py)
with the fault proxy in front of it, object helpers that write as an administrator, a fake
kubelet, and a berth server run in a thread with its own service account's token."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from berth.framework.config import SchedulerConfig, parse_config
from berth.framework.config_files import load_config
from berth.k8s.client import ApiError, KubeClient
from berth.k8s.kinds import BY_KIND, Resource, object_key
from berth.k8s.server import ServeOptions, Server
from tests.k8s.controlplane import ControlPlane
from tests.k8s.kubelet import FakeKubelet
from tests.k8s.proxy import FaultProxy

PDB = Resource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True)
NAMESPACE = Resource("Namespace", "", "v1", "namespaces", False)
RESOURCES: dict[str, Resource] = {**BY_KIND, "PodDisruptionBudget": PDB, "Namespace": NAMESPACE}
#: Emptied between tests, in this order (workloads and pods first, so no controller recreates
#: them).
CLEANED = (
    "CloneSet",
    "StatefulSet.apps.kruise.io",
    "BroadcastJob",
    "ControllerRevision",
    "PyTorchJob",
    "TrainingJob",
    "Pod",
    "Job",
    "PodGroup",
    "Command",
    "PodDisruptionBudget",
    "Event",
    "Lease",
    "Queue",
    "PriorityClass",
    "Node",
)
#: Namespaces the control plane starts with (deploy/ makes berth-system); others are removed.
INITIAL_NAMESPACES = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease", "berth-system"}
)
#: The cluster each client was made for, by its URL (settle() asks it what to wait for).
_CLUSTERS: weakref.WeakValueDictionary[str, Cluster] = weakref.WeakValueDictionary()


class Cluster:
    """The API server as a test sees it. ``api`` is the fault proxy berth talks through: its
    record (``binds``, ``evictions``, ``log``) and its faults (``inject``, ``drop_watches``,
    ``delay``, ``down``). Writes made here go straight to the API server as an administrator;
    berth's own go through the proxy with its service account's token."""

    def __init__(self, plane: ControlPlane, proxy: FaultProxy) -> None:
        self.plane = plane
        self.api = proxy
        self.admin = KubeClient(plane.configuration("admin"), backoff=0.05)
        self.node_agent = FakeKubelet(self.admin)
        self._namespaces = set(INITIAL_NAMESPACES)

    # ------------------------------------------------------------------ writing

    def add(self, *docs: dict[str, Any]) -> None:
        for doc in docs:
            if doc["kind"] == "Node":
                self.node_agent.register(doc)
                continue
            resource = _resource(doc)
            namespace = (doc.get("metadata") or {}).get("namespace") or "default"
            if resource.namespaced:
                self._ensure_namespace(namespace)
            self._create(resource.collection(namespace if resource.namespaced else None), doc)
            status = doc.get("status")
            if status and resource.status_subresource:
                # Written by a kubelet or a controller in a real cluster; a test sets it as
                # that would, through the status subresource.
                self.patch(doc["kind"], namespace, doc["metadata"]["name"], {"status": status})

    def _create(self, collection: str, doc: dict[str, Any]) -> None:
        """POST ``doc``. The API server admits a pod's priorityClassName from its own cache
        of PriorityClasses, which may not have seen one a test has just created again (the
        last test deleted it): that refusal is retried for a few seconds."""
        deadline = time.monotonic() + 5.0
        while True:
            try:
                self.admin.request("POST", collection, body=doc)
                return
            except ApiError as exc:
                stale = "no PriorityClass with name" in exc.message
                if not stale or time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    def add_yaml(self, text: str) -> None:
        self.add(*(doc for doc in yaml.safe_load_all(text) if doc))

    def patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """A merge patch; its ``status`` part goes through the status subresource where the
        kind has one."""
        resource = RESOURCES[kind]
        rest = {k: v for k, v in patch.items() if k != "status"}
        if "status" in patch and resource.status_subresource:
            self.admin.request(
                "PATCH",
                resource.item(namespace, name, "status"),
                body={"status": patch["status"]},
                content_type="application/merge-patch+json",
            )
        elif "status" in patch:
            rest["status"] = patch["status"]
        if rest:
            self.admin.request(
                "PATCH",
                resource.item(namespace, name),
                body=rest,
                content_type="application/merge-patch+json",
            )

    def delete(self, kind: str, namespace: str, name: str, grace: int = 0) -> None:
        """Gone at once by default (``grace`` 0); a bound pod deleted with a grace period stays
        terminating until the fake kubelet, if running, removes it."""
        self.admin.request(
            "DELETE", RESOURCES[kind].item(namespace, name), body={"gracePeriodSeconds": grace}
        )

    def _ensure_namespace(self, namespace: str) -> None:
        if namespace in self._namespaces:
            return
        try:
            self.admin.request(
                "POST", NAMESPACE.collection(), body={"metadata": {"name": namespace}}
            )
        except ApiError as exc:
            if exc.status != 409:
                raise
        self._namespaces.add(namespace)

    # ------------------------------------------------------------------ reading

    def _list(self, resource: Resource) -> list[dict[str, Any]]:
        return self.admin.request("GET", resource.collection()).get("items") or []

    def objects(self, kind: str) -> list[dict[str, Any]]:
        items = self._list(RESOURCES[kind])
        if kind == "PriorityClass":
            items = [i for i in items if not i["metadata"]["name"].startswith("system-")]
        return items

    def bindings(self) -> dict[str, str]:
        """pod key → node, for every pod the API has on a node and not leaving it (an
        evicted pod stays, terminating, until its kubelet has stopped it)."""
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.objects("Pod")
            if p.get("spec", {}).get("nodeName") and not p["metadata"].get("deletionTimestamp")
        }

    def versions(self, resource: Resource) -> tuple[dict[str, int], int]:
        """Each object's resourceVersion by key, and the list's own."""
        answer = self.admin.request("GET", resource.collection())
        items = {
            object_key(item): int(item["metadata"]["resourceVersion"])
            for item in answer.get("items") or []
        }
        return items, int(answer["metadata"]["resourceVersion"])

    # ------------------------------------------------------------------ running

    @contextmanager
    def kubelet(self) -> Iterator[None]:
        """The fake kubelet plays the registered nodes' pods while the context lasts."""
        with self.node_agent.run():
            yield

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig for berth's service account, through the proxy."""
        return self.plane.write_berth_kubeconfig(path, self.api.url)

    def client(self, **options: Any) -> KubeClient:
        """A client as berth's: its service account's token, through the proxy."""
        configuration = self.plane.configuration("berth")
        configuration.host = self.api.url
        _CLUSTERS[configuration.host] = self
        options.setdefault("backoff", 0.01)
        return KubeClient(configuration, **options)

    # ------------------------------------------------------------------ between tests

    def clean(self) -> None:
        """Empty what tests create, and forget the proxy's record and faults."""
        self.api.reset()
        for kind in CLEANED:
            resource = RESOURCES[kind]
            items = self._list(resource)
            if kind == "PriorityClass":
                for item in items:
                    name = item["metadata"]["name"]
                    if not name.startswith("system-"):
                        self._delete_quietly(resource.item(None, name))
                continue
            namespaces = {(i["metadata"].get("namespace") or None) for i in items}
            namespaces.discard("kube-system")  # the API server's own identity Leases
            for namespace in namespaces:
                self._delete_quietly(
                    resource.collection(namespace), query={"gracePeriodSeconds": "0"}
                )
        for namespace in sorted(self._namespaces - INITIAL_NAMESPACES):
            self._delete_quietly(NAMESPACE.item(None, namespace))
        self.node_agent = FakeKubelet(self.admin)
        self._namespaces = set(INITIAL_NAMESPACES)

    def _delete_quietly(self, path: str, query: dict[str, str] | None = None) -> None:
        try:
            self.admin.request("DELETE", path, query=query)
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise


def _resource(doc: dict[str, Any]) -> Resource:
    """The resource of a document by its apiVersion's group and kind (Kruise's StatefulSet is
    not apps/v1's)."""
    group = str(doc.get("apiVersion", "")).rpartition("/")[0]
    for resource in RESOURCES.values():
        if resource.group == group and resource.kind.partition(".")[0] == doc["kind"]:
            return resource
    raise KeyError(f"{doc.get('apiVersion')} {doc['kind']}")


def config(raw: dict[str, Any] | None = None, period: float = 0.02) -> SchedulerConfig:
    loaded = load_config(None) if raw is None else parse_config(raw, "<test>")
    loaded.period = period
    return loaded


def fast_options(**overrides: Any) -> ServeOptions:
    """Short periods, so a test waits milliseconds rather than the production seconds."""
    values: dict[str, Any] = {
        "resync": 30.0,
        "watch_timeout": 5.0,
        "lease_duration": 1.0,
        "renew_deadline": 0.8,
        "retry_period": 0.05,
    }
    values.update(overrides)
    return ServeOptions(**values)


@contextmanager
def serving(
    cluster: Cluster,
    scheduler_config: SchedulerConfig | None = None,
    options: ServeOptions | None = None,
    **client_options: Any,
) -> Iterator[Server]:
    server = Server(
        cluster.client(**client_options), scheduler_config or config(), options or fast_options()
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(10)
        assert not thread.is_alive()


def _targets(cluster: Cluster, server: Server) -> dict[str, tuple[dict[str, int], int]]:
    return {i.resource.kind: cluster.versions(i.resource) for i in server.informers}


def _caught_up(server: Server, targets: dict[str, tuple[dict[str, int], int]]) -> bool:
    """Every informer has delivered each object at least as new as the API had it when
    settle() was called (or its deletion since), and has let go of every object the API no
    longer had then (one it knows that is newer than that list was made since)."""
    for informer in server.informers:
        items, listed = targets[informer.resource.kind]
        known = dict(informer.known)
        latest = int(informer.version or 0)
        for key, version in items.items():
            seen = known.get(key)
            if seen is None and latest > version:
                continue  # deleted since, and the informer has seen it go
            if int(seen or 0) < version:
                return False
        for key, version in known.items():
            if key not in items and int(version or 0) <= listed:
                return False
    return True


def settle(server: Server, timeout: float = 60.0, quiet: float = 0.2) -> None:
    """Wait until the server has seen every change the API had when called, and has had
    nothing to do for ``quiet`` seconds since."""
    cluster = _CLUSTERS.get(server.client.host)
    targets = _targets(cluster, server) if cluster is not None else {}
    deadline = time.monotonic() + timeout
    calm_since: float | None = None
    while time.monotonic() < deadline:
        ready = server.synced and server.settled.is_set()
        if ready and (not targets or _caught_up(server, targets)):
            calm_since = calm_since or time.monotonic()
            if time.monotonic() - calm_since >= quiet:
                return
        else:
            calm_since = None
        time.sleep(0.01)
    raise AssertionError("the server did not settle")


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def priority_class_doc(name: str, value: int, preemption: str = "") -> dict[str, Any]:
    """A PriorityClass; ``preemption``: its preemptionPolicy (the API's default when empty)."""
    doc: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if preemption:
        doc["preemptionPolicy"] = preemption
    return doc


def node_doc(name: str, cpu: str = "4", memory: str = "8Gi", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels)},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod_doc(
    name: str,
    cpu: str = "1",
    *,
    scheduler: str = "berth",
    namespace: str = "default",
    node: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    priority_class: str = "",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
    }
