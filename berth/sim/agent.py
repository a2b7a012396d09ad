"""The node side of the simulation: what happens to a pod once the scheduler has placed it.

The model is simple on purpose: a bound pod starts after a fixed start latency and is ready
from then; it runs for its ``berth.io/duration`` and frees its node (pods without a duration
run until the end). A running pod whose images a controller changes restarts in place: it stays
on its node, unready for the restart latency (plus any grace period OpenKruise asked for).
Pods fail on purpose (``berth.io/fail-after``), are evicted by the scheduler, and are lost with
a failed node.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from berth.api.keys import FAIL_AFTER_ANNOTATION, INPLACE_GRACE_ANNOTATION
from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.framework.scheduler import Scheduler
from berth.sim.config import NodeFailure, SimConfig
from berth.sim.elastic import ElasticProgress
from berth.sim.events import Ev, EventQueue
from berth.sim.timeslice import TimeSlicing


def pending_copy(pod: Pod, name: str, now: float) -> Pod:
    """A new pod object named ``name`` in place of an evicted plain pod, submitted ``now``:
    the same spec, none of the old one's history (a plain pod's controller is the trace, so
    the simulation brings it back itself)."""
    return replace(
        pod,
        name=name,
        phase=PodPhase.PENDING,
        bound_node="",
        gpu_devices="",
        cpuset="",
        submit_time=now,
        bind_time=None,
        start_time=None,
        end_time=None,
        exit_code=None,
        ready_since=None,
        restarts=0,
        waited_for="",
        annotations=dict(pod.annotations),
        labels=dict(pod.labels),
        requests=dict(pod.requests),
    )


class Clock:
    """The simulated time, shared by the parts of a simulation."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0


class _Later:
    """``now + delay``, as the same float object while both stay the same objects: the pods
    of a trace task's run start and end together, and every pod keeps its start and end time
    (24 bytes each, 11 million pods on Alibaba 2017)."""

    __slots__ = ("now", "delay", "at")

    def __init__(self) -> None:
        self.now: float | None = None
        self.delay: float | None = None
        self.at = 0.0

    def __call__(self, now: float, delay: float) -> float:
        if now is not self.now or delay is not self.delay:
            self.now, self.delay, self.at = now, delay, now + delay
        return self.at


@dataclass(slots=True)
class GroupStats:
    pods: int = 0
    running: int = 0
    started: int = 0  # pods that ever started, finished ones included
    done: int = 0
    failed: int = 0
    evicted: int = 0  # evicted or deleted before they finished


class NodeAgent:
    """Pods from bind to end, and the counts the time series samples. ``notify(pod)`` tells
    the store that a pod a controller owns changed; ``request_session`` asks for a scheduling
    cycle once capacity was freed."""

    def __init__(
        self,
        scheduler: Scheduler,
        queue: EventQueue,
        clock: Clock,
        config: SimConfig,
        rng: random.Random,
        notify: Callable[[Pod], None],
        request_session: Callable[[], None],
    ) -> None:
        self.scheduler = scheduler
        self.queue = queue
        self.clock = clock
        self.config = config
        self.rng = rng  # fault draws only: scheduling has its own stream
        self.notify = notify
        self.request_session = request_session
        self.pods: list[Pod] = []  # every pod object of the run, in arrival order
        self.groups: dict[str, PodGroup] = {}
        self.stats: dict[str, GroupStats] = {}
        #: Groups whose end their controller decides (they came through the store), by id():
        #: asked at every pod's end, where building a key would cost a trace replay.
        self.controlled: set[int] = set()
        self.pending = 0  # pods submitted to the scheduler and not yet bound
        self.running = 0  # pods started and not yet finished
        #: pod ref → why it was evicted or failed.
        self.reasons: dict[str, str] = {}
        #: pod ref → the containers a controller's running pod runs (an in-place update is a
        #: change of these), and when its restart ends.
        self._containers: dict[str, tuple[tuple[str, str], ...]] = {}
        self._restart_ends: dict[str, float] = {}
        #: Elastic jobs' progress (set by the simulation when it has any).
        self.elastic: ElasticProgress | None = None
        #: Jobs sharing GPUs (set by the simulation when a policy shares them).
        self.slicing: TimeSlicing | None = None
        self._starts = _Later()
        self._ends = _Later()

    # ------------------------------------------------------------------ groups

    def group_of(self, pod: Pod) -> PodGroup:
        return self.groups[pod.job_key]

    def add_group(self, group: PodGroup) -> None:
        self.groups[group.key] = group
        self.stats.setdefault(group.key, GroupStats())

    def submitted(self, group: PodGroup) -> None:
        """A pod of ``group`` went to the scheduler."""
        if group.key not in self.groups:
            self.groups[group.key] = group
        self.stats.setdefault(group.key, GroupStats()).pods += 1
        self.pending += 1

    def _settle(self, group: PodGroup, stats: GroupStats) -> None:
        """A plain group ends with its last pod: completed if at least minMember of its pods
        succeeded, else failed (pods evicted without a controller to replace them are lost).
        A controller decides for the groups it made."""
        if (
            stats.done + stats.failed + stats.evicted < stats.pods
            or group.owned
            or id(group) in self.controlled
        ):
            return
        group.phase = GroupPhase.COMPLETED if stats.done >= group.min_member else GroupPhase.FAILED
        group.end_time = self.clock.now

    # ------------------------------------------------------------------ pod lifecycle

    def bound(self, pod: Pod) -> None:
        pod.phase = PodPhase.BOUND
        pod.bind_time = self.clock.now
        self.pending -= 1
        self.queue.push_item(self._starts(self.clock.now, self.config.start_latency), Ev.START, pod)

    def on_start(self, pod: Pod) -> None:
        if pod.phase != PodPhase.BOUND:
            return  # evicted before its container started
        now = self.clock.now
        pod.phase = PodPhase.RUNNING
        pod.start_time = now
        pod.ready_since = now
        group = self.group_of(pod)
        stats = self.stats[group.key]
        stats.running += 1
        stats.started += 1
        self.running += 1
        # Started once minMember of its pods have run (Volcano's test for a Running job): a
        # group scheduled without gang may run its pods in turns, never all at once.
        if group.start_time is None and stats.started >= max(group.min_member, 1):
            group.start_time = now
            group.phase = GroupPhase.RUNNING
        elif group.phase == GroupPhase.INQUEUE and stats.running >= max(group.min_member, 1):
            group.phase = GroupPhase.RUNNING  # a restarted group running again
        if pod.duration is not None:
            if self.slicing is None or not self.slicing.takes(pod, now):
                self.queue.push_item(self._ends(now, pod.duration), Ev.FINISH, pod)
        elif self.elastic is not None:
            self.elastic.started(pod, now)
        if self._will_fail(pod):
            self.queue.push(now + pod.fail_after, Ev.FAIL, pod)  # type: ignore[operator]
        if pod.owner:
            self._containers[pod.ref] = pod.containers
            self.notify(pod)

    def _will_fail(self, pod: Pod) -> bool:
        """Whether a pod's simulated fault strikes: before it would finish, and with its
        probability (drawn only for pods that have one below 1, so fault-free runs draw
        nothing)."""
        if pod.fail_after is None or (pod.duration is not None and pod.fail_after >= pod.duration):
            return False
        return pod.fail_probability >= 1 or self.rng.random() < pod.fail_probability

    def on_finish(self, pod: Pod) -> None:
        if pod.phase != PodPhase.RUNNING:
            return  # evicted, failed or deleted while running: its finish never comes
        self._ended(pod, PodPhase.SUCCEEDED)

    def finish_together(self, pods: list[Pod]) -> None:
        """An elastic job's workers succeed at once, all marked before any controller hears
        (the first to hear of enough successes would kill the others)."""
        for pod in pods:
            self._ended(pod, PodPhase.SUCCEEDED, notify=False)
        for pod in pods:
            if pod.owner:
                self.notify(pod)

    def on_fail(self, pod: Pod) -> None:
        if pod.phase != PodPhase.RUNNING:
            return  # evicted or deleted first
        pod.exit_code = pod.fail_exit_code
        self.reasons[pod.ref] = (
            f"exited with code {pod.exit_code} after {pod.fail_after:g}s ({FAIL_AFTER_ANNOTATION})"
        )
        self._ended(pod, PodPhase.FAILED)

    def _ended(self, pod: Pod, phase: PodPhase, notify: bool = True) -> None:
        """A running pod's container exited: succeeded, or failed."""
        if self.elastic is not None:
            self.elastic.stopped(pod, self.clock.now)
        if self.slicing is not None:
            self.slicing.stopped(pod, self.clock.now)
        pod.phase = phase
        pod.end_time = self.clock.now
        pod.ready_since = None
        self.scheduler.release(pod)
        group = self.group_of(pod)
        stats = self.stats[group.key]
        stats.running -= 1
        self.running -= 1
        if phase == PodPhase.SUCCEEDED:
            stats.done += 1
        else:
            stats.failed += 1
        self._settle(group, stats)
        if pod.owner:
            self._forget(pod)
            if notify:
                self.notify(pod)
        self.request_session()

    def stop(self, pod: Pod, phase: PodPhase) -> None:
        """Bookkeeping for a pod that ends before finishing (already off its node)."""
        group = self.group_of(pod)
        stats = self.stats[group.key]
        if pod.phase == PodPhase.RUNNING:
            stats.running -= 1
            self.running -= 1
            if self.elastic is not None:
                self.elastic.stopped(pod, self.clock.now)
            if self.slicing is not None:
                self.slicing.stopped(pod, self.clock.now)
        elif pod.phase == PodPhase.PENDING:
            self.pending -= 1
        stats.evicted += 1
        pod.phase = phase
        pod.end_time = self.clock.now
        pod.ready_since = None
        if pod.owner:
            self._forget(pod)
        self._settle(group, stats)

    def take_off(self, pods: list[Pod], reason: str) -> int:
        """Pods taken off their nodes outside a scheduling cycle (a failed node, a scaling
        policy's cut): released from ClusterState, their reason kept, then evicted. All of
        them are: their number is returned."""
        for pod in pods:
            self.scheduler.release(pod)
            self.reasons[pod.ref] = reason
        self.evicted(pods)
        return len(pods)

    def evicted(self, pods: list[Pod]) -> None:
        """Pods taken off their nodes by the scheduler or a node failure (ClusterState is
        already updated). All are marked before any controller hears of one: its reaction
        (a restart deleting the job's other pods) must find them already gone."""
        for pod in pods:
            self.stop(pod, PodPhase.EVICTED)
        for pod in pods:
            if pod.owner:
                self.notify(pod)

    # ------------------------------------------------------------------ in-place restarts

    def changed(self, pod: Pod) -> None:
        """A controller changed a pod: new images on a running pod restart its containers."""
        if pod.phase != PodPhase.RUNNING or self._containers.get(pod.ref) == pod.containers:
            return
        self._containers[pod.ref] = pod.containers
        grace = float(pod.annotations.get(INPLACE_GRACE_ANNOTATION) or 0)
        end = self.clock.now + grace + self.config.restart
        self._restart_ends[pod.ref] = end
        pod.ready_since = None
        pod.restarts += 1
        self.queue.push(end, Ev.RESTARTED, pod)
        self.notify(pod)

    def on_restarted(self, pod: Pod) -> None:
        if pod.phase != PodPhase.RUNNING or self._restart_ends.get(pod.ref) != self.clock.now:
            return  # ended, or restarted again since
        del self._restart_ends[pod.ref]
        pod.ready_since = self.clock.now
        self.notify(pod)

    def _forget(self, pod: Pod) -> None:
        self._containers.pop(pod.ref, None)
        self._restart_ends.pop(pod.ref, None)

    # ------------------------------------------------------------------ nodes

    def node_down(self, failure: NodeFailure) -> None:
        self.scheduler.set_schedulable(failure.node, False)
        lost = [
            pod
            for pod in self.pods
            if pod.bound_node == failure.node and pod.phase in (PodPhase.BOUND, PodPhase.RUNNING)
        ]
        self.take_off(lost, f"node {failure.node} failed")
        if failure.recover_after is not None:
            self.queue.push(self.clock.now + failure.recover_after, Ev.NODE_UP, failure)
        self.request_session()

    def node_up(self, failure: NodeFailure) -> None:
        self.scheduler.set_schedulable(failure.node, True)
        self.request_session()
