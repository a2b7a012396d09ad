"""Discrete-event cluster simulation around the real scheduler.

Events are (time, seq, kind, payload) in a heap; ``seq`` makes ties break in insertion order, so
a run is a pure function of its inputs and seed. Sessions are requested by changes (a pod
arriving, a pod leaving a node) and run no more often than the configured period. The node agent
model is simple on purpose: a bound pod starts after a fixed start latency, runs for its
``berth.io/duration`` and frees its node; pods without a duration run until the end.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from berth.api.manifest import Manifests
from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.framework.config import SchedulerConfig
from berth.framework.scheduler import Scheduler
from berth.metrics.timeseries import TimeSeries


class SimConfigError(ValueError):
    """A bad ``simulation`` section in the configuration."""


@dataclass(slots=True)
class SimConfig:
    start_latency: float = 1.0  # seconds from bind to container start
    #: Seconds between time-series samples; None: 60 s, stretched so a long trace yields
    #: about MAX_SAMPLES samples rather than one a minute for months.
    sample_interval: float | None = None

    @classmethod
    def from_raw(cls, raw: dict[str, Any], source: str) -> SimConfig:
        config = cls()
        for key, attr in (("startLatency", "start_latency"), ("sampleInterval", "sample_interval")):
            if key in raw:
                value = raw[key]
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise SimConfigError(
                        f"{source}: simulation.{key}: expected seconds >= 0 (got {value!r})"
                    )
                setattr(config, attr, float(value))
        if config.sample_interval is not None and config.sample_interval <= 0:
            raise SimConfigError(f"{source}: simulation.sampleInterval: expected seconds > 0")
        return config


MIN_SAMPLE_INTERVAL = 60.0
MAX_SAMPLES = 5000


def sample_interval(pods: list[Pod], until: float | None) -> float:
    """60 s, or longer when the run's expected horizon (``until``, else the latest submit time
    plus duration) would otherwise give more than MAX_SAMPLES samples."""
    horizon = until
    if horizon is None:
        horizon = max((p.submit_time + (p.duration or 0.0) for p in pods), default=0.0)
    return max(MIN_SAMPLE_INTERVAL, horizon / MAX_SAMPLES)


class Ev(IntEnum):
    # Order matters at equal times: groups arrive before their pods, pods leave before a
    # session looks at the cluster, and samples see the session's outcome.
    GROUP = 0
    FINISH = 1
    SUBMIT = 2
    START = 3
    SESSION = 4
    SAMPLE = 5


@dataclass(slots=True)
class GroupStats:
    pods: int = 0
    running: int = 0
    done: int = 0


@dataclass
class SimResult:
    pods: list[Pod]
    groups: list[PodGroup]
    series: TimeSeries
    scheduler: Scheduler
    end_time: float
    events: int
    wall_seconds: float
    seed: int
    #: pod key → why it is still pending, or why it was evicted
    reasons: dict[str, str] = field(default_factory=dict)


class Simulation:
    def __init__(
        self,
        manifests: Manifests,
        config: SchedulerConfig,
        *,
        seed: int = 0,
        until: float | None = None,
        sim_config: SimConfig | None = None,
    ) -> None:
        self.config = config
        self.sim = sim_config or SimConfig()
        self.seed = seed
        self.until = until
        self.sample_every = self.sim.sample_interval or sample_interval(manifests.pods, until)
        self.scheduler = Scheduler(config, seed=seed)
        for node in manifests.nodes:
            self.scheduler.add_node(node)
        for queue in manifests.queues:
            self.scheduler.add_queue(queue)
        self.pods = list(manifests.pods)
        self.groups: dict[str, PodGroup] = {}
        self.stats: dict[str, GroupStats] = {}
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self._live = 0  # events in the heap other than samples
        self._session_due: float | None = None
        self._last_session = -float("inf")
        self.now = 0.0
        self.events = 0
        self.eviction_reasons: dict[str, str] = {}
        self.pending = 0  # pods submitted to the scheduler and not yet bound
        self.running = 0  # pods started and not yet finished
        state = self.scheduler.state
        queue_names = sorted(self.scheduler.queues)
        weights = {name: float(q.weight) for name, q in self.scheduler.queues.items()}
        self.series = TimeSeries(list(state.axis.names), queue_names, weights)
        for group in manifests.groups:
            self._push(group.submit_time, Ev.GROUP, group)
        for pod in self.pods:
            self._push(pod.submit_time, Ev.SUBMIT, pod)

    # ------------------------------------------------------------------ event plumbing

    def _push(self, at: float, kind: Ev, payload: Any = None) -> None:
        heapq.heappush(self._heap, (at, int(kind), self._seq, payload))
        self._seq += 1
        if kind != Ev.SAMPLE:
            self._live += 1

    def _request_session(self) -> None:
        at = max(self.now, self._last_session + self.config.period)
        if self._session_due is None or at < self._session_due:
            self._session_due = at
            self._push(at, Ev.SESSION)

    # ------------------------------------------------------------------ run

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        wall = time.perf_counter()
        self._push(0.0, Ev.SAMPLE)
        handlers = {
            Ev.GROUP: self._on_group,
            Ev.SUBMIT: self._on_submit,
            Ev.SESSION: self._on_session,
            Ev.START: self._on_start,
            Ev.FINISH: self._on_finish,
            Ev.SAMPLE: self._on_sample,
        }
        heap = self._heap
        until = self.until
        last_event = 0.0
        while heap:
            at, kind, _, payload = heap[0]
            if until is not None and at > until:
                break
            if kind == Ev.SAMPLE and not self._live and until is None:
                break  # nothing left but samples: the run ended with its last event
            heapq.heappop(heap)
            self.now = at
            if kind != Ev.SAMPLE:
                self._live -= 1
                last_event = at
            self.events += 1
            handlers[Ev(kind)](payload)
            if progress is not None and self.events % 2048 == 0:
                progress(self.now)
        end = until if until is not None else last_event
        self.now = end
        self._sample()
        reasons = {
            pod.key: (
                self.scheduler.pending_reason(pod)
                if self.scheduler.handles(pod)
                else f"schedulerName {pod.scheduler_name} is not handled by berth"
            )
            for pod in self.pods
            if pod.phase == PodPhase.PENDING
        }
        reasons.update(self.eviction_reasons)
        return SimResult(
            pods=self.pods,
            groups=list(self.groups.values()),
            series=self.series,
            scheduler=self.scheduler,
            end_time=end,
            events=self.events,
            wall_seconds=time.perf_counter() - wall,
            seed=self.seed,
            reasons=reasons,
        )

    # ------------------------------------------------------------------ handlers

    def _group_of(self, pod: Pod) -> PodGroup:
        return self.groups[f"{pod.namespace}/{pod.group}"]

    def _on_group(self, group: PodGroup) -> None:
        self.groups[group.key] = group
        self.stats.setdefault(group.key, GroupStats())
        self.scheduler.add_group(group)
        self._request_session()

    def _on_submit(self, pod: Pod) -> None:
        if not self.scheduler.handles(pod):
            return
        job = self.scheduler.submit(pod)
        group = job.group
        if group.key not in self.groups:
            self.groups[group.key] = group
        self.stats.setdefault(group.key, GroupStats()).pods += 1
        self.pending += 1
        self._request_session()

    def _on_session(self, _: Any) -> None:
        if self._session_due is None or self.now < self._session_due:
            return  # superseded by an earlier session
        self._session_due = None
        self._last_session = self.now
        if not self.scheduler.has_waiting:
            return
        binds = self.scheduler.run_session(self.now)
        for eviction in self.scheduler.evictions:
            self._evicted(eviction.pod)
            self.eviction_reasons[eviction.pod.key] = eviction.reason
        for bind in binds:
            pod = bind.pod
            pod.phase = PodPhase.BOUND
            pod.bind_time = self.now
            self.pending -= 1
            self._push(self.now + self.sim.start_latency, Ev.START, pod)

    def _evicted(self, pod: Pod) -> None:
        """A pod the scheduler took off its node (ClusterState is already updated)."""
        if pod.phase == PodPhase.RUNNING:
            self.stats[self._group_of(pod).key].running -= 1
            self.running -= 1
        pod.phase = PodPhase.EVICTED
        pod.end_time = self.now

    def _on_start(self, pod: Pod) -> None:
        if pod.phase != PodPhase.BOUND:
            return  # evicted before its container started
        pod.phase = PodPhase.RUNNING
        pod.start_time = self.now
        group = self._group_of(pod)
        stats = self.stats[group.key]
        stats.running += 1
        self.running += 1
        if group.start_time is None and stats.running >= max(group.min_member, 1):
            group.start_time = self.now
            group.phase = GroupPhase.RUNNING
        if pod.duration is not None:
            self._push(self.now + pod.duration, Ev.FINISH, pod)

    def _on_finish(self, pod: Pod) -> None:
        if pod.phase != PodPhase.RUNNING:
            return  # evicted while running: its finish never comes
        pod.phase = PodPhase.SUCCEEDED
        pod.end_time = self.now
        self.scheduler.release(pod)
        group = self._group_of(pod)
        stats = self.stats[group.key]
        stats.running -= 1
        stats.done += 1
        self.running -= 1
        if stats.done >= stats.pods and stats.done >= group.min_member:
            group.phase = GroupPhase.COMPLETED
            group.end_time = self.now
        self._request_session()

    def _on_sample(self, _: Any) -> None:
        self._sample()
        self._push(self.now + self.sample_every, Ev.SAMPLE)

    def _sample(self) -> None:
        state = self.scheduler.state
        self.series.sample(
            self.now,
            self.pending,
            self.running,
            state.total_requested(),
            state.total_usage(),
            state.total_allocatable(),
            queue_allocated=self.scheduler.queue_allocated,
            stranded=state.stranded(),
        )
