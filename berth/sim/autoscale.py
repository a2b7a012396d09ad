"""The load behind inference services, and the autoscaler that follows it.

A Deployment with a load curve (``berth.api.load_curves``) has its ``spec.replicas`` set every
``berth.io/scale-interval`` seconds to what the curve's rate at that time needs, as a
HorizontalPodAutoscaler on a requests-per-second metric would: a rise is followed at once, a
fall only once every recommendation of the last ``berth.io/scale-down-stabilization`` seconds
agrees (HPA's scale-down stabilisation window). The Deployment controller then grows or shrinks
its ReplicaSets like any other change of ``replicas``.

Its ticks are background events: they never keep a run alive on their own (a run of services
only ends at ``--until``, or with the other work it had).
"""

from __future__ import annotations

from collections import deque

from berth.api.workloads import DEPLOYMENT, Workload
from berth.controllers.workload import set_replicas
from berth.sim.agent import Clock
from berth.sim.events import Ev, EventQueue
from berth.store import MemoryStore, WatchEvent


class LoadScaler:
    def __init__(self, store: MemoryStore, queue: EventQueue, clock: Clock) -> None:
        self.store = store
        self.queue = queue
        self.clock = clock
        #: Deployment key → (time, recommendation) of its scale-down window.
        self._history: dict[str, deque[tuple[float, int]]] = {}
        store.watch(DEPLOYMENT, self._on_deployment)

    def _on_deployment(self, event: WatchEvent, deployment: Workload) -> None:
        key = deployment.key
        if event == WatchEvent.DELETED:
            self._history.pop(key, None)
        elif deployment.spec.load is not None and key not in self._history:
            self._history[key] = deque()
            self.queue.push(self.clock.now, Ev.TICK, lambda: self._tick(key))

    def _tick(self, key: str) -> None:
        history = self._history.get(key)
        deployment = self.store.get(DEPLOYMENT, key)
        if history is None or deployment is None or deployment.spec.load is None:
            self._history.pop(key, None)
            return
        now = self.clock.now
        scaling = deployment.spec.load
        wanted = scaling.recommended(now)
        history.append((now, wanted))
        while history and history[0][0] < now - scaling.scale_down_window:
            history.popleft()
        current = deployment.spec.replicas
        desired = wanted if wanted >= current else min(current, max(r for _, r in history))
        if desired != current:
            set_replicas(self.store, DEPLOYMENT, key, desired)
        self.queue.push(now + scaling.interval, Ev.TICK, lambda: self._tick(key))
