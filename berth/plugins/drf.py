"""drf: dominant resource fairness (Volcano's drf).

A job's share is the largest fraction of any resource's cluster total it holds; jobs with
smaller shares go first, and a job may preempt another's pods only while the victim's share
after losing them stays at least the preemptor's after gaining the pod, so preemption never
turns the order around (no ping-pong).

``enableNamespaceOrder`` puts namespace fairness first: jobs of the namespace holding the least
go first, and preemption across namespaces follows the namespaces' shares the same way.

``enableHierarchy`` orders queues by hierarchical DRF. A queue's place in the tree comes from
Volcano's annotations, ``volcano.sh/hierarchy: root/eng/dev`` with
``volcano.sh/hierarchy-weights: 100/50/50`` (a weight below 1 counts as 1); a queue without
them takes its place from ``parent`` and the queues' weights. Every node of the tree holds
what the queues below it hold; queues are compared level by level from the top, by each
node's dominant share per unit of its weight, and the first level where they differ decides
(Volcano's order, without its saturation and rescaling adjustments). With a hierarchy, a queue
may also reclaim a pod when, after the move, it would still come before the pod's queue.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.api.keys import HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION
from berth.api.objects import Pod, Queue
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin
from berth.framework.queues import EPSILON, PathKey, ShareColumns, dominant_share
from berth.framework.session import Session

#: A node of the hierarchy: the path of names from the top.
Path = tuple[str, ...]


class Drf(Plugin):
    name = "drf"
    queue_order_shared = True  # serving a queue changes its ancestors' shares

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.by_namespace = self.bool_arg("enableNamespaceOrder", False)
        # A namespace's share moves as its other jobs are placed.
        self.job_answers_own = not self.by_namespace
        self.hierarchy = self.bool_arg("enableHierarchy", False)
        self.columns = ShareColumns()

    def serves(self, point: str) -> bool:
        if point in ("queue_order", "reclaimable"):
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
        if self.hierarchy:
            self._build_tree(session)

    def share(self, amount: np.ndarray) -> float:
        return dominant_share(amount, self.total)

    def _namespace(self, namespace: str) -> np.ndarray:
        return self.namespaces.get(namespace, np.zeros_like(self.total))

    # -- the hierarchy ------------------------------------------------------------------

    def _build_tree(self, session: Session) -> None:
        """Each queue's path of tree nodes (top first) and every node's weight and holdings."""
        self.paths: dict[str, list[Path]] = {}
        self.weights: dict[Path, float] = {}
        self.held: dict[Path, np.ndarray] = {}
        for name, queue in session.queues.items():
            names, weights = _hierarchy(queue, session)
            nodes = [tuple(names[: depth + 1]) for depth in range(len(names))]
            self.paths[name] = nodes
            for node, weight in zip(nodes, weights, strict=True):
                self.weights.setdefault(node, weight)
                self.held.setdefault(node, np.zeros_like(self.total))
        for name, held in session.queue_allocated.items():
            self._count_queue(name, held, 1.0)

    def _path_key(self, queue: str, change: tuple[str, np.ndarray] | None = None) -> PathKey:
        """The queue's per-level weighted shares; ``change`` adds an amount to one queue's
        path first (for reclaim's what-if)."""
        moved: set[Path] = set()
        if change is not None:
            moved = set(self.paths[change[0]])
        values = []
        for node in self.paths[queue]:
            held = self.held[node]
            if node in moved and change is not None:
                held = held + change[1]
            values.append(self.share(held) / self.weights[node])
        return PathKey(tuple(values))

    # -- ordering ---------------------------------------------------------------------

    def job_order(self, job: JobInfo) -> tuple[float, ...]:
        # A job with nothing bound or placed holds nothing: most of a long backlog.
        own = self.share(self.columns.of(job.held)) if job.bound or job.allocated else 0.0
        if self.by_namespace:
            return (self.share(self._namespace(job.group.namespace)), own)
        return (own,)

    def queue_order(self, queue: Queue) -> PathKey:
        return self._path_key(queue.name)

    # -- preemption and reclaim -------------------------------------------------------

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

    def reclaimable(self, reclaimer: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        """Pods whose queue, with the pod gone, would still come after the reclaimer's queue
        holding the new pod (each candidate judged on its own, as Volcano judges them)."""
        mine = reclaimer.queue
        if mine not in self.paths:
            return []
        gain = self.columns.amounts(pod.requests)
        victims = []
        for candidate in candidates:
            job = self.session.job_of(candidate)
            if job is None or job.queue not in self.paths:
                continue
            freed = -self.columns.amounts(candidate.requests)
            theirs = self._path_key(job.queue, (job.queue, freed))
            ours = self._path_key(mine, (mine, gain))
            if ours < theirs:
                victims.append(candidate)
        return victims

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
        """Use rolls up: a node holds what every queue below it holds."""
        nodes = self.paths.get(queue)
        if nodes:
            amount = sign * self.columns.of(request)
            for node in nodes:
                self.held[node] += amount


def _hierarchy(queue: Queue, session: Session) -> tuple[list[str], list[float]]:
    """The queue's path of names from the top and the weight of each: from Volcano's
    annotations when present, else from ``parent`` links and the queues' weights. The top is
    the same ``root`` node for every queue."""
    path = queue.annotations.get(HIERARCHY_ANNOTATION, "")
    if path:
        names = path.split("/")
        raw = queue.annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, "").split("/")
        weights = [_weight(raw[i] if i < len(raw) else "") for i in range(len(names))]
        return ["root", *names[1:]], [1.0, *weights[1:]]
    lineage = list(reversed(session.tree.lineage(queue.name)))
    return ["root", *lineage], [1.0, *(float(session.queues[q].weight) for q in lineage)]


def _weight(text: str) -> float:
    """A weight from the annotation; like Volcano, anything below 1 (or unreadable) is 1."""
    try:
        value = float(text)
    except ValueError:
        return 1.0
    return max(value, 1.0)
