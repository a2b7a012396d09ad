"""What reaches the serve loop's thread, applied there: the informers' events and the binder's
answers.

Until every watched kind has delivered its first list, events are held kind by kind; then the
lists are applied in the fixed order of the watched kinds (priority classes, queues, nodes,
groups, jobs, commands, pods), so the scheduler starts from the state the simulator's loader
gives it. A kind counts as listed once its marker is drained, not when its informer says so:
the informer's flag is set before the loop has applied what its list delivered.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable

from berth.framework.scheduler import Scheduler
from berth.k8s.binder import BindResult
from berth.k8s.books import PodBooks
from berth.k8s.cache import KubeStore
from berth.k8s.client import ApiError, ConnectionLost
from berth.k8s.informer import Event
from berth.k8s.kinds import Resource
from berth.k8s.metrics import Metrics
from berth.store import NotFound

log = logging.getLogger("berth.k8s")

#: Events applied before the loop looks at cycles again: a burst of arrivals is scheduled (and
#: its binds go out) while the rest of it is still being read.
DRAIN_BATCH = 2000


class EventIntake:
    def __init__(
        self,
        events: queue.Queue,
        store: KubeStore,
        watched: tuple[Resource, ...],
        books: PodBooks,
        scheduler: Scheduler,
        metrics: Metrics,
        bind_result: Callable[[BindResult], None],
        see: Callable[[Event], None] | None = None,
    ) -> None:
        self.events = events
        self.store = store
        self.watched = watched
        self.books = books
        self.scheduler = scheduler
        self.metrics = metrics
        self._bind_result = bind_result
        self._see = see  # told of every event once synced (gpu-load-aware's profiles)
        self.synced = False
        self._buffered: dict[str, list[Event]] = {r.kind: [] for r in watched}
        self._listed: set[str] = set()

    def drain(self, wait: float) -> None:
        """Apply the queued events, at most DRAIN_BATCH of them (waiting up to ``wait``
        seconds for the first)."""
        try:
            item = self.events.get(timeout=wait) if wait > 0 else self.events.get_nowait()
        except queue.Empty:
            return
        self._handle(item)
        for _ in range(DRAIN_BATCH - 1):
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                return
            self._handle(item)

    def _handle(self, item: Event | BindResult) -> None:
        try:
            self._handle_one(item)
        except (ApiError, ConnectionLost, NotFound) as exc:
            # A write a controller made in reaction failed after its retries: the next event
            # or resync brings the object round again.
            kind = getattr(item, "kind", "bind")
            log.error("event not handled", extra={"kind": kind, "error": str(exc)})

    def _handle_one(self, item: Event | BindResult) -> None:
        if isinstance(item, BindResult):
            self._bind_result(item)
        elif not self.synced:
            if item.type == "SYNCED":
                self._listed.add(item.kind)
            else:
                self._buffered[item.kind].append(item)
        elif item.type != "SYNCED":
            if self._see is not None:
                self._see(item)
            self.books.arrival = item.received
            self.store.apply(item)
            self.books.arrival = None

    def try_sync(self) -> None:
        """Apply the first lists, kind by kind, once every kind has listed."""
        if len(self._listed) < len(self.watched):
            return
        for resource in self.watched:
            for event in self._buffered.pop(resource.kind):
                self.store.apply(event)
        self.synced = True
        self.metrics.skipped_objects.set(len(self.store.skipped))
        log.info(
            "caches synced",
            extra={"nodes": self.scheduler.state.n, "pending": len(self.books.pending)},
        )
