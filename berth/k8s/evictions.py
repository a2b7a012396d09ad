"""Evictions through the API for ``berth serve``: a session's victims, workers a scaling policy
cuts, pods on nodes loaning takes back or colocation protects.

Every eviction is posted for a pod the Scheduler has already let go of; a refusal (a
PodDisruptionBudget, 429) puts it back on its node in berth's books. Evicted pods are handed to
their controllers only once all of a batch are marked, as in the simulator, and binds to their
nodes wait until they are gone (``VictimHold``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from berth.api.objects import Pod, PodPhase
from berth.framework.statement import Eviction
from berth.k8s.binder import Binder
from berth.k8s.books import PodBooks
from berth.k8s.cache import KubeStore
from berth.k8s.client import ApiError, ConnectionLost
from berth.k8s.dra import LiveClaims
from berth.k8s.metrics import Metrics
from berth.k8s.victims import VictimHold
from berth.store import NotFound, WatchEvent

log = logging.getLogger("berth.k8s")


class Evictions:
    def __init__(
        self,
        store: KubeStore,
        books: PodBooks,
        victims: VictimHold,
        metrics: Metrics,
        clock: Callable[[], float],
        binder: Callable[[], Binder | None],
        dra: LiveClaims | None,
    ) -> None:
        self.store = store
        self.books = books
        self.victims = victims
        self.metrics = metrics
        self.clock = clock
        self._binder = binder  # made when the server starts leading
        self.dra = dra

    def of_session(self, evictions: list[Eviction]) -> set[str]:
        """Post a session's evictions before its binds. The nodes where one was refused are
        returned: that cycle binds nothing there."""
        evicted = []
        refused_on: set[str] = set()
        for eviction in evictions:
            pod = eviction.pod
            self.books.placed.pop(pod.key, None)  # the session has released it already
            if self.post(pod, eviction.node, eviction.reason):
                self.books.released.add(pod.key)
                evicted.append(pod)
                if self.dra is not None:
                    self.dra.release(pod)  # its devices go to the preemptor
                if self.store.get("Pod", pod.key) is pod:  # its deletion is still to come
                    self.victims.evicted(pod.key, eviction.node)
            else:
                refused_on.add(eviction.node)
        for pod in evicted:
            if pod.owner:
                self.store.notify("Pod", WatchEvent.MODIFIED, pod)
        return refused_on

    def running(self, pods: list[Pod], reason: str) -> int:
        """Evict running pods berth's books hold (workers a scaling policy cut, training pods
        on a node loaning takes back, BE pods colocation evicts); how many were evicted (a
        refused eviction leaves the pod where it is)."""
        evicted = []
        for pod in pods:
            node = self.books.placed.get(pod.key)
            if node is None:
                continue
            self.books.unplace(pod)
            if self.post(pod, node, reason):
                evicted.append((pod, node))
        for pod, node in evicted:
            try:
                self.store.notify("Pod", WatchEvent.MODIFIED, pod)  # its controller replaces it
            except (ApiError, ConnectionLost, NotFound) as exc:
                log.error("replacement not made", extra={"pod": pod.key, "error": str(exc)})
            # As a session's victim: its room is handed on, binds there wait till it is gone.
            self.books.released.add(pod.key)
            self.victims.evicted(pod.key, node)
        return len(evicted)

    def post(self, pod: Pod, node: str, reason: str) -> bool:
        """Evict a pod berth has already released through the API; a refusal puts it back on
        ``node`` in the Scheduler's books. True when it was evicted."""
        binder = self._binder()
        assert binder is not None
        error = binder.evict(pod)
        if error is None:
            self.metrics.evictions.labels("evicted").inc()
            pod.phase = PodPhase.EVICTED
            pod.end_time = self.clock()
            log.info("evicted", extra={"pod": pod.key, "reason": reason})
            return True
        refused = getattr(error, "status", 0) == 429
        self.metrics.evictions.labels("refused" if refused else "failed").inc()
        log.warning("eviction refused", extra={"pod": pod.key, "error": str(error)})
        self.books.place_on(pod, node)
        return False
