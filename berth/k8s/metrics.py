"""Prometheus metrics and the health endpoints of ``berth serve``.

Each server owns its registry, so several can live in one process (tests, two replicas). The
names follow kube-scheduler's where one exists (``scheduler_`` prefix swapped for ``berth_``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

#: Seconds: powers of two from 1 ms to about 65 s (as kube-scheduler's latency buckets).
LATENCY_BUCKETS = tuple(0.001 * 2**k for k in range(17))


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter(
            "berth_schedule_attempts",
            "Pods a scheduling cycle tried to place, by result (scheduled, unschedulable, error).",
            ["result"],
            registry=r,
        )
        self.e2e_latency = Histogram(
            "berth_e2e_scheduling_duration_seconds",
            "From a pending pod's arrival through the watch to its Binding accepted by the API.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.pending = Gauge(
            "berth_pending_pods", "Pods waiting to be scheduled, by queue.", ["queue"], registry=r
        )
        self.binds = Counter(
            "berth_binds", "Bindings posted, by result (bound, failed).", ["result"], registry=r
        )
        self.evictions = Counter(
            "berth_evictions",
            "Evictions posted, by result (evicted, refused, failed).",
            ["result"],
            registry=r,
        )
        self.cycle_duration = Histogram(
            "berth_scheduling_cycle_duration_seconds",
            "Wall time of one scheduling cycle (all actions).",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.skipped_objects = Gauge(
            "berth_skipped_objects",
            "Cluster objects berth cannot read (reported in the log with kind and name).",
            registry=r,
        )
        self.leader = Gauge("berth_leader", "1 while this replica leads.", registry=r)
        self.scaling_rounds = Counter(
            "berth_scaling_rounds",
            "Rounds of the scaling policy that set elastic jobs' targets (--scaling).",
            registry=r,
        )
        self.scaling_held = Gauge(
            "berth_scaling_held_pods",
            "Workers of elastic jobs held back above their targets by the scaling policy.",
            registry=r,
        )
        self.scaling_scaled_in = Counter(
            "berth_scaling_scaled_in",
            "Running workers the scaling policy took away (through evictions).",
            registry=r,
        )
        self.colocation_reports = Counter(
            "berth_colocation_reports",
            "Colocation usage reports (--colocation), by usage source (metrics, annotations).",
            ["source"],
            registry=r,
        )
        self.colocation_evictions = Counter(
            "berth_colocation_evictions",
            "BE pods evicted to protect online work, by cause (memory, cpu).",
            ["cause"],
            registry=r,
        )
        self.aryl_jobs = Gauge(
            "berth_aryl_jobs",
            "Elastic jobs in aryl's last round, by where their remaining work came from "
            "(progress: the trainer's berth.io/progress; estimate: berth.io/duration less the "
            "work berth saw done; unknown: neither, run at their minimum).",
            ["source"],
            registry=r,
        )
        self.loaning_lends = Counter(
            "berth_loaning_lends", "Inference nodes lent to training (--loaning).", registry=r
        )
        self.loaning_reclaims = Counter(
            "berth_loaning_reclaims", "Lent nodes taken back for inference.", registry=r
        )
        self.loaning_preempted = Counter(
            "berth_loaning_preempted_pods",
            "Training pods evicted from nodes taken back for inference.",
            registry=r,
        )
        self.loaning_lent_nodes = Gauge(
            "berth_loaning_lent_nodes", "Inference nodes lent to training now.", registry=r
        )
        self.loaning_inference_wait = Histogram(
            "berth_loaning_inference_wait_seconds",
            "From an inference pod's first pending sight to its bind seen through the watch.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.gpu_profile_readings = Counter(
            "berth_gpu_profile_readings",
            "Departing pods measured for their job's GPU profile (gpu-load-aware), by where "
            "the GPU figure came from (annotation: berth.io/gpu-utilization from a node agent; "
            "spec: the pod's berth.io/utilization, 1 without it).",
            ["source"],
            registry=r,
        )
        self.gpu_profile_writes = Counter(
            "berth_gpu_profile_writes",
            "Writes of the GPU profiles' ConfigMap, by result (written, failed).",
            ["result"],
            registry=r,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class HealthServer:
    """``/metrics``, ``/healthz`` (the process serves) and ``/readyz`` (``ready()``: the
    caches have synced, or this replica is a healthy standby)."""

    def __init__(self, metrics: Metrics, ready: Callable[[], bool], port: int) -> None:
        def handler_factory(*args, **kwargs):  # type: ignore[no-untyped-def]
            return _Handler(metrics, ready, *args, **kwargs)

        self.server = ThreadingHTTPServer(("0.0.0.0", port), handler_factory)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, metrics: Metrics, ready: Callable[[], bool], *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.metrics = metrics
        self.ready = ready
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
        if self.path == "/metrics":
            self._send(200, self.metrics.exposition(), CONTENT_TYPE_LATEST)
        elif self.path == "/healthz":
            self._send(200, b"ok\n")
        elif self.path == "/readyz":
            ok = self.ready()
            self._send(200 if ok else 503, b"ok\n" if ok else b"not ready\n")
        else:
            self._send(404, b"not found\n")

    def _send(self, code: int, body: bytes, content_type: str = "text/plain") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # probes every few seconds would drown the structured log
