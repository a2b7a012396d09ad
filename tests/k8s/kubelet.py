"""A fake kubelet for the real API server: it registers nodes, keeps their Leases and Ready
condition, and plays the part of the container runtime for the pods bound to them.

A bound pod becomes Running (its containers started) once seen, and Ready when every
readiness gate's condition is True too, as the kubelet decides it (it decides again whenever a
controller changes one of those conditions); one whose ``berth.io/duration`` annotation gives
seconds ends Succeeded that long after it started; others run until deleted. A running pod
whose spec names another image than a container runs (an in-place update) has that container
restarted on the new image: a new imageID, its restartCount one higher. A pod being deleted
(``deletionTimestamp``) is removed for good once its grace period is over, as the kubelet does
after stopping its containers (capped by ``max_grace`` so tests need not wait half a minute).
It runs with admin credentials: the Node authorizer's per-node identities say nothing about
berth.
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from berth.api.keys import DURATION_ANNOTATION
from berth.k8s.client import ApiError, ConnectionLost, KubeClient

log = logging.getLogger("tests.kubelet")
LEASE_NAMESPACE = "kube-node-lease"
STRATEGIC = "application/strategic-merge-patch+json"


def image_id(image: str) -> str:
    """What a runtime reports as the image's id: a digest of its name here."""
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def gates_open(pod: dict[str, Any], conditions: dict[str, str]) -> bool:
    """Whether every readiness gate's condition is True (``conditions``: type → status)."""
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    return all(conditions.get(g.get("conditionType")) == "True" for g in gates)


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_node(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as a kubelet registers it: capacity beside allocatable, Ready, a heartbeat."""
    node = {**doc, "metadata": dict(doc.get("metadata") or {})}
    status = dict(node.get("status") or {})
    status.setdefault("capacity", dict(status.get("allocatable") or {}))
    now = stamp()
    status["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    ]
    node["status"] = status
    return node


class FakeKubelet:
    """One kubelet for every node it registered. ``run()`` plays the nodes' pods until the
    returned context ends; registering needs no loop."""

    def __init__(self, client: KubeClient, *, max_grace: float = 2.0, lease_every: float = 10.0):
        self.client = client
        self.max_grace = max_grace
        self.lease_every = lease_every
        self.nodes: set[str] = set()
        self._timers: list[tuple[float, int, str, str, str]] = []  # at, seq, action, ns/name, uid
        self._seq = 0
        self._stop = threading.Event()

    # ------------------------------------------------------------------ nodes

    def register(self, doc: dict[str, Any]) -> dict[str, Any]:
        node = self.client.request("POST", "/api/v1/nodes", body=ready_node(doc))
        name = node["metadata"]["name"]
        self.nodes.add(name)
        self._renew_lease(name, node["metadata"]["uid"])
        return node

    def _renew_lease(self, node: str, uid: str = "") -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now}
        try:
            lease = self.client.request("GET", f"{path}/{node}")
        except ApiError as exc:
            if exc.status != 404:
                raise
            meta: dict[str, Any] = {"name": node, "namespace": LEASE_NAMESPACE}
            if uid:
                meta["ownerReferences"] = [
                    {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
                ]
            self.client.request("POST", path, body={"metadata": meta, "spec": spec})
            return
        lease["spec"] = {**lease.get("spec", {}), **spec}
        self.client.request("PUT", f"{path}/{node}", body=lease)

    # ------------------------------------------------------------------ pods

    @contextmanager
    def run(self) -> Iterator[None]:
        self._stop.clear()
        thread = threading.Thread(target=self._loop, name="fake-kubelet", daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join(10)

    def _loop(self) -> None:
        next_lease = 0.0
        while not self._stop.is_set():
            try:
                if time.monotonic() >= next_lease:
                    for node in sorted(self.nodes):
                        self._renew_lease(node)
                    next_lease = time.monotonic() + self.lease_every
                self._watch(min(5.0, self.lease_every))
            except (ApiError, ConnectionLost) as exc:
                log.info("kubelet: %s", exc)
                self._stop.wait(0.2)

    def _watch(self, seconds: float) -> None:
        """List the pods, act on each, then follow a watch for ``seconds``."""
        answer = self.client.request("GET", "/api/v1/pods")
        for pod in answer.get("items") or []:
            self._see(pod)
        version = answer["metadata"]["resourceVersion"]
        deadline = time.monotonic() + seconds
        query = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "1"}
        while time.monotonic() < deadline and not self._stop.is_set():
            self._fire_timers()
            for event in self.client.stream("/api/v1/pods", query, timeout=3):
                if event.get("type") == "ERROR":
                    return  # relist
                obj = event.get("object") or {}
                query["resourceVersion"] = obj.get("metadata", {}).get("resourceVersion", "")
                if event.get("type") in ("ADDED", "MODIFIED"):
                    self._see(obj)
                self._fire_timers()
                if self._stop.is_set():
                    return

    def _see(self, pod: dict[str, Any]) -> None:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if spec.get("nodeName") not in self.nodes:
            return
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        uid = meta.get("uid", "")
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if meta.get("deletionTimestamp"):
            grace = float(meta.get("deletionGracePeriodSeconds") or 0)
            self._at(time.monotonic() + min(grace, self.max_grace), "remove", key, uid)
            return
        if phase == "Pending":
            self._start(pod, key, uid)
        elif phase == "Running":
            self._sync(pod, key, uid)

    def _start(self, pod: dict[str, Any], key: str, uid: str) -> None:
        now = stamp()
        containers = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": image_id(c.get("image", "")),
                "containerID": f"fake://{uid}/{c['name']}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in pod["spec"].get("containers") or []
        ]
        others = {
            c.get("type"): c.get("status")
            for c in (pod.get("status") or {}).get("conditions") or []
        }
        ready = "True" if gates_open(pod, others) else "False"
        conditions = [
            {"type": t, "status": "True", "lastTransitionTime": now}
            for t in ("PodScheduled", "Initialized", "ContainersReady")
        ]
        conditions.append({"type": "Ready", "status": ready, "lastTransitionTime": now})
        status = {
            "phase": "Running",
            "startTime": now,
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "conditions": conditions,
            "containerStatuses": containers,
        }
        if not self._patch_status(key, uid, status, STRATEGIC):
            return
        duration = (pod["metadata"].get("annotations") or {}).get(DURATION_ANNOTATION)
        if duration:
            try:
                seconds = float(duration)
            except ValueError:
                return  # runs until deleted, as berth would refuse to time it
            self._at(time.monotonic() + seconds, "finish", key, uid)

    def _sync(self, pod: dict[str, Any], key: str, uid: str) -> None:
        """A running pod: containers whose image changed in the spec restart on the new one;
        Ready follows the containers and the readiness gates."""
        status = pod.get("status") or {}
        images = {c["name"]: c.get("image", "") for c in pod["spec"].get("containers") or []}
        now = stamp()
        restarted = [
            {
                **c,
                "image": images[c["name"]],
                "imageID": image_id(images[c["name"]]),
                "restartCount": int(c.get("restartCount") or 0) + 1,
                "ready": True,
                "started": True,
                "state": {"running": {"startedAt": now}},
            }
            for c in status.get("containerStatuses") or []
            if c.get("name") in images and c.get("image") != images[c["name"]]
        ]
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        containers_ready = conditions.get("ContainersReady") == "True"
        ready = "True" if containers_ready and gates_open(pod, conditions) else "False"
        patch: dict[str, Any] = {}
        if restarted:
            patch["containerStatuses"] = restarted
        if conditions.get("Ready") != ready:
            patch["conditions"] = [{"type": "Ready", "status": ready, "lastTransitionTime": now}]
        if patch:
            self._patch_status(key, uid, patch, STRATEGIC)

    def _finish(self, key: str, uid: str) -> None:
        now = stamp()
        pod = self._get(key)
        if pod is None or pod["metadata"].get("uid") != uid:
            return
        if (pod.get("status") or {}).get("phase") != "Running":
            return
        containers = [
            {
                **c,
                "ready": False,
                "started": False,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now}},
            }
            for c in pod["status"].get("containerStatuses") or []
        ]
        conditions = [
            {**c, "status": "False", "lastTransitionTime": now}
            if c["type"] in ("Ready", "ContainersReady")
            else c
            for c in pod["status"].get("conditions") or []
        ]
        self._patch_status(
            key,
            uid,
            {"phase": "Succeeded", "conditions": conditions, "containerStatuses": containers},
        )

    def _remove(self, key: str, uid: str) -> None:
        namespace, name = key.split("/", 1)
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        try:
            self.client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body=body)
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise

    # ------------------------------------------------------------------ helpers

    def _get(self, key: str) -> dict[str, Any] | None:
        namespace, name = key.split("/", 1)
        try:
            return self.client.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def _patch_status(
        self,
        key: str,
        uid: str,
        status: dict[str, Any],
        content_type: str = "application/merge-patch+json",
    ) -> bool:
        """Patch the pod's status (a strategic merge patch merges conditions by type and
        container statuses by name; a merge patch replaces each list whole)."""
        namespace, name = key.split("/", 1)
        patch = {"metadata": {"uid": uid}, "status": status}
        try:
            self.client.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                body=patch,
                content_type=content_type,
            )
        except ApiError as exc:
            if exc.status in (404, 409, 422):
                return False  # gone, or another pod of the same name
            raise
        return True

    def _at(self, at: float, action: str, key: str, uid: str) -> None:
        heapq.heappush(self._timers, (at, self._seq, action, key, uid))
        self._seq += 1

    def _fire_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, action, key, uid = heapq.heappop(self._timers)
            if action == "finish":
                self._finish(key, uid)
            else:
                self._remove(key, uid)
