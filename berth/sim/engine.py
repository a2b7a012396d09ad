"""Discrete-event cluster simulation around the real scheduler.

Events sit in one heap (``berth.sim.events``). Sessions are requested by changes (a pod
arriving, a pod leaving a node) and run no more often than the configured period. What happens
to pods on nodes is the node agent's (``berth.sim.agent``); workload objects, Volcano Jobs and
Commands live in the object store, where the controllers (``berth.sim.control``) turn them into
PodGroups and pods that the watches below hand to the scheduler like any other.
"""

from __future__ import annotations

import heapq
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from berth.api.loaded import Manifests
from berth.api.objects import FINAL_POD_PHASES, BatchJob, Pod, PodGroup, PodPhase
from berth.api.workloads import Workload
from berth.cluster.fragmentation import FragmentationTracker, target_workload
from berth.framework.config import SchedulerConfig
from berth.framework.scheduler import Scheduler
from berth.sim.adoption import Adoption
from berth.sim.agent import Clock, GroupStats, NodeAgent
from berth.sim.autoscale import LoadScaler
from berth.sim.colocation import Colocation
from berth.sim.config import (
    NodeFailure,
    SimConfig,
    SimConfigError,
    expected_end,
    sample_interval,
)
from berth.sim.control import ControlPlane
from berth.sim.elastic import ElasticProgress
from berth.sim.events import UNCOUNTED, Ev, EventQueue, Run
from berth.sim.loaning import Loaning, LoaningRecord
from berth.sim.requeue import Requeue
from berth.sim.scaling import Scaler
from berth.sim.timeseries import TimeSeries
from berth.sim.timeslice import sharing_policy
from berth.store import WatchEvent

__all__ = [
    "GroupStats",
    "expected_end",
    "NodeFailure",
    "SimConfig",
    "SimConfigError",
    "SimResult",
    "Simulation",
]


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
    #: pod ref (``Pod.ref``) → why it is still pending, or why it was evicted, failed or deleted
    reasons: dict[str, str] = field(default_factory=dict)
    jobs: list[BatchJob] = field(default_factory=list)  # batch Jobs, with their final status
    #: Workload objects as they ended: spec of their last version, status with rollouts.
    workloads: list[Workload] = field(default_factory=list)
    #: Colocation measures (berth.sim.colocation) when the run had colocation on.
    colocation: dict[str, Any] | None = None
    #: Capacity loaning's record (``Loaning.record``), when the run had it.
    loaning: LoaningRecord | None = None
    #: The scaling policy's record (``Scaler.summary``), when the run had one.
    scaling: dict[str, Any] | None = None
    #: For a run given an end (``until``) that had nothing left to do before it (no event to
    #: come, no pod running): the time of its last event. None when the end cut the run short.
    quiet_from: float | None = None


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
        self.sim.check_loaning(manifests.nodes, config.period)
        for namespace in manifests.namespaces:
            self.scheduler.add_namespace(namespace)
        for node in manifests.nodes:
            self.scheduler.add_node(node)
        self.scheduler.state.hypernodes = list(manifests.hypernodes)
        if manifests.dra:
            self.scheduler.set_dra(list(manifests.dra))
        for queue in manifests.queues:
            self.scheduler.add_queue(queue)
        self.queue = EventQueue()
        self.clock = Clock()
        self._session_due: float | None = None
        self._last_session = -float("inf")
        self.events = 0
        self.agent = NodeAgent(
            self.scheduler,
            self.queue,
            self.clock,
            self.sim,
            random.Random(seed),
            self._notify,
            self._request_session,
        )
        adoption = Adoption(manifests)
        self.agent.pods = adoption.plain
        self.colocation = (
            None
            if self.sim.colocation is None
            else Colocation(
                self.sim.colocation,
                self.scheduler,
                self.agent,
                self.queue,
                self.clock,
                self._resubmit,
            )
        )
        # The controllers watch the store first, so a pod or group they make is theirs before
        # the watches below hand it to the scheduler.
        self.control = ControlPlane(self.queue, self.clock)
        self.store = self.control.store
        self.store.watch("Pod", self._on_store_pod)
        self.store.watch("PodGroup", self._on_store_group)
        adoption.start(self.store, self.queue)
        self._unschedulable = {node.name: node.unschedulable for node in manifests.nodes}
        if any(getattr(w.spec, "load", None) is not None for w in manifests.workloads):
            LoadScaler(self.store, self.queue, self.clock)
        self.loaning: Loaning | None = None
        if self.sim.loaning is not None:
            self.loaning = Loaning(
                self.sim.loaning,
                self.scheduler,
                self.agent,
                self.queue,
                self.clock,
                self._resubmit,
                self._request_session,
            )
        self.requeue: Requeue | None = None
        if self.sim.preemption is not None:
            self.requeue = Requeue(self.sim.preemption, self.scheduler, self.clock, self._resubmit)
        if manifests.workloads:
            self.control.workloads_expected = True
            self.control.add_nodes(manifests.nodes)
        self.jobs = list(manifests.jobs)
        elastic = ElasticProgress(self.jobs, self.queue)
        if elastic:
            self.agent.elastic = elastic
            if self.loaning is not None:  # workers above a job's minimum leave for free
                self.loaning.free_to_remove = elastic.above_minimum
                self.loaning.keeps_work = lambda pod: pod.owner in elastic.jobs
        self.agent.slicing = sharing_policy(
            self.scheduler, self.queue, lambda: self.clock.now, manifests
        )
        self.scaler: Scaler | None = None
        if self.sim.scaling is not None:
            self.scaler = Scaler(
                self.sim.scaling,
                self.scheduler,
                self.agent,
                elastic,
                self.queue,
                self.clock,
                self.scheduler.submit,
                self._request_session,
                self.loaning,
                self.jobs,
            )
        state = self.scheduler.state
        queue_names = sorted(self.scheduler.queues)
        weights = {name: float(q.weight) for name, q in self.scheduler.queues.items()}
        self.series = TimeSeries(list(state.axis.names), queue_names, weights)
        # GPU fragmentation is measured against the shapes of every GPU pod the run will see.
        templates = [t.template for job in self.jobs for t in job.tasks for _ in range(t.replicas)]
        templates += [
            w.template.pod
            for w in manifests.workloads
            if w.template is not None
            for _ in range(getattr(w.spec, "replicas", 1))
        ]
        self.fragmentation = FragmentationTracker(
            target_workload(self.agent.pods + templates, gpu_only=True)
        )
        push = self.queue.push
        for group in manifests.groups:
            push(group.submit_time, Ev.GROUP, group)
        # Runs of agent.pods, which is only appended to later.
        self.queue.push_runs(
            Ev.SUBMIT, self.agent.pods, [pod.submit_time for pod in self.agent.pods]
        )
        for job in self.jobs:
            push(job.submit_time, Ev.JOB, job)
        for workload in manifests.workloads:
            push(workload.submit_time, Ev.WORKLOAD, workload)
        for command in manifests.commands:
            push(command.submit_time, Ev.COMMAND, command)
        for failure in self.sim.node_failures:
            push(failure.at, Ev.NODE_DOWN, failure)

    @property
    def now(self) -> float:
        return self.clock.now

    @property
    def pods(self) -> list[Pod]:
        return self.agent.pods

    def _request_session(self, when: float = 0.0) -> None:
        due = self._session_due
        if due is not None and due <= self.clock.now:
            return  # one is due now already (asked at every pod's arrival and end)
        at = max(self.clock.now, self._last_session + self.config.period, when)
        if self._session_due is None or at < self._session_due:
            self._session_due = at
            self.queue.push(at, Ev.SESSION)

    # ------------------------------------------------------------------ run

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        wall = time.perf_counter()
        queue, agent, clock = self.queue, self.agent, self.clock
        queue.push(0.0, Ev.SAMPLE)
        handlers: dict[int, Callable[[Any], Any]] = {
            Ev.GROUP: self._on_group,
            Ev.JOB: lambda job: self.store.create("Job", job),
            Ev.WORKLOAD: self.control.apply,
            Ev.COMMAND: lambda command: self.store.create("Command", command),
            Ev.TIMER: lambda callback: callback(),
            Ev.TICK: lambda callback: callback(),
            Ev.RECONCILE: lambda callback: callback(),
            Ev.NODE_DOWN: self._on_node_down,
            Ev.NODE_UP: self._on_node_up,
            Ev.FAIL: agent.on_fail,
            Ev.SUBMIT: self._on_arrival,
            Ev.SESSION: self._on_session,
            Ev.START: agent.on_start,
            Ev.RESTARTED: agent.on_restarted,
            Ev.FINISH: agent.on_finish,
            Ev.ELASTIC_END: self._on_elastic_end,
            Ev.SLICE_END: self._on_slice_end,
            Ev.SAMPLE: self._on_sample,
        }
        if self.colocation is not None:
            handlers[Ev.REPORT] = self.colocation.on_report
            self.colocation.start()
        heap = queue.heap
        until = self.until
        last_event = 0.0
        while heap:
            at, kind, _, payload = heap[0]
            if until is not None and at > until:
                break
            if kind in UNCOUNTED and not queue.live and until is None:
                break  # nothing left but periodic events: the run ended with its last event
            heapq.heappop(heap)
            clock.now = at
            if type(payload) is Run:
                handled = queue.drain(payload, handlers[kind])
                last_event = at
                if progress is not None and (self.events % 2048) + handled >= 2048:
                    progress(at)
                self.events += handled
                continue
            if kind not in UNCOUNTED:
                queue.live -= 1
                last_event = at
            self.events += 1
            handlers[kind](payload)
            if progress is not None and self.events % 2048 == 0:
                progress(clock.now)
        end = until if until is not None else last_event
        quiet_from = None
        if until is not None and not queue.live and last_event < until:
            if not any(pod.phase == PodPhase.RUNNING for pod in self.pods):
                quiet_from = last_event
        clock.now = end
        self._sample()
        # A run stopped early (--until) reports only what had arrived by then.
        pods = [pod for pod in self.pods if pod.submit_time <= end]
        jobs = [job for job in self.jobs if job.submit_time <= end]
        waiting = [pod for pod in pods if pod.phase == PodPhase.PENDING]
        known = self.scheduler.pending_reasons(p for p in waiting if self.scheduler.handles(p))
        reasons = {
            pod.ref: known[pod.ref]
            if pod.ref in known
            else f"schedulerName {pod.scheduler_name} is not handled by berth"
            for pod in waiting
        }
        if self.scaler is not None:
            for pod in pods:
                held = self.scaler.held_reason(pod)
                if held is not None:
                    reasons[pod.ref] = held
        reasons.update(agent.reasons)
        reasons.update(self.control.deleted_reasons())
        return SimResult(
            pods=pods,
            groups=list(agent.groups.values()),
            series=self.series,
            scheduler=self.scheduler,
            end_time=end,
            events=self.events,
            wall_seconds=time.perf_counter() - wall,
            seed=self.seed,
            reasons=reasons,
            jobs=jobs,
            workloads=list(self.control.workloads),
            colocation=None if self.colocation is None else self.colocation.stats.summary(),
            loaning=None if self.loaning is None else self.loaning.record(pods),
            scaling=None if self.scaler is None else self.scaler.summary(),
            quiet_from=quiet_from,
        )

    # ------------------------------------------------------------------ handlers

    def _on_group(self, group: PodGroup) -> None:
        self.agent.add_group(group)
        self.scheduler.add_group(group)
        self._request_session()

    def _on_arrival(self, pod: Pod) -> None:
        """A pod of the workload files arrives; it is admitted as a created pod is only where
        workload objects bring admission hooks."""
        if self.control.workloads_expected:
            self._on_plain_pod(pod)
        else:
            self._on_submit(pod)

    def _on_plain_pod(self, pod: Pod) -> None:
        """A pod of the workload files: admitted (SidecarSet injection) as a created pod is."""
        self.store.admit_object("Pod", pod)
        self._on_submit(pod)

    def _resubmit(self, pod: Pod) -> None:
        """A new pod object in place of an evicted plain pod (colocation; a job restarted by a
        loaning reclaim)."""
        self.pods.append(pod)
        self._on_submit(pod)

    def _on_submit(self, pod: Pod) -> None:
        if not self.scheduler.handles(pod):
            return
        if self.loaning is not None:
            self.loaning.admit(pod)
        if self.scaler is not None and self.scaler.holds(pod):
            self.agent.submitted(self.scheduler.jobs[pod.job_key].group)
            return
        job = self.scheduler.submit(pod)
        self.agent.submitted(job.group)
        self._request_session()

    def _on_session(self, _: Any) -> None:
        if self._session_due is None or self.clock.now < self._session_due:
            return  # superseded by an earlier session
        self._session_due = None
        self._last_session = self.clock.now
        slicing = self.agent.slicing
        if not self.scheduler.has_waiting and (slicing is None or not slicing.ticking()):
            return
        binds = self.scheduler.run_session(self.clock.now)
        agent = self.agent
        for eviction in self.scheduler.evictions:
            agent.reasons[eviction.pod.ref] = eviction.reason
        if self.requeue is not None:
            self.requeue.evicted(self.scheduler.evictions)
        agent.evicted([eviction.pod for eviction in self.scheduler.evictions])
        for bind in binds:
            agent.bound(bind.pod)
        for group in self.scheduler.admitted:
            self.store.update("PodGroup", group)  # its controller creates the pods now
        if self.loaning is not None:
            self.loaning.after_session()
        if self.scheduler.wake_at is not None:
            self._request_session(self.scheduler.wake_at)
        if slicing is not None and slicing.ticking():
            self._request_session(self.clock.now + slicing.slot)

    def _notify(self, pod: Pod) -> None:
        """Tell the store about a change of a pod a controller owns."""
        self.store.update("Pod", pod)

    def _on_node_down(self, failure: NodeFailure) -> None:
        self.agent.node_down(failure)
        self.control.node_schedulable(failure.node, False, self._unschedulable[failure.node])

    def _on_node_up(self, failure: NodeFailure) -> None:
        self.agent.node_up(failure)
        self.control.node_schedulable(failure.node, True, self._unschedulable[failure.node])

    # ------------------------------------------------------------------ store watches

    def _on_store_pod(self, event: WatchEvent, pod: Pod) -> None:
        if event == WatchEvent.MODIFIED:
            self.agent.changed(pod)
        elif event == WatchEvent.ADDED:
            self.pods.append(pod)
            self._on_submit(pod)
        elif pod.phase not in FINAL_POD_PHASES:
            if pod.phase == PodPhase.PENDING:
                if self.scaler is None or not self.scaler.forget(pod):
                    self.scheduler.withdraw(pod)
            else:
                self.scheduler.release(pod)
            self.agent.stop(pod, PodPhase.DELETED)
            self._request_session()

    def _on_store_group(self, event: WatchEvent, group: PodGroup) -> None:
        if event == WatchEvent.ADDED:
            self.agent.controlled.add(id(group))
            self._on_group(group)
        elif event == WatchEvent.DELETED:
            self.scheduler.remove_group(group.key)

    # ------------------------------------------------------------------ samples

    def _on_sample(self, _: Any) -> None:
        self._sample()
        self.queue.push(self.clock.now + self.sample_every, Ev.SAMPLE)

    def _sample(self) -> None:
        state = self.scheduler.state
        self.series.sample(
            self.clock.now,
            self.agent.pending,
            self.agent.running,
            state.total_requested(),
            state.total_usage(),
            state.total_allocatable(),
            queue_allocated=self.scheduler.queue_allocated,
            stranded=state.stranded(),
            gpu_fragmented=self.fragmentation.total(state),
            extras=self._extras(),
        )

    def _on_elastic_end(self, end: Any) -> None:
        elastic = self.agent.elastic
        assert elastic is not None
        self.agent.finish_together(elastic.ended(end))

    def _on_slice_end(self, end: Any) -> None:
        slicing = self.agent.slicing
        assert slicing is not None
        self.agent.finish_together(slicing.ended(end, self.clock.now))

    def _extras(self) -> dict[str, float]:
        """Extra time-series columns: capacity loaning's, elastic jobs' workers."""
        extras: dict[str, float] = {}
        if self.loaning is not None:
            extras.update(self.loaning.sample())
        if self.agent.elastic is not None:
            extras.update(self.agent.elastic.sample())
        if self.agent.slicing is not None:
            extras.update(self.agent.slicing.sample())
        return extras
