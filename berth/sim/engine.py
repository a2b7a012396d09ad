"""Discrete-event cluster simulation around the real scheduler.

Events are (time, seq, kind, payload) in a heap; ``seq`` makes ties break in insertion order, so
a run is a pure function of its inputs and seed. Sessions are requested by changes (a pod
arriving, a pod leaving a node) and run no more often than the configured period. The node agent
model is simple on purpose: a bound pod starts after a fixed start latency, runs for its
``berth.io/duration`` and frees its node; pods without a duration run until the end.
"""

from __future__ import annotations

import heapq
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from berth.api.manifest import Manifests
from berth.api.objects import (
    FAIL_AFTER_ANNOTATION,
    FINAL_POD_PHASES,
    BatchJob,
    GroupPhase,
    Pod,
    PodGroup,
    PodPhase,
)
from berth.cluster.fragmentation import FragmentationTracker, target_workload
from berth.controllers.job import JobController
from berth.framework.config import SchedulerConfig
from berth.framework.scheduler import Scheduler
from berth.metrics.timeseries import TimeSeries
from berth.store import MemoryStore, WatchEvent


class SimConfigError(ValueError):
    """A bad ``simulation`` section in the configuration."""


@dataclass(slots=True, frozen=True)
class NodeFailure:
    """A node lost at ``at``: its pods are evicted and it takes no pods until it recovers
    ``recover_after`` seconds later (never, if None)."""

    node: str
    at: float
    recover_after: float | None = None


def _seconds(value: Any, where: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise SimConfigError(f"{source}: {where}: expected seconds >= 0 (got {value!r})")
    return float(value)


@dataclass(slots=True)
class SimConfig:
    start_latency: float = 1.0  # seconds from bind to container start
    #: Seconds between time-series samples; None: 60 s, stretched so a long trace yields
    #: about MAX_SAMPLES samples rather than one a minute for months.
    sample_interval: float | None = None
    node_failures: tuple[NodeFailure, ...] = ()
    source: str = "-"  # the configuration file, for errors found once the cluster is known

    @classmethod
    def from_raw(cls, raw: dict[str, Any], source: str) -> SimConfig:
        config = cls(source=source)
        for key, attr in (("startLatency", "start_latency"), ("sampleInterval", "sample_interval")):
            if key in raw:
                setattr(config, attr, _seconds(raw[key], f"simulation.{key}", source))
        if config.sample_interval is not None and config.sample_interval <= 0:
            raise SimConfigError(f"{source}: simulation.sampleInterval: expected seconds > 0")
        config.node_failures = _node_failures(raw.get("nodeFailures", []), source)
        return config

    def check_nodes(self, names: set[str]) -> None:
        for index, failure in enumerate(self.node_failures):
            if failure.node not in names:
                raise SimConfigError(
                    f"{self.source}: simulation.nodeFailures[{index}].node: no node named "
                    f"{failure.node!r} in the cluster"
                )


def _node_failures(raw: Any, source: str) -> tuple[NodeFailure, ...]:
    if not isinstance(raw, list):
        raise SimConfigError(f"{source}: simulation.nodeFailures: expected a list")
    failures = []
    for index, item in enumerate(raw):
        where = f"simulation.nodeFailures[{index}]"
        if not isinstance(item, dict):
            raise SimConfigError(f"{source}: {where}: expected a mapping with node and at")
        unknown = set(item) - {"node", "at", "recoverAfter"}
        if unknown:
            raise SimConfigError(
                f"{source}: {where}.{sorted(unknown)[0]}: unknown field "
                "(expected node, at, recoverAfter)"
            )
        node = item.get("node")
        if not isinstance(node, str) or not node:
            raise SimConfigError(f"{source}: {where}.node: expected a node name")
        if "at" not in item:
            raise SimConfigError(f"{source}: {where}.at: field required (seconds)")
        at = _seconds(item["at"], f"{where}.at", source)
        recover = item.get("recoverAfter")
        if recover is not None:
            recover = _seconds(recover, f"{where}.recoverAfter", source)
        failures.append(NodeFailure(node, at, recover))
    return tuple(failures)


MIN_SAMPLE_INTERVAL = 60.0
MAX_SAMPLES = 5000


def expected_end(pods: list[Pod], until: float | None) -> float:
    """When a run should end: ``until``, else the latest submit time plus duration (a guess
    that waiting and Jobs' pods made later can only push back)."""
    if until is not None:
        return until
    return max((p.submit_time + (p.duration or 0.0) for p in pods), default=0.0)


def sample_interval(pods: list[Pod], until: float | None) -> float:
    """60 s, or longer when the run's expected horizon would otherwise give more than
    MAX_SAMPLES samples."""
    return max(MIN_SAMPLE_INTERVAL, expected_end(pods, until) / MAX_SAMPLES)


class Ev(IntEnum):
    # Order matters at equal times: groups and jobs arrive before their pods, pods leave before
    # a session looks at the cluster, and samples see the session's outcome.
    GROUP = 0
    JOB = 1
    NODE_DOWN = 2
    NODE_UP = 3
    FINISH = 4
    FAIL = 5
    SUBMIT = 6
    COMMAND = 7
    TIMER = 8
    START = 9
    SESSION = 10
    SAMPLE = 11


@dataclass(slots=True)
class GroupStats:
    pods: int = 0
    running: int = 0
    started: int = 0  # pods that ever started, finished ones included
    done: int = 0
    failed: int = 0
    evicted: int = 0  # evicted or deleted before they finished


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
    #: pod key → why it is still pending, or why it was evicted, failed or deleted
    reasons: dict[str, str] = field(default_factory=dict)
    jobs: list[BatchJob] = field(default_factory=list)  # batch Jobs, with their final status


class Simulation:
    def __init__(
        self,
        manifests: Manifests,
        config: SchedulerConfig,
        *,
        seed: int = 0,
        until: float | None = None,
        sim_config: SimConfig | None = None,
        explain: list[str] | None = None,
    ) -> None:
        """``explain``: name patterns of the pods whose placement decisions are recorded
        (``berth.framework.explain``)."""
        self.config = config
        self.sim = sim_config or SimConfig()
        self.seed = seed
        self.until = until
        self.sample_every = self.sim.sample_interval or sample_interval(manifests.pods, until)
        self.scheduler = Scheduler(config, seed=seed)
        if explain:
            self.scheduler.explain(explain)
        self.sim.check_nodes({node.name for node in manifests.nodes})
        for namespace in manifests.namespaces:
            self.scheduler.add_namespace(namespace)
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
        self.rng = random.Random(seed)  # fault draws only: scheduling has its own stream
        # Batch Jobs live in the object store; their controller creates their groups and pods
        # there, and the watches below hand those to the scheduler like any other.
        self.store = MemoryStore()
        self.controller = JobController(self.store, lambda: self.now, self._at)
        self.store.watch("Pod", self._on_store_pod)
        self.store.watch("PodGroup", self._on_store_group)
        self.jobs = list(manifests.jobs)
        self.pending = 0  # pods submitted to the scheduler and not yet bound
        self.running = 0  # pods started and not yet finished
        state = self.scheduler.state
        queue_names = sorted(self.scheduler.queues)
        weights = {name: float(q.weight) for name, q in self.scheduler.queues.items()}
        self.series = TimeSeries(list(state.axis.names), queue_names, weights)
        # GPU fragmentation is measured against the shapes of every GPU pod the run will see.
        templates = [t.template for job in self.jobs for t in job.tasks for _ in range(t.replicas)]
        self.fragmentation = FragmentationTracker(
            target_workload(self.pods + templates, gpu_only=True)
        )
        for group in manifests.groups:
            self._push(group.submit_time, Ev.GROUP, group)
        for pod in self.pods:
            self._push(pod.submit_time, Ev.SUBMIT, pod)
        for job in self.jobs:
            self._push(job.submit_time, Ev.JOB, job)
        for command in manifests.commands:
            self._push(command.submit_time, Ev.COMMAND, command)
        for failure in self.sim.node_failures:
            self._push(failure.at, Ev.NODE_DOWN, failure)

    # ------------------------------------------------------------------ event plumbing

    def _push(self, at: float, kind: Ev, payload: Any = None) -> None:
        heapq.heappush(self._heap, (at, int(kind), self._seq, payload))
        self._seq += 1
        if kind != Ev.SAMPLE:
            self._live += 1

    def _at(self, at: float, callback: Callable[[], None]) -> None:
        """Run a controller's callback at ``at`` (its timers: policy timeouts)."""
        self._push(at, Ev.TIMER, callback)

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
            Ev.JOB: lambda job: self.store.create("Job", job),
            Ev.COMMAND: lambda command: self.store.create("Command", command),
            Ev.TIMER: lambda callback: callback(),
            Ev.NODE_DOWN: self._on_node_down,
            Ev.NODE_UP: self._on_node_up,
            Ev.FAIL: self._on_fail,
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
        # A run stopped early (--until) reports only what had arrived by then.
        pods = [pod for pod in self.pods if pod.submit_time <= end]
        jobs = [job for job in self.jobs if job.submit_time <= end]
        reasons = {
            pod.key: (
                self.scheduler.pending_reason(pod)
                if self.scheduler.handles(pod)
                else f"schedulerName {pod.scheduler_name} is not handled by berth"
            )
            for pod in pods
            if pod.phase == PodPhase.PENDING
        }
        reasons.update(self.eviction_reasons)
        reasons.update(self.controller.deleted)
        return SimResult(
            pods=pods,
            groups=list(self.groups.values()),
            series=self.series,
            scheduler=self.scheduler,
            end_time=end,
            events=self.events,
            wall_seconds=time.perf_counter() - wall,
            seed=self.seed,
            reasons=reasons,
            jobs=jobs,
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
        evicted = [eviction.pod for eviction in self.scheduler.evictions]
        for eviction in self.scheduler.evictions:
            self.eviction_reasons[eviction.pod.key] = eviction.reason
        self._evicted(evicted)
        for bind in binds:
            pod = bind.pod
            pod.phase = PodPhase.BOUND
            pod.bind_time = self.now
            self.pending -= 1
            self._push(self.now + self.sim.start_latency, Ev.START, pod)
        for group in self.scheduler.admitted:
            self.store.update("PodGroup", group)  # its controller creates the pods now

    def _evicted(self, pods: list[Pod]) -> None:
        """Pods taken off their nodes by the scheduler or a node failure (ClusterState is
        already updated). All are marked before any controller hears of one: its reaction
        (a restart deleting the job's other pods) must find them already gone."""
        for pod in pods:
            self._stop(pod, PodPhase.EVICTED)
        for pod in pods:
            self._changed(pod)

    def _stop(self, pod: Pod, phase: PodPhase) -> None:
        """Bookkeeping for a pod that ends before finishing (already off its node)."""
        group = self._group_of(pod)
        stats = self.stats[group.key]
        if pod.phase == PodPhase.RUNNING:
            stats.running -= 1
            self.running -= 1
        elif pod.phase == PodPhase.PENDING:
            self.pending -= 1
        stats.evicted += 1
        pod.phase = phase
        pod.end_time = self.now
        self._settle(group, stats)

    def _changed(self, pod: Pod) -> None:
        """Tell the store about a phase change of a pod a controller owns."""
        if pod.owner:
            self.store.update("Pod", pod)

    # ------------------------------------------------------------------ store watches

    def _on_store_pod(self, event: WatchEvent, pod: Pod) -> None:
        if event == WatchEvent.ADDED:
            self.pods.append(pod)
            self._on_submit(pod)
        elif event == WatchEvent.DELETED and pod.phase not in FINAL_POD_PHASES:
            if pod.phase == PodPhase.PENDING:
                self.scheduler.withdraw(pod)
            else:
                self.scheduler.release(pod)
            self._stop(pod, PodPhase.DELETED)
            self._request_session()

    def _on_store_group(self, event: WatchEvent, group: PodGroup) -> None:
        if event == WatchEvent.ADDED:
            self._on_group(group)
        elif event == WatchEvent.DELETED:
            self.scheduler.remove_group(group.key)

    # ------------------------------------------------------------------ faults

    def _on_node_down(self, failure: NodeFailure) -> None:
        self.scheduler.set_schedulable(failure.node, False)
        lost = [
            pod
            for pod in self.pods
            if pod.bound_node == failure.node and pod.phase in (PodPhase.BOUND, PodPhase.RUNNING)
        ]
        for pod in lost:
            self.scheduler.release(pod)
            self.eviction_reasons[pod.key] = f"node {failure.node} failed"
        self._evicted(lost)
        if failure.recover_after is not None:
            self._push(self.now + failure.recover_after, Ev.NODE_UP, failure)
        self._request_session()

    def _on_node_up(self, failure: NodeFailure) -> None:
        self.scheduler.set_schedulable(failure.node, True)
        self._request_session()

    def _on_fail(self, pod: Pod) -> None:
        if pod.phase != PodPhase.RUNNING:
            return  # evicted or deleted first
        pod.exit_code = pod.fail_exit_code
        self.eviction_reasons[pod.key] = (
            f"exited with code {pod.exit_code} after {pod.fail_after:g}s ({FAIL_AFTER_ANNOTATION})"
        )
        self._ended(pod, PodPhase.FAILED)

    def _on_start(self, pod: Pod) -> None:
        if pod.phase != PodPhase.BOUND:
            return  # evicted before its container started
        pod.phase = PodPhase.RUNNING
        pod.start_time = self.now
        group = self._group_of(pod)
        stats = self.stats[group.key]
        stats.running += 1
        stats.started += 1
        self.running += 1
        # Started once minMember of its pods have run (Volcano's test for a Running job): a
        # group scheduled without gang may run its pods in turns, never all at once.
        if group.start_time is None and stats.started >= max(group.min_member, 1):
            group.start_time = self.now
            group.phase = GroupPhase.RUNNING
        if pod.duration is not None:
            self._push(self.now + pod.duration, Ev.FINISH, pod)
        if self._will_fail(pod):
            self._push(self.now + pod.fail_after, Ev.FAIL, pod)  # type: ignore[operator]
        self._changed(pod)

    def _will_fail(self, pod: Pod) -> bool:
        """Whether a pod's simulated fault strikes: before it would finish, and with its
        probability (drawn only for pods that have one below 1, so fault-free runs draw
        nothing)."""
        if pod.fail_after is None or (pod.duration is not None and pod.fail_after >= pod.duration):
            return False
        return pod.fail_probability >= 1 or self.rng.random() < pod.fail_probability

    def _on_finish(self, pod: Pod) -> None:
        if pod.phase != PodPhase.RUNNING:
            return  # evicted, failed or deleted while running: its finish never comes
        self._ended(pod, PodPhase.SUCCEEDED)

    def _ended(self, pod: Pod, phase: PodPhase) -> None:
        """A running pod's container exited: succeeded, or failed."""
        pod.phase = phase
        pod.end_time = self.now
        self.scheduler.release(pod)
        group = self._group_of(pod)
        stats = self.stats[group.key]
        stats.running -= 1
        self.running -= 1
        if phase == PodPhase.SUCCEEDED:
            stats.done += 1
        else:
            stats.failed += 1
        self._settle(group, stats)
        self._changed(pod)
        self._request_session()

    def _settle(self, group: PodGroup, stats: GroupStats) -> None:
        """A plain group ends with its last pod: completed if at least minMember of its pods
        succeeded, else failed (pods evicted without a controller to replace them are lost).
        A batch Job's controller decides for the groups it owns."""
        if group.owned or stats.done + stats.failed + stats.evicted < stats.pods:
            return
        group.phase = GroupPhase.COMPLETED if stats.done >= group.min_member else GroupPhase.FAILED
        group.end_time = self.now

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
            gpu_fragmented=self.fragmentation.total(state),
        )
