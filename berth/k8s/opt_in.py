"""The workload controllers ``berth serve`` runs only when asked (each only where the
project's own controller is not installed): OpenKruise's CloneSet, Advanced StatefulSet and
BroadcastJob (``--kruise``), its SidecarSets with the pod webhook that injects their sidecars,
LeaderWorkerSets (``--lws``) and JobSets (``--jobset``). Built after the serve loop's own
watches, so they hear of a pod after the scheduler's books do; their status is written once
per loop. The webhook answers from a cache of its own (``berth.k8s.webhook_cache``), started
with the replica, leader or standby, as is the writer of the webhook configuration's caBundle
(``berth.k8s.ca_bundle``) when ``--webhook-cert`` is given."""

from __future__ import annotations

from collections.abc import Callable

from berth.k8s.ca_bundle import CaBundleWriter
from berth.k8s.cache import KubeStore
from berth.k8s.jobset import JobSets
from berth.k8s.kruise import KruiseWorkloads
from berth.k8s.lws import LeaderWorkerSets
from berth.k8s.options import ServeOptions
from berth.k8s.sidecarset import SidecarSets
from berth.k8s.webhook import WebhookServer
from berth.k8s.webhook_cache import WebhookCache


class OptInWorkloads:
    def __init__(
        self,
        store: KubeStore,
        clock: Callable[[], float],
        at: Callable[[float, Callable[[], None]], None],
        options: ServeOptions,
    ) -> None:
        self.kruise = KruiseWorkloads(store, clock, at) if options.kruise else None
        self.sidecars: SidecarSets | None = None
        self.webhook: WebhookServer | None = None
        self.webhook_cache: WebhookCache | None = None
        self.ca_bundle: CaBundleWriter | None = None
        if options.kruise and options.webhook is not None:
            self.sidecars = SidecarSets(store, clock, at)  # the leader's: upgrades, status
            cache = WebhookCache(
                store.client, resync=options.resync, watch_timeout=options.watch_timeout
            )
            self.webhook = WebhookServer(options.webhook, cache.admit, cache.ready)
            self.webhook_cache = cache
            if options.webhook.configuration is not None:
                self.ca_bundle = CaBundleWriter(
                    store.client, options.webhook.cert, name=options.webhook.configuration
                )
        self.lws = LeaderWorkerSets(store, clock, at) if options.lws else None
        self.jobsets = JobSets(store, clock, at) if options.jobset else None

    def write(self) -> None:
        """Write the status of every workload that may have changed."""
        for writer in (self.kruise, self.sidecars, self.lws, self.jobsets):
            if writer is not None:
                writer.write()

    def ready(self) -> bool:
        """False while the webhook cannot answer yet (its cache not synced)."""
        return self.webhook_cache is None or self.webhook_cache.ready()

    def start(self) -> None:
        if self.webhook_cache is not None and self.webhook is not None:
            self.webhook_cache.start()
            self.webhook.start()
        if self.ca_bundle is not None:
            self.ca_bundle.start()

    def stop(self) -> None:
        if self.ca_bundle is not None:
            self.ca_bundle.stop()
        if self.webhook_cache is not None and self.webhook is not None:
            self.webhook.stop()
            self.webhook_cache.stop()
