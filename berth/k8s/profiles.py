"""Alnair's per-job GPU profiles in ``berth serve``: measured from what a node agent reports on
each pod, and kept in a ConfigMap berth owns, so placements after a restart are the ones the
same server would have made without it.

Where GPU use comes from: the metrics API (``metrics.k8s.io``) carries cpu and memory only, so
a pod's GPU use is read from the annotation a node agent (a DCGM exporter's bridge, or the
device plugin) keeps on the running pod:

    berth.io/gpu-utilization: "0.25"

the fraction of the pod's GPUs it used at its peak, 0 to 1. When a pod leaves its node, its
job's profile takes that reading as the GPU metric (``berth.cluster.profiles``); a pod without
one is measured as the simulator measures it, by its spec's ``berth.io/utilization`` (1 when
absent). cpu and memory are measured as in the simulator too. A reading that cannot be parsed is
logged once per value and the spec's figure is used.

The ConfigMap (``--profiles-configmap``, ``berth-system/berth-gpu-profiles`` by default) holds
one key, ``profiles.json``: the jobs' profiles, least recently recorded first, at most
``--profiles-limit`` of them (the least recently recorded are dropped, in memory as in the
ConfigMap, so the two agree). It is read once, when this replica starts leading and before its
first cycle; it is written when profiles changed, at most once per ``--profiles-interval``
seconds, and when the server stops. A ConfigMap berth cannot read is logged in one line and
ignored (the next write replaces it).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from berth.api.objects import Pod
from berth.cluster.profiles import METRICS, OwnerProfiles, measured
from berth.k8s.client import ApiError, ConnectionLost, KubeClient
from berth.k8s.informer import Event
from berth.k8s.kinds import Resource, object_key
from berth.k8s.parts import ServeParts

log = logging.getLogger("berth.k8s")

GPU_UTILIZATION_ANNOTATION = "berth.io/gpu-utilization"
DATA_KEY = "profiles.json"
CONFIGMAP = Resource("ConfigMap", "", "v1", "configmaps", True, status_subresource=False)
#: Where a departing pod's GPU reading came from (the metric's label).
ANNOTATION = "annotation"
SPEC = "spec"


class ProfilesError(ValueError):
    """A saved ConfigMap berth cannot read."""


def parse_configmap_ref(text: str) -> tuple[str, str] | None:
    """``NAMESPACE/NAME`` → (namespace, name); ``off`` → None. ValueError says what is wrong."""
    if text == "off":
        return None
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise ValueError(f"{text!r}: expected NAMESPACE/NAME or off")
    return namespace, name


def encode(profiles: OwnerProfiles) -> str:
    jobs = [
        {"job": owner, **dict(zip(METRICS, (float(v) for v in profile), strict=True))}
        for owner, profile in profiles.items()
    ]
    return orjson.dumps({"jobs": jobs}).decode()


def decode(text: Any) -> list[tuple[str, np.ndarray]]:
    """The (job, profile) pairs of a ``profiles.json``; ProfilesError says what is wrong."""
    if not isinstance(text, str):
        raise ProfilesError(f"data.{DATA_KEY}: missing")
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ProfilesError(f"data.{DATA_KEY}: not JSON ({exc})") from None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        raise ProfilesError(f'data.{DATA_KEY}: expected {{"jobs": [...]}}')
    out = []
    for index, entry in enumerate(jobs):
        where = f"data.{DATA_KEY}: jobs[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("job"), str):
            raise ProfilesError(f"{where}: expected a mapping with a job name")
        values = []
        for metric in METRICS:
            value = entry.get(metric)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or value < 0:
                raise ProfilesError(f"{where}.{metric}: expected a number >= 0, got {value!r}")
            values.append(float(value))
        out.append((entry["job"], np.array(values, dtype=np.float64)))
    return out


class GpuProfiles:
    """The serve side of the profiles: live measurement, and the ConfigMap they are kept in."""

    def __init__(
        self,
        client: KubeClient,
        profiles: OwnerProfiles,
        raw_pod: Callable[[str], dict[str, Any] | None],
        where: tuple[str, str] | None,
        *,
        interval: float,
        limit: int,
        clock: Callable[[], float],
        readings: Any,
        writes: Any,
        leading: Callable[[], bool] = lambda: True,
    ) -> None:
        self.client = client
        self.profiles = profiles
        self.raw_pod = raw_pod  # the cached API object of a pod, by key
        self.kept = where is not None  # False: in memory only
        self.namespace, self.name = where or ("", "")
        self.interval = interval
        self.clock = clock
        self.readings = readings  # counter by source
        self.writes = writes  # counter by result
        self.leading = leading  # False once leadership is lost: the new leader's to write
        self.version = ""  # the ConfigMap's resourceVersion ("" when berth has not seen it)
        self.saved = 0  # profiles.changes when last written
        self.written_at = -math.inf
        self._departing: tuple[str, dict[str, Any]] | None = None
        self._warned: set[tuple[str, str]] = set()
        profiles.measure = self.measure
        profiles.limit = limit

    @classmethod
    def attach(cls, server: ServeParts) -> GpuProfiles | None:
        """Measured when a configured plugin reads the profiles (gpu-load-aware); kept in
        the ConfigMap when one is named."""
        options = server.options
        if not server.scheduler.profiled:
            return None
        configmap = options.profiles_configmap
        where = None if configmap is None else parse_configmap_ref(configmap)
        return cls(
            server.client,
            server.scheduler.state.profiles,
            lambda key: server.store.raw("Pod", key),
            where,
            interval=options.profiles_interval,
            limit=options.profiles_limit,
            clock=server.clock,
            readings=server.metrics.gpu_profile_readings,
            writes=server.metrics.gpu_profile_writes,
            leading=lambda: server.elector is None or not server.elector.lost.is_set(),
        )

    # ------------------------------------------------------------------ measuring

    def see(self, event: Any) -> None:
        """A deleted pod's last API state, kept for its departure (the cache forgets the pod
        before it tells the scheduler it left)."""
        if isinstance(event, Event) and event.kind == "Pod" and event.type == "DELETED":
            self._departing = (object_key(event.object), event.object)

    def measure(self, pod: Pod) -> np.ndarray:
        used = measured(pod)
        raw = self.raw_pod(pod.key)
        if raw is None and self._departing is not None and self._departing[0] == pod.key:
            raw = self._departing[1]
        self._departing = None
        annotations = ((raw or {}).get("metadata") or {}).get("annotations") or {}
        text = annotations.get(GPU_UTILIZATION_ANNOTATION)
        value = None if text is None else self._reading(pod.key, text)
        if value is None:
            self.readings.labels(SPEC).inc()
        else:
            used[METRICS.index("gpu")] = value
            self.readings.labels(ANNOTATION).inc()
        return used

    def _reading(self, key: str, text: Any) -> float | None:
        try:
            value = float(text)
        except (TypeError, ValueError):
            value = math.nan
        if 0 <= value <= 1:
            return value
        if (key, str(text)) not in self._warned:
            self._warned.add((key, str(text)))
            log.warning(
                "GPU utilization not read",
                extra={
                    "pod": key,
                    "annotation": GPU_UTILIZATION_ANNOTATION,
                    "error": f"{text!r}: expected a fraction from 0 to 1",
                },
            )
        return None

    # ------------------------------------------------------------------ the ConfigMap

    @property
    def _path(self) -> str:
        return CONFIGMAP.item(self.namespace, self.name)

    def load(self) -> None:
        """Read the saved profiles (before the first cycle); what cannot be read is logged and
        left out."""
        if not self.kept:
            return
        try:
            raw = self.client.request("GET", self._path)
        except (ApiError, ConnectionLost) as exc:
            if getattr(exc, "status", 0) != 404:  # none saved yet: nothing to say
                log.error(
                    "GPU profiles not read", extra={"configmap": self._ref, "error": str(exc)}
                )
            return
        self.version = str((raw.get("metadata") or {}).get("resourceVersion") or "")
        try:
            saved = decode((raw.get("data") or {}).get(DATA_KEY))
        except ProfilesError as exc:
            log.warning("GPU profiles ignored", extra=self._said(exc))
            return
        for owner, profile in saved[-(self.profiles.limit or len(saved)) :]:
            self.profiles.restore(owner, profile)
        log.info("GPU profiles read", extra={"configmap": self._ref, "jobs": len(saved)})

    @property
    def _ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _said(self, exc: Exception) -> dict[str, str]:
        return {"configmap": self._ref, "error": str(exc)}

    def flush(self, force: bool = False) -> None:
        """Write the profiles if they changed, at most once per interval (``force``: now)."""
        if not self.kept or self.profiles.changes == self.saved or not self.leading():
            return
        if not force and self.clock() < self.written_at + self.interval:
            return
        self.written_at = self.clock()
        changes = self.profiles.changes
        try:
            self._write(encode(self.profiles))
        except (ApiError, ConnectionLost) as exc:
            self.writes.labels("failed").inc()
            log.error("GPU profiles not written", extra=self._said(exc))
            return
        self.saved = changes
        self.writes.labels("written").inc()

    def _write(self, text: str) -> None:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "berth"},
            },
            "data": {DATA_KEY: text},
        }
        for _ in range(3):
            try:
                if self.version:
                    body["metadata"]["resourceVersion"] = self.version
                    stored = self.client.request("PUT", self._path, body=body)
                else:
                    body["metadata"].pop("resourceVersion", None)
                    collection = CONFIGMAP.collection(self.namespace)
                    stored = self.client.request("POST", collection, body=body)
            except ApiError as exc:
                if exc.status == 404 and self.version:
                    self.version = ""  # deleted meanwhile: made again
                    continue
                if exc.status != 409:
                    raise
                # Written by someone else (a previous leader): this replica's profiles win.
                current = self.client.request("GET", self._path)
                self.version = str((current.get("metadata") or {}).get("resourceVersion") or "")
                continue
            self.version = str((stored.get("metadata") or {}).get("resourceVersion") or "")
            return
        raise ApiError(409, "Conflict", f"ConfigMap {self._ref}: changed at every try")
