"""What the pod webhook of ``berth serve --kruise`` reads, kept by every replica, leader or
standby: a read-only watch of the SidecarSets (and the PriorityClasses a pod under review
converts with), and the injection answered from it.

Why a cache of its own rather than the serve loop's: a standby runs no serve loop (it waits for
the Lease), yet the webhook Service sends it half the pods. Answering from this cache on every
replica makes the answer independent of leadership, as Kruise's webhook is served by every
replica of its manager: a standby injects exactly as the leader does (the same informers, the
same ``KubeStore.apply``, the same ``SidecarSets.admit``), a standby that becomes leader keeps
the cache and the port it had (no gap, no handover), and a leader that steps down answers until
its process ends. The leader pays two small cluster-scoped watches on top of its loop's.

Read-only: the SidecarSet controller here gets no timers (``at`` drops them), so it never
reconciles: the in-place sidecar upgrade and the status writes stay the leader's serve loop's.

Readiness: the webhook answers once both kinds have delivered their first list. Before that it
answers HTTP 503 (``berth.k8s.webhook``): a webhook failure, so the configuration's
``failurePolicy`` decides (Fail, Kruise's and deploy/'s: the pod is refused and its creator
retries), never a pod admitted without the sidecars it should have had. Kruise gets the same
outcome differently (its cache reads block until synced and the API server's call times out);
as in Kruise, the replica's ``/readyz`` stays false until then, so a Service only sends the
webhook's calls to replicas that can answer them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from berth.k8s.cache import KubeStore
from berth.k8s.client import KubeClient
from berth.k8s.informer import Event, Informer
from berth.k8s.kinds import PRIORITY_CLASS, SIDECAR_SET
from berth.k8s.sidecarset import Admitted, SidecarSets

#: What injection reads: a pod converts with the PriorityClasses, the sets decide its sidecars.
WATCHED = (PRIORITY_CLASS, SIDECAR_SET)

log = logging.getLogger("berth.k8s")


def _no_timers(at: float, callback: Callable[[], None]) -> None:
    """The controller's timers, dropped: it never reconciles here, so it never writes."""


class WebhookCache:
    def __init__(
        self,
        client: KubeClient,
        *,
        resync: float = 300.0,
        watch_timeout: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.events: queue.Queue = queue.Queue()
        self.store = KubeStore(client)
        self.sidecars = SidecarSets(self.store, clock, _no_timers)
        self.informers = [
            Informer(client, resource, self.events, resync=resync, watch_timeout=watch_timeout)
            for resource in WATCHED
        ]
        #: Set once every watched kind's first list has been applied.
        self.synced = threading.Event()
        self._listed: set[str] = set()
        # The webhook's thread reads the cache while this one applies events to it.
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webhook-cache", daemon=True)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        for informer in self.informers:
            informer.stop()
        if self._thread.is_alive():
            self._thread.join(5)

    def ready(self) -> bool:
        return self.synced.is_set()

    def admit(self, raw: dict, namespace: str) -> Admitted:
        """``SidecarSets.admit`` over this cache (the webhook asks only once ``ready``)."""
        with self._lock:
            return self.sidecars.admit(raw, namespace)

    def handle(self, event: Event) -> None:
        """Apply one informer event; a kind's SYNCED marker comes after every object of its
        first list, so once each kind's is handled the cache holds them all."""
        with self._lock:
            if event.type != "SYNCED":
                self.store.apply(event)
                return
            self._listed.add(event.kind)
            if len(self._listed) == len(WATCHED):
                self.synced.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                event = self.events.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.handle(event)
            except Exception:  # the thread must outlive one bad object, or the cache freezes
                log.exception("webhook cache: event not applied", extra={"kind": event.kind})
