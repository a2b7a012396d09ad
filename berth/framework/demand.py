"""What each queue's waiting jobs ask for, kept as jobs change rather than summed over the
backlog every session: proportion divides the cluster by it when a session opens.

Each job's last counted demand is remembered, so a change is applied as the difference. The
amounts are integers, so the running sums are exactly what a fresh sum would give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from berth.framework.job_info import added, demand

if TYPE_CHECKING:
    from berth.cluster.state import ClusterState
    from berth.framework.job_info import JobInfo


def queue_demand(jobs: dict[str, JobInfo], state: ClusterState) -> dict[str, np.ndarray]:
    """The demand of ``jobs`` summed per queue, from scratch."""
    sums: dict[str, np.ndarray] = {}
    for job in jobs.values():
        ask = demand(job, state)
        if ask is not None:
            sums[job.queue] = added(sums.get(job.queue), ask, 1)
    return sums


class Demand:
    """Per-queue demand of the scheduler's waiting jobs, brought up to date when read."""

    def __init__(self) -> None:
        self.per_queue: dict[str, np.ndarray] = {}
        #: The queue and amount each job was last counted with.
        self._counted: dict[str, tuple[str, np.ndarray]] = {}
        self._changed: dict[str, JobInfo] = {}

    def changed(self, job: JobInfo) -> None:
        """The job's pods, group or waiting changed: count it again on the next read."""
        self._changed[job.key] = job

    def stopped_waiting(self, job: JobInfo) -> None:
        """The job no longer waits: only what it was counted with has to go. A job never
        counted (bound at once, as a cluster's running pods are at start-up) costs nothing at
        the next read."""
        if job.key in self._counted:
            self._changed[job.key] = job
        else:
            self._changed.pop(job.key, None)

    def current(self, waiting: dict[str, JobInfo], state: ClusterState) -> dict[str, np.ndarray]:
        per_queue = self.per_queue
        for key, job in self._changed.items():
            counted = self._counted.pop(key, None)
            if counted is not None:
                queue, amount = counted
                per_queue[queue] = added(per_queue[queue], amount, -1)
            ask = demand(job, state) if waiting.get(key) is job else None
            if ask is not None and ask.any():
                queue = job.queue
                per_queue[queue] = added(per_queue.get(queue), ask, 1)
                self._counted[key] = (queue, ask.copy())
        self._changed.clear()
        return per_queue
