"""Binds and evictions through the API.

Binds go out from a pool of worker threads so a scheduling cycle never waits for them: the
Scheduler has already accounted the pod on its node (the assumed placement, as kube-scheduler's
cache keeps it) and the watch confirms it later. Each outcome comes back to the serve loop as a
``BindResult`` on its event queue; a failed bind is undone there and the pod requeued.

Before a bind, the annotation hooks run (``annotate``): each returns annotations the pod must
carry before it lands on its node (CPU sets, GPU device ids such as ``berth.io/gpu-devices``),
which are patched onto the pod first, as the node agent reads them when the pod starts.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from berth.api.objects import Pod
from berth.k8s.client import MERGE_PATCH, ApiError, ConnectionLost, KubeClient
from berth.k8s.kinds import POD

log = logging.getLogger("berth.k8s")

#: A hook: the annotations to write on ``pod`` before it is bound to ``node`` (may be empty).
AnnotationHook = Callable[[Pod, str], dict[str, str]]


@dataclass(slots=True)
class BindResult:
    pod: Pod
    node: str
    error: ApiError | ConnectionLost | None
    seconds: float  # how long the API calls took


def binding_body(pod: Pod, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def eviction_body(pod: Pod) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
    }


class Binder:
    def __init__(
        self,
        client: KubeClient,
        results: queue.Queue,
        *,
        workers: int = 4,
        annotate: list[AnnotationHook] | None = None,
    ) -> None:
        self.client = client
        self.results = results
        self.annotate: list[AnnotationHook] = list(annotate or [])
        self._work: queue.Queue = queue.Queue()
        self._threads = [
            threading.Thread(target=self._run, name=f"binder-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def bind(self, pod: Pod, node: str) -> None:
        """Queue a bind; its BindResult arrives on the results queue."""
        self._work.put((pod, node))

    def stop(self) -> None:
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join(5)

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            pod, node = item
            started = time.perf_counter()
            error: ApiError | ConnectionLost | None = None
            try:
                self._annotate(pod, node)
                self.client.request(
                    "POST",
                    POD.item(pod.namespace, pod.name, "binding"),
                    body=binding_body(pod, node),
                )
            except (ApiError, ConnectionLost) as exc:
                error = exc
            self.results.put(BindResult(pod, node, error, time.perf_counter() - started))

    def _annotate(self, pod: Pod, node: str) -> None:
        annotations: dict[str, str] = {}
        for hook in self.annotate:
            annotations.update(hook(pod, node))
        if not annotations:
            return
        self.client.request(
            "PATCH",
            POD.item(pod.namespace, pod.name),
            body={"metadata": {"annotations": annotations}},
            content_type=MERGE_PATCH,
        )
        pod.annotations.update(annotations)

    def evict(self, pod: Pod) -> ApiError | ConnectionLost | None:
        """Evict now (evictions are few and their outcome decides what the controllers hear):
        None when the API accepted it or the pod is already gone; the error otherwise, e.g.
        429 when a PodDisruptionBudget forbids it."""
        try:
            self.client.request(
                "POST",
                POD.item(pod.namespace, pod.name, "eviction"),
                body=eviction_body(pod),
                retry=False,
            )
        except ApiError as exc:
            if exc.status == 404:
                return None
            return exc
        except ConnectionLost as exc:
            return exc
        return None
