"""Helpers for the Kubernetes backend tests: the emulator with object helpers, a client of it
through the official ``kubernetes`` package, and a berth server run in a thread."""

from __future__ import annotations

import copy
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import yaml
from kubernetes import client as k8s_client

from berth.framework.config import SchedulerConfig, parse_config
from berth.framework.config_files import load_config
from berth.k8s.client import KubeClient
from berth.k8s.kinds import BY_KIND
from berth.k8s.server import ServeOptions, Server
from tests.k8s.emulator import PDB, EmulatorThread, merge_patch

RESOURCES = {kind: (r.group, r.version, r.plural) for kind, r in BY_KIND.items()}
RESOURCES["PodDisruptionBudget"] = PDB
#: The cluster each client was made for, by its URL (settle() asks it what to wait for).
_CLUSTERS: weakref.WeakValueDictionary[str, Cluster] = weakref.WeakValueDictionary()


class Cluster:
    """The emulator with helpers to put objects in and read decisions out (every change goes
    through the emulator's own loop, so watchers hear of it as of any API write)."""

    def __init__(self, emulator: EmulatorThread) -> None:
        self.emulator = emulator
        assert emulator.handler is not None
        self.api = emulator.handler

    def add(self, *docs: dict[str, Any]) -> None:
        for doc in docs:
            self.emulator.run(self.api.put, RESOURCES[doc["kind"]], copy.deepcopy(doc))

    def add_yaml(self, text: str) -> None:
        self.add(*(doc for doc in yaml.safe_load_all(text) if doc))

    def patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> None:
        def go() -> None:
            resource = RESOURCES[kind]
            current = self.api.store[resource][(namespace, name)]
            self.api.put(resource, merge_patch(current, patch), "MODIFIED")

        self.emulator.run(go)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        def go() -> None:
            resource = RESOURCES[kind]
            self.api.put(resource, self.api.store[resource][(namespace, name)], "DELETED")

        self.emulator.run(go)

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return self.emulator.run(
            lambda: [copy.deepcopy(o) for o in self.api.objects(*RESOURCES[kind])]
        )

    def bindings(self) -> dict[str, str]:
        """pod key → node, for every pod the API has on a node."""
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.objects("Pod")
            if p.get("spec", {}).get("nodeName")
        }

    @contextmanager
    def kubelet(self, every: float = 0.01) -> Iterator[None]:
        """Start the containers of bound pods, as the node agent would: a pod with a node and
        no phase past Pending becomes Running."""
        stop = threading.Event()

        def start_bound() -> None:
            for resource_key, pods in (("Pod", self.api.store[RESOURCES["Pod"]]),):
                for pod in list(pods.values()):
                    status = pod.get("status") or {}
                    if pod.get("spec", {}).get("nodeName") and status.get("phase") in (
                        None,
                        "Pending",
                    ):
                        running = merge_patch(pod, {"status": {"phase": "Running"}})
                        self.api.put(RESOURCES[resource_key], running, "MODIFIED")

        def loop() -> None:
            while not stop.wait(every):
                self.emulator.run(start_bound)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)

    def latest(self) -> dict[str, int]:
        """The last resourceVersion written, per resource plural."""
        return self.emulator.run(
            lambda: {key[2]: events[-1][0] for key, events in self.api.history.items() if events}
        )

    def client(self, **options: Any) -> KubeClient:
        configuration = k8s_client.Configuration()
        configuration.host = self.emulator.url
        _CLUSTERS[configuration.host] = self
        options.setdefault("backoff", 0.01)
        return KubeClient(configuration, **options)


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


def _caught_up(server: Server, seen: dict[str, int]) -> bool:
    for informer in server.informers:
        target = seen.get(informer.resource.plural)
        if target is not None and int(informer.version or 0) < target:
            return False
    return True


def settle(server: Server, timeout: float = 15.0, quiet: float = 0.15) -> None:
    """Wait until the server has seen every change the API had when called, and has had
    nothing to do for ``quiet`` seconds since."""
    cluster = _CLUSTERS.get(server.client.host)
    seen = cluster.latest() if cluster is not None else {}
    deadline = time.monotonic() + timeout
    calm_since: float | None = None
    while time.monotonic() < deadline:
        if server.synced and server.settled.is_set() and _caught_up(server, seen):
            calm_since = calm_since or time.monotonic()
            if time.monotonic() - calm_since >= quiet:
                return
        else:
            calm_since = None
        time.sleep(0.01)
    raise AssertionError("the server did not settle")


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


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
