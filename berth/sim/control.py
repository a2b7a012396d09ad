"""The controllers' side of a simulation: the object store, the ``Runtime`` every registered
controller runs on, and workload objects arriving and changing at their submit times.

A workload object's first version is created in the store at its ``berth.io/submit-time``;
each later version replaces its spec, labels and annotations at its own time, as
``kubectl apply`` of the edited manifest would, and its controller sees the change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from berth.api.objects import Node
from berth.api.workloads import Workload
from berth.controllers import start_controllers
from berth.controllers.runtime import Controller
from berth.sim.agent import Clock
from berth.sim.events import Ev, EventQueue
from berth.store import MemoryStore


class ControlPlane:
    """Implements ``berth.controllers.runtime.Runtime`` for the simulator."""

    def __init__(self, queue: EventQueue, clock: Clock) -> None:
        self.queue = queue
        self.clock = clock
        self.store = MemoryStore()
        #: The objects the workload files defined (first versions, changed in place by later
        #: ones), in arrival order: what the workloads table reports.
        self.workloads: list[Workload] = []
        #: Whether the run has workload objects (without them, no admission hook can exist).
        self.workloads_expected = False
        self.controllers: list[Controller] = start_controllers(self)

    # ------------------------------------------------------------------ Runtime

    def now(self) -> float:
        return self.clock.now

    def at(self, time: float, callback: Callable[[], None]) -> None:
        self.queue.push(time, Ev.TIMER, callback)

    def soon(self, callback: Callable[[], None]) -> None:
        self.queue.push(self.clock.now, Ev.RECONCILE, callback)

    def admit(self, kind: str, hook: Callable[[Any], None]) -> None:
        self.store.admit(kind, hook)

    # ------------------------------------------------------------------ the simulation's side

    def add_nodes(self, nodes: list[Node]) -> None:
        """Nodes in the store, for the controllers that read them (BroadcastJob)."""
        for node in nodes:
            self.store.create("Node", replace(node))

    def node_schedulable(self, name: str, schedulable: bool, original: bool) -> None:
        """A node failed (unschedulable) or recovered (back to how it was defined)."""
        node = self.store.get("Node", name)
        if node is not None:
            node.unschedulable = original if schedulable else True
            self.store.update("Node", node)

    def apply(self, workload: Workload) -> None:
        """A workload object arrives, or a later version of one."""
        existing = self.store.get(workload.kind, workload.key)
        if existing is None:
            self.workloads.append(workload)
            self.store.create(workload.kind, workload)
            return
        existing.spec = workload.spec
        existing.labels = dict(workload.labels)
        existing.annotations = dict(workload.annotations)
        self.store.update(workload.kind, existing)

    def deleted_reasons(self) -> dict[str, str]:
        """Pod ref → why a controller deleted it, over every controller."""
        reasons: dict[str, str] = {}
        for controller in self.controllers:
            reasons.update(controller.deleted)
        return reasons
