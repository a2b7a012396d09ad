"""What nodes and pods use, for colocation in ``berth serve``: from the metrics API when the
cluster serves it, else from annotations a node agent writes.

Koordinator's koordlet reports usage in its NodeMetric objects; a plain cluster has
metrics-server's ``metrics.k8s.io`` (NodeMetrics, PodMetrics). berth asks for that first; when
the API answers that the group is not served (404, or 503 from an APIService without a
backend), it reads the ``berth.io/usage`` annotation instead, which a node agent keeps on each
pod (and optionally on its node, the node's whole usage):

    berth.io/usage: '{"cpu": "1500m", "memory": "2Gi"}'

the same shape as a metrics item's ``usage``. A pod without a usage reading counts at its
request where the batch formula needs it (as Koordinator counts a pod missing from
NodeMetric). An annotation that cannot be read is logged once per value and treated as no
reading: a bad agent must not stop the scheduler.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from berth.k8s.client import ApiError, KubeClient
from berth.resources import CPU, MEMORY, QuantityError, to_canonical

log = logging.getLogger("berth.k8s")

USAGE_ANNOTATION = "berth.io/usage"
METRICS_API = "/apis/metrics.k8s.io/v1beta1"
METRICS = "metrics"
ANNOTATIONS = "annotations"
#: Answers that mean "this cluster does not serve the metrics API" (not a failure).
NOT_SERVED = (404, 503)

#: (cpu millicores, memory bytes)
Usage = tuple[float, float]


class UsageAnnotationError(ValueError):
    """A usage annotation or metrics item that cannot be read."""


def parse_usage(value: Any) -> Usage:
    """A ``{"cpu": ..., "memory": ...}`` mapping (or its JSON text) → (millicores, bytes);
    a missing resource is 0. Raises UsageAnnotationError saying what is wrong."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise UsageAnnotationError(
                f'expected JSON such as {{"cpu": "500m", "memory": "1Gi"}}, got {value!r}'
            ) from None
    if not isinstance(value, dict):
        raise UsageAnnotationError(f"expected a mapping of cpu and memory, got {value!r}")
    unknown = sorted(set(value) - {CPU, MEMORY})
    if unknown:
        raise UsageAnnotationError(f"{unknown[0]!r}: unknown resource (expected cpu, memory)")
    amounts = []
    for name in (CPU, MEMORY):
        try:
            amounts.append(float(to_canonical(name, value.get(name, 0))))
        except QuantityError as exc:
            raise UsageAnnotationError(f"{name}: {exc}") from None
    return amounts[0], amounts[1]


@dataclass(slots=True)
class UsageReading:
    """One report's usage: by pod key and by node name; what is missing was not reported."""

    source: str
    pods: dict[str, Usage] = field(default_factory=dict)
    nodes: dict[str, Usage] = field(default_factory=dict)


class UsageSource:
    """Reads usage each report; ``warned`` keeps the bad values already logged."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.warned: set[tuple[str, str]] = set()

    def read(
        self, pods: dict[str, dict[str, Any]], nodes: dict[str, dict[str, Any]]
    ) -> UsageReading:
        """``pods`` and ``nodes``: the raw objects berth holds, by key and by name."""
        try:
            node_items = self._list("nodes")
            pod_items = self._list("pods")
        except ApiError as exc:
            if exc.status not in NOT_SERVED:
                raise
            return self.from_annotations(pods, nodes)
        reading = UsageReading(METRICS)
        for item in node_items:
            name = (item.get("metadata") or {}).get("name", "")
            self._take(reading.nodes, name, f"NodeMetrics {name}", item.get("usage"))
        for item in pod_items:
            meta = item.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            total, ok = [0.0, 0.0], True
            for container in item.get("containers") or []:
                usage = self._parse(f"PodMetrics {key}", container.get("usage"))
                if usage is None:
                    ok = False
                    break
                total[0] += usage[0]
                total[1] += usage[1]
            if ok:
                reading.pods[key] = (total[0], total[1])
        return reading

    def from_annotations(
        self, pods: dict[str, dict[str, Any]], nodes: dict[str, dict[str, Any]]
    ) -> UsageReading:
        reading = UsageReading(ANNOTATIONS)
        for kind, objects, into in (("Pod", pods, reading.pods), ("Node", nodes, reading.nodes)):
            for key, raw in objects.items():
                text = ((raw.get("metadata") or {}).get("annotations") or {}).get(USAGE_ANNOTATION)
                if text is not None:
                    self._take(into, key, f"{kind} {key}: {USAGE_ANNOTATION}", text)
        return reading

    def _list(self, plural: str) -> list[dict[str, Any]]:
        answer = self.client.request("GET", f"{METRICS_API}/{plural}", retry=False)
        return (answer or {}).get("items") or []

    def _take(self, into: dict[str, Usage], key: str, where: str, value: Any) -> None:
        usage = self._parse(where, value)
        if usage is not None:
            into[key] = usage

    def _parse(self, where: str, value: Any) -> Usage | None:
        try:
            return parse_usage(value)
        except UsageAnnotationError as exc:
            mark = (where, str(value))
            if mark not in self.warned:
                self.warned.add(mark)
                log.warning("usage not read", extra={"object": where, "error": str(exc)})
            return None
