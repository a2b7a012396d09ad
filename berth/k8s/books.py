"""Where the Scheduler holds each pod of the cluster: queued (pending), or accounted on a node
(placed). The API is the truth; these books turn its pod events into the Scheduler's calls,
and keep the node berth accounted a pod on apart from the node the API reports, so a pod that
turns out elsewhere (bound by someone else, or moved while berth was away) is released from
the right row."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from berth.api.objects import FINAL_POD_PHASES, Pod, PodPhase
from berth.framework.scheduler import Scheduler
from berth.store import WatchEvent


class Holder(Protocol):
    """Keeps some pending pods out of the scheduler's sight (a scaling policy's)."""

    def holds(self, pod: Pod) -> bool: ...

    def forget(self, pod: Pod) -> None: ...


class PodBooks:
    def __init__(
        self,
        scheduler: Scheduler,
        changed: Callable[[], None],
        running: Callable[[Pod], None],
    ) -> None:
        self.scheduler = scheduler
        self._changed = changed  # something the next cycle should see
        self._running = running  # a placed pod started
        self.pending: set[str] = set()
        self.placed: dict[str, str] = {}
        self.first_seen: dict[str, float] = {}  # pending pod → when its event came in
        self.first_pending_at: float | None = None
        #: When the event being applied was received (None: now).
        self.arrival: float | None = None
        self._orphans: dict[str, list[Pod]] = {}  # pods on nodes not seen yet, by node
        self.holder: Holder | None = None
        #: Pods a session evicted whose room it has handed on already: while their kubelet
        #: stops them (the API shows them terminating, still on their node) they are not
        #: accounted again, or their queue would look fuller than it is and the room they
        #: leave would be counted twice, once for them and once for the pod that took it.
        self.released: set[str] = set()

    def observe(self, event: WatchEvent, pod: Pod) -> None:
        """A pod event from the cache."""
        key = pod.key
        if event == WatchEvent.DELETED and pod.phase not in FINAL_POD_PHASES:
            pod.phase = PodPhase.DELETED
        if pod.phase in FINAL_POD_PHASES:
            self.released.discard(key)
            self.forget(pod)
            return
        if key in self.released:
            return
        placed = self.placed.get(key)
        if pod.bound_node:
            if self.holder is not None:
                self.holder.forget(pod)  # bound by someone else while held
            if placed == pod.bound_node:
                if pod.phase == PodPhase.RUNNING:
                    self._running(pod)
                return
            if placed is not None:
                self.unplace(pod)  # on another node than berth thought: believe the API
            elif key in self.pending:
                self.withdraw(pod)
            self.place(pod)
            return
        if placed is not None or key in self.pending:
            return  # a bind in flight, or already queued
        if self.scheduler.handles(pod) and not (self.holder and self.holder.holds(pod)):
            self.submit(pod)

    def submit(self, pod: Pod) -> None:
        self.scheduler.submit(pod)
        self.pending.add(pod.key)
        seen = self.first_seen.setdefault(pod.key, self.arrival or time.perf_counter())
        if self.first_pending_at is None:
            self.first_pending_at = seen
        self._changed()

    def assume(self, pod: Pod, node: str) -> None:
        """A session placed the pod (the Scheduler has accounted it already)."""
        self.pending.discard(pod.key)
        self.placed[pod.key] = node

    def place(self, pod: Pod) -> None:
        """Account a pod the API has on a node (another scheduler's, or berth's own after a
        restart) as load."""
        if pod.bound_node not in self.scheduler.state.rows:
            self._orphans.setdefault(pod.bound_node, []).append(pod)
            return
        self.scheduler.place_bound(pod, pod.bound_node)
        self.placed[pod.key] = pod.bound_node
        self._changed()

    def place_on(self, pod: Pod, node: str) -> None:
        """Put back a pod whose eviction the API refused."""
        self.scheduler.place_bound(pod, node)
        self.placed[pod.key] = node

    def node_added(self, node: str) -> None:
        for pod in self._orphans.pop(node, []):
            self.place(pod)

    def unplace(self, pod: Pod) -> None:
        node = self.placed.pop(pod.key)
        actual = pod.bound_node
        pod.bound_node = node
        self.scheduler.release(pod)
        pod.bound_node = actual
        self._changed()

    def withdraw(self, pod: Pod) -> None:
        self.pending.discard(pod.key)
        self.first_seen.pop(pod.key, None)
        self.scheduler.withdraw(pod)
        self._changed()

    def requeue(self, pod: Pod) -> None:
        """Undo an assumed placement and queue the pod for the next cycle."""
        self.unplace(pod)
        pod.bound_node, pod.phase = "", PodPhase.PENDING
        self.submit(pod)

    def forget(self, pod: Pod) -> None:
        if self.holder is not None:
            self.holder.forget(pod)
        if pod.key in self.placed:
            self.unplace(pod)
        elif pod.key in self.pending:
            self.withdraw(pod)
        else:
            orphans = self._orphans.get(pod.bound_node)
            if orphans and pod in orphans:
                orphans.remove(pod)
