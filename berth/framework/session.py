"""One scheduling cycle: a snapshot of jobs, the actions run in order, a Statement per job.

Actions place tasks through a Statement so that a job which cannot become ready (a gang short of
minMember) is rolled back whole; only committed placements become bind decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from berth.api.objects import Pod, PodGroup, Queue
from berth.cluster.state import ClusterState

if TYPE_CHECKING:
    from berth.framework.framework import Framework
    from berth.framework.podclass import PodClass
    from berth.framework.search import NodeSearch


@dataclass(slots=True)
class JobInfo:
    group: PodGroup
    pending: list[Pod] = field(default_factory=list)
    active: int = 0  # pods bound or running
    allocated: int = 0  # placed by the open statement, not yet committed
    placeholder: bool = False  # pods name this group but the PodGroup has not arrived

    @property
    def key(self) -> str:
        return self.group.key

    @property
    def queue(self) -> str:
        return self.group.queue


def charge_queue(
    queue_allocated: dict[str, np.ndarray], queue: str, request: np.ndarray, sign: int
) -> None:
    """Add (sign=1) or remove (sign=-1) a pod's request from its queue's running total."""
    held = queue_allocated.get(queue)
    if held is None or len(held) < len(request):
        grown = np.zeros(len(request), dtype=np.int64)
        if held is not None:
            grown[: len(held)] = held
        held = queue_allocated[queue] = grown
    held[: len(request)] += sign * request


@dataclass(slots=True)
class Bind:
    pod: Pod
    node: str


@dataclass(slots=True)
class Eviction:
    pod: Pod
    node: str
    reason: str  # e.g. "preempted by default/train-7", "reclaimed by queue q1"


class Statement:
    """Tentative placements: applied to ClusterState at once (later tasks see them), undone on
    discard, turned into bind decisions on commit."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ops: list[tuple[JobInfo, Pod, int, np.ndarray]] = []
        self.evictions: list[tuple[JobInfo, Pod, int, np.ndarray, str]] = []

    def evict(self, job: JobInfo, pod: Pod, reason: str) -> None:
        """Take a bound pod off its node for this statement's placements; its resources are
        free at once for the tasks placed after it. Undone by ``discard``."""
        session = self.session
        row = session.state.rows[pod.bound_node]
        request = session.state.request_vector(pod.requests)
        session.state.unbind(pod, row, request)
        session.charge_queue(job.queue, request, -1)
        job.active -= 1
        self.evictions.append((job, pod, row, request, reason))

    def allocate(self, job: JobInfo, pod: Pod, row: int, cls: PodClass) -> None:
        self.session.state.bind(pod, row, cls.request)
        self.session.charge_queue(job.queue, cls.request, 1)
        job.allocated += 1
        self.ops.append((job, pod, row, cls.request))

    def discard(self) -> None:
        session = self.session
        for job, pod, row, request in reversed(self.ops):
            session.state.unbind(pod, row, request)
            session.charge_queue(job.queue, request, -1)
            job.allocated -= 1
        for job, pod, row, request, _ in reversed(self.evictions):
            session.state.bind(pod, row, request)
            session.charge_queue(job.queue, request, 1)
            job.active += 1
        self.ops.clear()
        self.evictions.clear()

    def commit(self) -> None:
        session = self.session
        placed: dict[str, set[int]] = {}
        for job, pod, row, _ in self.ops:
            job.allocated -= 1
            job.active += 1
            placed.setdefault(job.key, set()).add(id(pod))
            session.binds.append(Bind(pod, session.state.names[row]))
        for job, *_ in self.ops:
            gone = placed.pop(job.key, None)
            if gone:
                job.pending = [p for p in job.pending if id(p) not in gone]
        for _, pod, row, _, reason in self.evictions:
            session.evictions.append(Eviction(pod, session.state.names[row], reason))
        self.ops.clear()
        self.evictions.clear()


class Session:
    def __init__(
        self,
        state: ClusterState,
        framework: Framework,
        search: NodeSearch,
        jobs: dict[str, JobInfo],
        queues: dict[str, Queue],
        now: float,
        has_enqueue: bool = True,
        queue_allocated: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.state = state
        self.framework = framework
        self.search = search
        self.jobs = jobs
        self.queues = queues
        self.now = now
        self.framework_has_enqueue = has_enqueue
        #: Resources held by each queue's bound pods (shared with the Scheduler, kept current).
        self.queue_allocated = queue_allocated if queue_allocated is not None else {}
        self._capability: dict[str, np.ndarray] = {}
        self.binds: list[Bind] = []
        self.evictions: list[Eviction] = []
        #: Why a job could not be considered at all (invalid, closed queue), by job key.
        self.job_reasons: dict[str, str] = {}
        for plugin in framework.plugins:
            plugin.on_session_open(self)

    def statement(self) -> Statement:
        return Statement(self)

    # -- orderings and checks, combined over the plugins in tier order ----------------

    def job_order_key(self, job: JobInfo) -> tuple:
        keys = tuple(p.job_order(job) for p in self.framework.job_orders)
        return keys + (job.group.submit_time, job.key)

    def task_order_key(self, pod: Pod) -> tuple:
        keys = tuple(p.task_order(pod) for p in self.framework.task_orders)
        return keys + (pod.submit_time, pod.name)

    def job_valid(self, job: JobInfo) -> str | None:
        for plugin in self.framework.job_valids:
            reason = plugin.job_valid(job)
            if reason:
                return reason
        return None

    def queue_problem(self, job: JobInfo) -> str | None:
        if job.placeholder:
            return f"podgroup {job.group.name} not found"
        queue = self.queues.get(job.queue)
        if queue is None:
            return f"queue {job.queue} not found"
        if queue.state != "Open":
            return f"queue {job.queue} is {queue.state.lower()}"
        return None

    def charge_queue(self, queue: str, request: np.ndarray, sign: int) -> None:
        charge_queue(self.queue_allocated, queue, request, sign)

    def queue_overflow(self, job: JobInfo, request: np.ndarray) -> str | None:
        """Why placing ``request`` would take the job's queue past its capability, or None."""
        queue = self.queues.get(job.queue)
        if queue is None or not queue.capability:
            return None
        cap = self._capability.get(queue.name)
        if cap is None:
            cap = self._capability[queue.name] = self.state.request_vector(queue.capability)
        held = self.queue_allocated.get(queue.name, np.zeros(0, dtype=np.int64))
        for name in queue.capability:
            col = self.state.axis.index(name)
            used = held[col] if col < len(held) else 0
            need = request[col] if col < len(request) else 0
            if need and used + need > cap[col]:
                return f"queue {queue.name} at capability ({name})"
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return all(p.job_ready(job) for p in self.framework.job_readies)
