"""The controllers on a store and a clock, without scheduler or simulator: tests move pods
through their phases by hand, as Kubernetes' and OpenKruise's controller tests drive fake pods
(``setPodRunning``, ``setPodReady``), and look at what the controllers did."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from berth.api.objects import FINAL_POD_PHASES, Node, Pod, PodPhase
from berth.api.workloads import Workload
from berth.controllers import start_controllers
from berth.store import MemoryStore, WatchEvent


class Harness:
    """Implements ``berth.controllers.runtime.Runtime``."""

    def __init__(self, nodes: list[Node] | None = None) -> None:
        self.store = MemoryStore()
        self.time = 0.0
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self._soon: list[Callable[[], None]] = []
        self.controllers = start_controllers(self)
        self._containers: dict[str, tuple[tuple[str, str], ...]] = {}
        self.store.watch("Pod", self._node_agent)
        for node in nodes or []:
            self.store.create("Node", node)

    # -- Runtime

    def now(self) -> float:
        return self.time

    def at(self, time: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (time, self._seq, callback))
        self._seq += 1

    def soon(self, callback: Callable[[], None]) -> None:
        self._soon.append(callback)

    def admit(self, kind: str, hook: Callable[[Any], None]) -> None:
        self.store.admit(kind, hook)

    # -- what the simulator would do

    def _node_agent(self, event: WatchEvent, pod: Pod) -> None:
        """A deleted pod ends; new images on a running pod make it unready (restarting)."""
        if event == WatchEvent.DELETED and pod.phase not in FINAL_POD_PHASES:
            pod.phase = PodPhase.DELETED
            pod.ready_since = None
        elif event == WatchEvent.MODIFIED and pod.phase == PodPhase.RUNNING:
            if self._containers.get(pod.uid, pod.containers) != pod.containers:
                pod.ready_since = None
                pod.restarts += 1
            self._containers[pod.uid] = pod.containers

    def settle(self) -> None:
        """Run the controllers' queued passes until none is left."""
        while self._soon:
            self._soon.pop(0)()

    def advance(self, to: float) -> None:
        """Move the clock to ``to``, firing timers on the way."""
        while self._timers and self._timers[0][0] <= to:
            at, _, callback = heapq.heappop(self._timers)
            self.time = at
            callback()
            self.settle()
        self.time = to
        self.settle()

    def apply(self, workload: Workload) -> Workload:
        existing = self.store.get(workload.kind, workload.key)
        if existing is None:
            self.store.create(workload.kind, workload)
            existing = workload
        else:
            existing.spec = workload.spec
            self.store.update(workload.kind, existing)
        self.settle()
        return existing

    def pods(self, owner: Workload | None = None, live: bool = True) -> list[Pod]:
        """Pods in the store (``live``: not ended), by name."""
        pods = [
            p
            for p in self.store.list("Pod")
            if (owner is None or (p.owner == owner.key and p.owner_kind == owner.kind))
            and (not live or p.phase in (PodPhase.PENDING, PodPhase.BOUND, PodPhase.RUNNING))
        ]
        return sorted(pods, key=lambda p: p.name)

    def names(self, owner: Workload | None = None) -> list[str]:
        return [p.name for p in self.pods(owner)]

    def _changed(self, pod: Pod) -> None:
        self.store.update("Pod", pod)
        self.settle()

    def bind(self, pod: Pod, node: str = "n0") -> None:
        pod.phase, pod.bound_node, pod.bind_time = PodPhase.BOUND, node, self.time
        self._changed(pod)

    def run(self, pod: Pod, ready: bool = True, node: str | None = None) -> None:
        pod.phase = PodPhase.RUNNING
        pod.bound_node = node or pod.bound_node or "n0"
        pod.start_time = self.time
        pod.ready_since = self.time if ready else None
        self._containers[pod.uid] = pod.containers
        self._changed(pod)

    def ready(self, pod: Pod) -> None:
        pod.ready_since = self.time
        self._changed(pod)

    def run_all(self, owner: Workload | None = None) -> None:
        """Every pod not yet running starts, ready; and again for pods that creates."""
        while True:
            waiting = [
                p for p in self.pods(owner) if p.phase != PodPhase.RUNNING or p.ready_since is None
            ]
            if not waiting:
                return
            for pod in waiting:
                if pod.phase == PodPhase.RUNNING:
                    self.ready(pod)
                else:
                    self.run(pod)

    def end(self, pod: Pod, phase: PodPhase) -> None:
        pod.phase, pod.end_time, pod.ready_since = phase, self.time, None
        self._changed(pod)
