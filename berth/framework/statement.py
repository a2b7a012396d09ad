"""Tentative placements and evictions of one job's turn, applied to ClusterState at once so
that later operations see them, undone whole when the job cannot become ready (a gang short of
minMember, evictions made for it included), turned into bind and eviction decisions on commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from berth.api.objects import Pod, task_name
from berth.cluster.devices import Placement, record_devices
from berth.framework.job_info import JobInfo

if TYPE_CHECKING:
    from berth.framework.podclass import PodClass
    from berth.framework.session import Session


@dataclass(slots=True)
class Bind:
    pod: Pod
    node: str


@dataclass(slots=True)
class Eviction:
    pod: Pod
    node: str
    reason: str  # e.g. "preempted by default/train-7", "reclaimed by queue q1"


def _count_task(job: JobInfo, pod: Pod, delta: int) -> None:
    task = task_name(pod)
    job.task_allocated[task] = job.task_allocated.get(task, 0) + delta


@dataclass(slots=True)
class _Operation:
    job: JobInfo
    pod: Pod
    row: int
    request: np.ndarray
    reason: str | None  # None: a placement; else an eviction and why
    devices: Placement | None = None  # the GPU devices placed on, or given back
    claims: Any = None  # what an eviction gave back of the pod's DRA claims


class Statement:
    """Tentative placements and evictions: applied to ClusterState at once (later operations
    see them), undone on discard, turned into bind and eviction decisions on commit."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.journal: list[_Operation] = []

    @property
    def has_placements(self) -> bool:
        return any(op.reason is None for op in self.journal)

    def allocate(self, job: JobInfo, pod: Pod, row: int, cls: PodClass) -> None:
        session = self.session
        state = session.state
        devices = session.framework.pick_devices(cls, state, row)
        placement = state.bind(pod, row, cls.request, devices)
        job.allocated += 1
        if job.group.min_task_member:
            _count_task(job, pod, 1)
        session.charge(job, pod, cls.request, 1)
        self.journal.append(_Operation(job, pod, row, cls.request, None, placement))

    def evict(self, job: JobInfo, pod: Pod, reason: str) -> None:
        """Take a bound pod off its node; its resources are free at once for the operations
        after it. Undone by ``discard``."""
        session = self.session
        row = session.state.rows[pod.bound_node]
        request = session.state.request_row(pod.requests)
        placement = session.state.unbind(pod, row, request)
        claims = session.state.last_claims if pod.resource_claims else None
        del job.bound[pod.key]
        session.charge(job, pod, request, -1)
        self.journal.append(_Operation(job, pod, row, request, reason, placement, claims))

    def savepoint(self) -> int:
        return len(self.journal)

    def evicted_since(self, savepoint: int) -> list[Pod]:
        """The pods evicted by the operations after ``savepoint``."""
        return [op.pod for op in self.journal[savepoint:] if op.reason is not None]

    def rollback(self, savepoint: int) -> None:
        """Undo the operations after ``savepoint``, newest first."""
        session = self.session
        while len(self.journal) > savepoint:
            op = self.journal.pop()
            if op.reason is None:
                session.state.unbind(op.pod, op.row, op.request)
                op.job.allocated -= 1
                if op.job.group.min_task_member:
                    _count_task(op.job, op.pod, -1)
                session.charge(op.job, op.pod, op.request, -1)
            else:
                session.state.bind(op.pod, op.row, op.request, op.devices, op.claims)
                op.job.bound[op.pod.key] = op.pod
                session.charge(op.job, op.pod, op.request, 1)

    def discard(self) -> None:
        self.rollback(0)

    def commit(self) -> None:
        session = self.session
        for op in self.journal:
            node = session.state.names[op.row]
            if op.reason is not None:
                session.evictions.append(Eviction(op.pod, node, op.reason))
                continue
            op.job.allocated -= 1
            if op.job.group.min_task_member:
                _count_task(op.job, op.pod, -1)
            op.job.remove_pending(op.pod, op.request)
            key = op.pod.key
            op.job.bound[key] = op.pod
            session.holding[op.job.key] = op.job
            op.pod.bound_node = node
            if op.devices is not None:
                record_devices(op.pod, node, op.devices)
            if op.pod.resource_claims and session.state.dra is not None:
                op.pod.gpu_devices = session.state.dra.devices_text(op.pod, op.row)
            session.bound_this_cycle.add(key)
            session.binds.append(Bind(op.pod, node))
        self.journal.clear()
