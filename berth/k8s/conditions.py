"""The ``PodScheduled`` condition and a ``FailedScheduling`` event on pods berth cannot place
yet, as kube-scheduler writes them: ``kubectl describe pod`` then says why a pod waits
(``0/40 nodes available: 40 insufficient nvidia.com/gpu``) without anyone reading berth's logs.

Both are written only when a pod's reason changes, for at most ``WRITES_PER_CYCLE`` pods a
cycle (the rest follow in later cycles): a backlog of thousands of pods must not turn every
cycle into thousands of writes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from berth.api.objects import Pod
from berth.framework.scheduler import Scheduler
from berth.k8s.cache import KubeStore
from berth.k8s.client import ApiError, ConnectionLost
from berth.k8s.kinds import EVENT

log = logging.getLogger("berth.k8s")

WRITES_PER_CYCLE = 200


def unschedulable(message: str, now: datetime) -> dict[str, Any]:
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def failed_scheduling(raw_pod: dict[str, Any], message: str, now: datetime) -> dict[str, Any]:
    """A core/v1 Event on the pod, as ``kubectl describe pod`` lists it."""
    meta = raw_pod.get("metadata") or {}
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name')}.{int(now.timestamp() * 1e9):x}",
            "namespace": meta.get("namespace"),
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": "FailedScheduling",
        "message": message,
        "type": "Warning",
        "source": {"component": "berth"},
        "reportingComponent": "berth",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def _bound(raw: dict[str, Any]) -> bool:
    return bool((raw.get("spec") or {}).get("nodeName"))


class SchedulingConditions:
    def __init__(self, store: KubeStore) -> None:
        self.store = store
        #: The message last written on each waiting pod.
        self.written: dict[str, str] = {}

    def forget(self, pod: Pod) -> None:
        self.written.pop(pod.key, None)

    def report(self, scheduler: Scheduler) -> int:
        """Write the condition on the waiting pods whose reason changed; how many were
        written."""
        return self.write(_waiting(scheduler))

    def write(self, pods: Iterable[tuple[Pod, str]]) -> int:
        """Write the condition on each pod whose message changed; how many were written."""
        now = datetime.now(UTC)
        writes = 0
        for pod, message in pods:
            if writes >= WRITES_PER_CYCLE:
                return writes
            if self.written.get(pod.key) == message:
                continue
            raw = self.store.raw("Pod", pod.key)
            if raw is None or _bound(raw):
                continue
            kept = [
                c
                for c in (raw.get("status") or {}).get("conditions") or []
                if c.get("type") != "PodScheduled"
            ]
            status = {"conditions": [*kept, unschedulable(message, now)]}
            try:
                self.store.write_status("Pod", pod.key, status, unless=_bound)
                self.store.client.request(
                    "POST",
                    EVENT.collection(pod.namespace),
                    body=failed_scheduling(raw, message, now),
                )
            except (ApiError, ConnectionLost) as exc:
                log.warning("condition not written", extra={"pod": pod.key, "error": str(exc)})
                return writes
            self.written[pod.key] = message
            writes += 1
        return writes


def _waiting(scheduler: Scheduler) -> Iterator[tuple[Pod, str]]:
    for job in list(scheduler.waiting.values()):
        if not job.pending:
            continue
        # A job's pods wait for one reason (its gang, its queue, or no node for its kind).
        message = scheduler.pending_reason(job.pending.first())
        for pod in job.pending:
            yield pod, message
