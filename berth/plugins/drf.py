"""drf: dominant resource fairness (Volcano's drf).

A job's share is the largest fraction of any resource's cluster total it holds; jobs with
smaller shares go first, and a job may preempt another's pods only while the victim's share
after losing them stays at least the preemptor's after gaining the pod, so preemption never
turns the order around (no ping-pong).

``enableNamespaceOrder`` puts namespace fairness first: jobs of the namespace holding the least
go first, and preemption across namespaces follows the namespaces' shares the same way.
``enableHierarchy`` orders queues by hierarchical DRF along the ``parent`` tree: at each level,
the subtree holding the smaller dominant share per unit of the queue's weight goes first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.api.objects import Pod, Queue
from berth.framework.plugin import Plugin
from berth.framework.queues import EPSILON, ShareColumns, dominant_share
from berth.framework.session import JobInfo, Session


class Drf(Plugin):
    name = "drf"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.by_namespace = self.bool_arg("enableNamespaceOrder", False)
        self.hierarchy = self.bool_arg("enableHierarchy", False)
        self.columns = ShareColumns()

    def serves(self, point: str) -> bool:
        if point == "queue_order":
            return self.hierarchy
        if point in ("on_allocate", "on_deallocate"):
            return self.hierarchy or self.by_namespace
        return True

    def on_session_open(self, session: Session) -> None:
        self.session = session
        self.columns.bind(session.state)
        self.total = self.columns.of(session.total)
        self.namespaces: dict[str, np.ndarray] = {}
        if self.by_namespace:
            for job in session.all_jobs.values():
                self._count_namespace(job.group.namespace, job.held, 1.0)
        self.queues: dict[str, np.ndarray] = {}
        if self.hierarchy:
            self.queues = {name: np.zeros_like(self.total) for name in session.queues}
            for name, held in session.queue_allocated.items():
                self._count_queue(name, held, 1.0)

    def share(self, amount: np.ndarray) -> float:
        return dominant_share(amount, self.total)

    def _namespace(self, namespace: str) -> np.ndarray:
        return self.namespaces.get(namespace, np.zeros_like(self.total))

    # -- ordering ---------------------------------------------------------------------

    def job_order(self, job: JobInfo) -> tuple[float, ...]:
        own = self.share(self.columns.of(job.held))
        if self.by_namespace:
            return (self.share(self._namespace(job.group.namespace)), own)
        return (own,)

    def queue_order(self, queue: Queue) -> tuple:
        queues = self.session.queues

        def weighted(name: str) -> float:
            return self.share(self.queues[name]) / queues[name].weight

        return self.session.tree.path_key(queue.name, weighted)

    # -- preemption -------------------------------------------------------------------

    def preemptable(self, preemptor: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        gain = self.columns.amounts(pod.requests)
        undecided = candidates
        victims: list[Pod] = []
        if self.by_namespace:
            mine = self.share(self._namespace(preemptor.group.namespace) + gain)
            undecided = []
            namespaces: dict[str, np.ndarray] = {}
            for candidate in candidates:
                if candidate.namespace == preemptor.group.namespace:
                    undecided.append(candidate)
                    continue
                held = namespaces.setdefault(
                    candidate.namespace, self._namespace(candidate.namespace).copy()
                )
                held -= self.columns.amounts(candidate.requests)
                theirs = self.share(held)
                if mine < theirs - EPSILON:
                    victims.append(candidate)
                elif mine <= theirs + EPSILON:
                    undecided.append(candidate)
        mine = self.share(self.columns.of(preemptor.held) + gain)
        jobs: dict[str, np.ndarray] = {}
        for candidate in undecided:
            job = self.session.job_of(candidate)
            if job is None:
                continue
            held = jobs.setdefault(job.key, self.columns.of(job.held).copy())
            held -= self.columns.amounts(candidate.requests)
            if mine <= self.share(held) + EPSILON:
                victims.append(candidate)
        order = {id(c): i for i, c in enumerate(candidates)}
        return sorted(victims, key=lambda c: order[id(c)])

    # -- bookkeeping --------------------------------------------------------------------

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        self._count(job, request, 1.0)

    def on_deallocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        self._count(job, request, -1.0)

    def _count(self, job: JobInfo, request: np.ndarray, sign: float) -> None:
        if self.by_namespace:
            self._count_namespace(job.group.namespace, request, sign)
        if self.hierarchy:
            self._count_queue(job.queue, request, sign)

    def _count_namespace(self, namespace: str, request: np.ndarray, sign: float) -> None:
        self.namespaces[namespace] = self._namespace(namespace) + sign * self.columns.of(request)

    def _count_queue(self, queue: str, request: np.ndarray, sign: float) -> None:
        """Use rolls up: a queue's total includes its descendants'."""
        if queue in self.queues:
            amount = sign * self.columns.of(request)
            for name in self.session.tree.lineage(queue):
                self.queues[name] += amount
