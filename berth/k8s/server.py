"""``berth serve``: the Scheduler and the controllers against a live API server.

One thread owns every berth object: it drains the event queue (informer events, bind
outcomes), keeps the Scheduler's inputs current through the cache's watches, runs a cycle when
something changed (no more often than the configuration's ``period``), hands binds to the
binder, evicts, writes PodGroup and Job statuses, and runs the controllers' timers. Informers,
binder workers and the leader elector are threads around it that never touch berth objects.

The first cycle waits for every informer's first list (as kube-scheduler waits for its caches),
and the initial lists are applied kind by kind in a fixed order (priority classes, queues,
nodes, groups, jobs, commands, pods), so the scheduler starts from the same state the
simulator's loader gives it.
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable
from functools import partial

from berth.api.objects import GroupPhase, Node, Pod, PodGroup, PodPhase, Queue
from berth.controllers.job import JobController
from berth.framework.config import SchedulerConfig
from berth.framework.scheduler import Scheduler
from berth.k8s.binder import Binder, BindResult
from berth.k8s.books import PodBooks
from berth.k8s.cache import KubeStore
from berth.k8s.client import ApiError, ConnectionLost, KubeClient
from berth.k8s.colocation import attach
from berth.k8s.conditions import SchedulingConditions
from berth.k8s.dra import LiveClaims
from berth.k8s.evictions import Evictions
from berth.k8s.informer import Informer
from berth.k8s.intake import EventIntake
from berth.k8s.job_adoption import made_before
from berth.k8s.kinds import WORKLOAD_POD_GROUP, watched
from berth.k8s.kubeflow import KubeflowJobs
from berth.k8s.leader import LeaderElector
from berth.k8s.loaning import ServeLoaning
from berth.k8s.metrics import HealthServer, Metrics
from berth.k8s.opt_in import OptInWorkloads
from berth.k8s.options import ServeOptions
from berth.k8s.paddle import PaddleJobs
from berth.k8s.profiles import GpuProfiles
from berth.k8s.scaling import JobRuns, ServeScaling
from berth.k8s.status import StatusWriter
from berth.k8s.victims import VictimHold
from berth.store import NotFound, WatchEvent

log = logging.getLogger("berth.k8s")

#: Seconds before a cycle whose evictions were refused is tried again (doubling to the max).
RETRY_PAUSE = 1.0
MAX_RETRY_PAUSE = 60.0


class Server:
    def __init__(
        self,
        client: KubeClient,
        config: SchedulerConfig,
        options: ServeOptions | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.options = options = options or ServeOptions()
        if not config.scheduler_names:
            config.scheduler_names = (options.scheduler_name,)
        self.client = client
        self.config = config
        self.clock = clock
        self.metrics = Metrics()
        self.events: queue.Queue = queue.Queue()
        self.scheduler = Scheduler(config, seed=options.seed)
        self.store = KubeStore(client)
        self.controller = JobController(self.store, clock, self._at)
        self.controller.made_before = partial(made_before, client)
        self.kubeflow: KubeflowJobs | None = None
        if options.kubeflow:
            # Its controller hears of pods right after Volcano's, before the scheduler's books.
            self.kubeflow = KubeflowJobs(self.store, clock, self._at)
        self.paddle = PaddleJobs(self.store, clock, self._at) if options.paddle else None
        self.dra: LiveClaims | None = None
        if options.dra:  # first: a node's DRA GPUs are counted before the scheduler sees it
            self.dra = LiveClaims(
                self.store, self.scheduler, self.mark_dirty, lambda: self.books.placed
            )
        self.store.watch("Node", self._on_node)
        self.store.watch("Queue", self._on_queue)
        self.store.watch("PodGroup", self._on_group)
        self.store.watch(WORKLOAD_POD_GROUP.kind, self._on_group)
        self.store.watch("Pod", self._on_pod)
        self.status = StatusWriter(self.store, self.scheduler, self.controller)
        self.store.watch("Job", lambda _, job: self.status.jobs.add(job.key))
        self.store.watch("Command", lambda _, c: self.status.jobs.add(f"{c.namespace}/{c.target}"))
        self.workloads = OptInWorkloads(self.store, clock, self._at, options)
        self.watched = watched(
            kruise=options.kruise,
            kubeflow=options.kubeflow,
            paddle=options.paddle,
            sidecars=self.workloads.sidecars is not None,
            dra=options.dra,
            workload_api=options.workload_api,
            lws=options.lws,
            jobset=options.jobset,
        )
        self.informers = [
            Informer(
                client,
                resource,
                self.events,
                resync=options.resync,
                watch_timeout=options.watch_timeout,
            )
            for resource in self.watched
        ]
        self.binder: Binder | None = None
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(
                client,
                options.identity,
                name=options.lease_name,
                namespace=options.lease_namespace,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
            )
        self.health: HealthServer | None = None
        if options.metrics_port is not None:
            self.health = HealthServer(self.metrics, self.ready, options.metrics_port)
        self.stopping = threading.Event()
        #: Set whenever the loop has nothing left to do (no events, binds, cycle or timer due).
        self.settled = threading.Event()
        self.books = PodBooks(self.scheduler, self.mark_dirty, self._maybe_running)
        self.scaling: ServeScaling | None = None
        if options.scaling is not None:
            self.scaling = ServeScaling(
                options.scaling,
                self.scheduler,
                self.books,
                JobRuns(self.controller, self.kubeflow, self.paddle),
                self.evict_running,
                clock,
                self.store,
                removable=lambda pod: pod.key not in self._in_flight,
            )
            self.books.holder = self.scaling
        self.colocation = None if options.colocation is None else attach(self, options.colocation)
        self.loaning = ServeLoaning.attach(self) if options.loaning is not None else None
        self.gpu_profiles = GpuProfiles.attach(self)  # gpu-load-aware's, kept in a ConfigMap
        self._in_flight: dict[str, str] = {}  # binds posted (or held), not yet answered
        self.victims = VictimHold()  # preemptors' binds wait until their victims are gone
        self.evictions = Evictions(
            self.store, self.books, self.victims, self.metrics, clock, lambda: self.binder, self.dra
        )
        see = None if self.gpu_profiles is None else self.gpu_profiles.see
        self.intake = EventIntake(
            self.events,
            self.store,
            self.watched,
            self.books,
            self.scheduler,
            self.metrics,
            self._bind_result,
            see,
        )
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = 0
        self._dirty = False
        self._last_cycle = -float("inf")
        #: After evictions the API refused: when to try again without a cluster change, and
        #: the pause before that (doubling while refusals go on).
        self._retry_at: float | None = None
        self._retry_pause = RETRY_PAUSE
        #: Why each waiting pod waits, written on the pod as kube-scheduler does.
        self.conditions = SchedulingConditions(self.store)
        #: perf_counter() of the last accepted bind (with books.first_pending_at: the
        #: benchmark's throughput window).
        self.last_bound_at: float | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def synced(self) -> bool:
        """Whether every watched kind has listed and its list has been applied."""
        return self.intake.synced

    def ready(self) -> bool:
        """Ready once the caches have synced; a standby waiting for the Lease is ready too
        (it is healthy, and serves nothing but the pod webhook). Never before the webhook's
        own cache has synced (a Service then sends its calls to replicas that can answer)."""
        if not self.workloads.ready():
            return False
        if self.elector is not None and not self.elector.leading.is_set():
            return not self.elector.lost.is_set()
        return self.synced

    def stop(self) -> None:
        self.stopping.set()

    def run(self, crash: threading.Event | None = None) -> None:
        """Serve until ``stop()`` or a lost leadership. ``crash`` (tests) stops without
        releasing the Lease (or saving anything), as a killed process would."""
        if self.health is not None:
            self.health.start()
        self.workloads.start()
        try:
            if self.elector is not None:
                self.elector.run()
                while not self.elector.leading.wait(0.05):
                    if self.stopping.is_set():
                        return
                self.metrics.leader.set(1)
            if self.gpu_profiles is not None:
                self.gpu_profiles.load()  # before the first cycle
            self.binder = Binder(
                self.client,
                self.events,
                concurrency=self.options.bind_concurrency,
                annotate=self.options.annotate,
            )
            for informer in self.informers:
                informer.start()
            self._loop()
        finally:
            crashed = crash is not None and crash.is_set()
            self.metrics.leader.set(0)
            for informer in self.informers:
                informer.stop()
            if self.gpu_profiles is not None and self.binder is not None and not crashed:
                self.gpu_profiles.flush(force=True)
            self.client.stop()
            if self.binder is not None:
                self.binder.stop()
            if self.elector is not None:
                self.elector.stop(release=not crashed)
            if self.health is not None:
                self.health.stop()
            self.workloads.stop()

    def _loop(self) -> None:
        while not self.stopping.is_set():
            if self.elector is not None and self.elector.lost.is_set():
                log.error("stopping: leadership lost")
                return
            self.intake.drain(self._wait_time())
            if not self.synced:
                self.intake.try_sync()
                continue
            self.store.announce()
            try:
                self._run_timers()
                self._scale()
                if self.colocation is not None:
                    self.colocation.serve()
                self.status.write()
                self.workloads.write()
                if self.kubeflow is not None:
                    if self.scaling is not None:
                        self.kubeflow.scale(self.scaling.holding.targets)
                    self.kubeflow.write()
                if self.paddle is not None:
                    self.paddle.write()
                if self.gpu_profiles is not None:
                    self.gpu_profiles.flush()
            except (ApiError, ConnectionLost, NotFound) as exc:
                log.error("write failed", extra={"error": str(exc)})
            self.store.announce()  # what the writes' answers brought, before a cycle
            due = self._dirty or (self._retry_at is not None and self.clock() >= self._retry_at)
            if due and self.clock() >= self._last_cycle + self.config.period:
                self._cycle()
                self.store.announce()
            idle = (
                self.events.empty()
                and not self._in_flight
                and not (self._dirty and self.scheduler.has_waiting)
                and not self._timers
                and not self.store.unannounced
            )
            if idle:
                self.settled.set()
            else:
                self.settled.clear()

    def _wait_time(self) -> float:
        wait = 0.2
        now = self.clock()
        if self._dirty and self.synced:
            wait = min(wait, max(0.0, self._last_cycle + self.config.period - now))
        if self._timers:
            wait = min(wait, max(0.0, self._timers[0][0] - now))
        if self._retry_at is not None:
            wait = min(wait, max(0.0, self._retry_at - now))
        if self.scaling is not None and self.synced:
            wait = min(wait, max(0.0, self.scaling.due - now))
        if self.colocation is not None and self.synced:
            wait = min(wait, max(0.0, self.colocation.due - now))
        if self.loaning is not None and self.synced:
            wait = min(wait, max(0.0, self.loaning.due - now))
        return wait

    # ------------------------------------------------------------------ controller timers

    def _at(self, at: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (at, self._timer_seq, callback))
        self._timer_seq += 1

    def _run_timers(self) -> None:
        now = self.clock()
        if self._timers and self._timers[0][0] <= now:
            self.status.jobs.update(self.controller.runs)  # a timer may act on any job
            if self.kubeflow is not None:
                self.kubeflow.dirty.update(self.kubeflow.runs)
            if self.paddle is not None:
                self.paddle.dirty.update(self.paddle.runs)
        while self._timers and self._timers[0][0] <= now:
            heapq.heappop(self._timers)[2]()

    def _scale(self) -> None:
        """The scaling policy's work, on a recurring timer of its own (so the loop still
        settles between rounds)."""
        if self.scaling is not None:
            self.scaling.serve(self.conditions, self.metrics)
        if self.loaning is not None:
            self.loaning.tick()

    def evict_running(self, pods: list[Pod], reason: str) -> int:
        """Evict running pods (``Evictions.running``); the next cycle sees their room."""
        self._dirty = True
        return self.evictions.running(pods, reason)

    # ------------------------------------------------------------------ scheduler inputs

    def _on_node(self, event: WatchEvent, node: Node) -> None:
        state = self.scheduler.state
        if event == WatchEvent.DELETED:
            if node.name in state.rows:
                # ClusterState keeps its rows; a deleted node just takes no more pods.
                self.scheduler.set_schedulable(node.name, False)
                self._dirty = True
            return
        if node.name not in state.rows:
            self.scheduler.add_node(node)
            self.books.node_added(node.name)
        else:
            try:
                self.scheduler.update_node(node)
            except ValueError as exc:
                # The rest of the update is not taken: the node keeps what berth knew of it.
                log.warning("node update not taken", extra={"node": node.name, "why": str(exc)})
        self._dirty = True

    def _on_queue(self, event: WatchEvent, queue_: Queue) -> None:
        if event != WatchEvent.DELETED:
            self.scheduler.add_queue(queue_)
            self._dirty = True

    def _on_group(self, event: WatchEvent, group: PodGroup) -> None:
        if event == WatchEvent.ADDED:
            self.scheduler.add_group(group)
            self.status.group_written(group)
        elif event == WatchEvent.DELETED:
            self.scheduler.remove_group(group.key)
            self.status.group_gone(group.key)
        self._dirty = True

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        if pod.owner and not pod.owner_kind:  # a Volcano Job's
            self.status.jobs.add(pod.owner)
        if event == WatchEvent.DELETED or pod.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED):
            released = self.victims.left(pod.key)
            if released:
                assert self.binder is not None
                self.binder.bind(released)
        if pod.bound_node or event == WatchEvent.DELETED:
            self.conditions.forget(pod)
        if self.loaning is not None:
            self.loaning.observe(pod)
        self.books.observe(event, pod)

    def mark_dirty(self) -> None:
        self._dirty = True

    def _maybe_running(self, pod: Pod) -> None:
        """A group runs once minMember of its pods run (Volcano's rule, as the simulator
        applies it)."""
        job = self.scheduler.jobs.get(pod.job_key)
        if job is None or job.group.implicit or job.group.phase != GroupPhase.INQUEUE:
            return
        running = sum(1 for p in job.bound.values() if p.phase == PodPhase.RUNNING)
        if running >= max(job.group.min_member, 1):
            job.group.phase = GroupPhase.RUNNING
            self.status.groups.add(job.key)
            if job.group.start_time is None:
                job.group.start_time = self.clock()

    # ------------------------------------------------------------------ cycles

    def _cycle(self) -> None:
        self._dirty = False
        self._retry_at = None
        self._last_cycle = self.clock()
        if self.dra is not None:
            self.dra.refresh()
        if not self.scheduler.has_waiting:
            return
        self.status.groups.update(self.scheduler.waiting)  # the groups a session may move
        started = time.perf_counter()
        now = self.clock()
        binds = self.scheduler.run_session(now)
        self.metrics.cycle_duration.observe(time.perf_counter() - started)
        assert self.binder is not None
        refused = self.evictions.of_session(self.scheduler.evictions)
        if self.scheduler.evictions:
            self._dirty = True
        out: list[tuple[Pod, str]] = []
        held = 0
        for bind in binds:
            pod = bind.pod
            self.books.assume(pod, bind.node)
            if bind.node in refused:
                # Its room was to come from an eviction the API refused: try again next cycle.
                self.books.requeue(pod)
                continue
            if self.dra is not None and not self.dra.prebind(pod, bind.node):
                self.books.requeue(pod)  # its claims could not be written: next cycle
                continue
            pod.phase = PodPhase.BOUND
            pod.bind_time = now  # the session's, shared by the pods it placed
            self._in_flight[pod.key] = bind.node
            if self.victims.hold(pod, bind.node):
                held += 1
            else:
                out.append((pod, bind.node))
        self.binder.bind(out)
        if held:
            log.info("binds wait for preemption victims to leave", extra={"pods": held})
        self.metrics.attempts.labels("scheduled").inc(len(binds))
        if refused:
            # Not again at once: a disruption budget lifts with the cluster's own changes.
            self._dirty = False
            self._retry_at = self.clock() + self._retry_pause
            self._retry_pause = min(MAX_RETRY_PAUSE, self._retry_pause * 2)
        else:
            self._retry_pause = RETRY_PAUSE
        waiting: dict[str, int] = {}
        for job in self.scheduler.waiting.values():
            waiting[job.group.queue] = waiting.get(job.group.queue, 0) + len(job.pending)
        for name in self.scheduler.queues:
            self.metrics.pending.labels(name).set(waiting.get(name, 0))
        self.metrics.attempts.labels("unschedulable").inc(sum(waiting.values()))
        self.conditions.report(self.scheduler)
        for group in self.scheduler.admitted:
            try:
                self.store.update("PodGroup", group)  # its controller creates the pods now
            except (ApiError, ConnectionLost, NotFound) as exc:
                log.error("admission not written", extra={"group": group.key, "error": str(exc)})
                continue
            self.status.group_written(group)
        if self.loaning is not None:
            self.loaning.after_cycle()

    def _bind_result(self, result: BindResult) -> None:
        pod = result.pod
        self._in_flight.pop(pod.key, None)
        if result.error is None:
            self.metrics.binds.labels("bound").inc()
            self.last_bound_at = time.perf_counter()
            seen = self.books.first_seen.pop(pod.key, None)
            if seen is not None:
                self.metrics.e2e_latency.observe(time.perf_counter() - seen)
            return
        self.metrics.binds.labels("failed").inc()
        self.metrics.attempts.labels("error").inc()
        log.warning(
            "bind failed", extra={"pod": pod.key, "node": result.node, "error": str(result.error)}
        )
        if self.books.placed.get(pod.key) != result.node:
            return  # the watch has already told where the pod really is
        status = getattr(result.error, "status", 0)
        if self.store.get("Pod", pod.key) is not pod or status in (404, 409):
            # Gone, or bound by someone else: the watch brings the pod's real state.
            self.books.unplace(pod)
            pod.bound_node, pod.phase = "", PodPhase.PENDING
            return
        if self.dra is not None:
            self.dra.release(pod)  # its reservations undone, as kube-scheduler's Unreserve
        self.books.requeue(pod)
