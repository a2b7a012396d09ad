"""Informers: list, then watch from the list's resourceVersion, into one event queue.

One thread per resource. A watch that ends (server timeout) or breaks (connection lost) is
resumed from the last resourceVersion seen; a 410 Gone (the resourceVersion was compacted away)
or any other watch error leads to a fresh list; every ``resync`` seconds the informer relists
anyway, so an event lost in between cannot leave the cache wrong for long. A relist is diffed
against what the informer last delivered: the consumer sees ADDED/MODIFIED for what changed and
DELETED for what disappeared, never the whole list again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from berth.k8s.client import ApiError, ConnectionLost, KubeClient
from berth.k8s.kinds import Resource, object_key

log = logging.getLogger("berth.k8s")


@dataclass(slots=True)
class Event:
    kind: str
    type: str  # ADDED, MODIFIED, DELETED, or SYNCED (the first list has been delivered)
    object: dict[str, Any]
    #: perf_counter() when the informer received it (where scheduling latency starts).
    received: float = field(default_factory=time.perf_counter)


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        events: queue.Queue,
        *,
        resync: float = 300.0,
        watch_timeout: float = 60.0,
        backoff: float = 0.2,
    ) -> None:
        self.client = client
        self.resource = resource
        self.events = events
        self.resync = resync
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.listed = False  # the first list delivered (and its SYNCED marker queued)
        self.stopping = threading.Event()
        #: Objects as last delivered, by key, with their resourceVersions.
        self.known: dict[str, str] = {}
        self.version = ""
        #: Counters by what happened (relist, gone, dropped, error), for metrics and tests.
        self.counts: dict[str, int] = {}
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{resource.plural}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _run(self) -> None:
        failures = 0
        while not self.stopping.is_set():
            try:
                self._list()
                failures = 0
                self._watch_until_resync()
            except (ApiError, ConnectionLost) as exc:
                self._count("error")
                failures += 1
                pause = min(5.0, self.backoff * 2 ** min(failures, 5))
                log.warning(
                    "informer error",
                    extra={"kind": self.resource.kind, "error": str(exc), "retry_in": pause},
                )
                self.stopping.wait(pause)

    def _list(self) -> None:
        answer = self.client.request("GET", self.resource.collection())
        self._count("list")
        items = answer.get("items") or []
        seen: set[str] = set()
        for item in items:
            item.setdefault("apiVersion", self.resource.api_version)
            item.setdefault("kind", self.resource.kind)
            key = object_key(item)
            seen.add(key)
            version = str(item.get("metadata", {}).get("resourceVersion", ""))
            previous = self.known.get(key)
            if previous is None:
                self._deliver("ADDED", key, item)
            elif previous != version or not version:
                self._deliver("MODIFIED", key, item)
        for key in [key for key in self.known if key not in seen]:
            namespace, _, name = key.rpartition("/")
            meta = {"name": name, **({"namespace": namespace} if namespace else {})}
            self._deliver("DELETED", key, {"metadata": meta})
        self.version = str(answer.get("metadata", {}).get("resourceVersion", ""))
        if not self.listed:
            self.listed = True
            self.events.put(Event(self.resource.kind, "SYNCED", {}))

    def _deliver(self, type_: str, key: str, obj: dict[str, Any]) -> None:
        if type_ == "DELETED":
            self.known.pop(key, None)
        else:
            self.known[key] = str(obj.get("metadata", {}).get("resourceVersion", ""))
        self.events.put(Event(self.resource.kind, type_, obj))

    def _watch_until_resync(self) -> None:
        """Watch (resuming after every end or break) until the resync period is over; return
        to relist then, or at once on 410 Gone."""
        deadline = time.monotonic() + self.resync
        while not self.stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._count("resync")
                return
            query = {
                "watch": "true",
                "resourceVersion": self.version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(max(1, int(min(remaining, self.watch_timeout)))),
            }
            try:
                for event in self.client.stream(
                    self.resource.collection(), query, timeout=self.watch_timeout + 5
                ):
                    if self.stopping.is_set():
                        return
                    if not self._on_watch_event(event):
                        return  # relist
                    if time.monotonic() >= deadline:
                        break
            except ConnectionLost:
                self._count("dropped")
                self.stopping.wait(self.backoff)

    def _on_watch_event(self, event: dict[str, Any]) -> bool:
        """Apply one watch event; False when the informer must relist."""
        type_ = event.get("type")
        obj = event.get("object") or {}
        if type_ == "ERROR":
            code = obj.get("code")
            self._count("gone" if code == 410 else "watch-error")
            log.info(
                "watch ended by the server",
                extra={"kind": self.resource.kind, "code": code, "reason": obj.get("reason")},
            )
            return False
        version = str(obj.get("metadata", {}).get("resourceVersion", ""))
        if version:
            self.version = version
        if type_ == "BOOKMARK":
            return True
        if type_ not in ("ADDED", "MODIFIED", "DELETED"):
            return True
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        key = object_key(obj)
        if type_ == "ADDED" and key in self.known:
            type_ = "MODIFIED"  # replayed by a resumed watch
        if type_ == "DELETED" and key not in self.known:
            return True
        self._deliver(type_, key, obj)
        return True
