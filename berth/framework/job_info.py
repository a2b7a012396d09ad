"""A job as the scheduler holds it between sessions: its PodGroup, its pending and bound pods,
and the running totals the plugins read (what it holds, what it asks for)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from berth.api.objects import Pod, PodGroup
from berth.cluster.state import ClusterState


def added(vector: np.ndarray | None, request: np.ndarray, sign: int) -> np.ndarray:
    """``vector`` (None: none yet) plus (sign=1) or minus (sign=-1) ``request``, grown to fit
    it (in place when it is long enough: this runs for every placement)."""
    width = len(request)
    if vector is None or len(vector) < width:
        grown = np.zeros(width, dtype=np.int64)
        if vector is not None:
            grown[: len(vector)] = vector
        vector = grown
    part = vector if len(vector) == width else vector[:width]
    if sign > 0:
        part += request
    else:
        part -= request
    return vector


class PendingPods:
    """A job's pods awaiting a node, in the order they arrived. Taking one out costs the same
    however many wait: a Deployment of a million replicas on a small cluster has its pods
    placed one at a time while the rest wait. Pods are told apart by identity (two pods with
    equal fields are still two pods)."""

    __slots__ = ("_pods", "appended")

    def __init__(self) -> None:
        self._pods: dict[int, Pod] = {}
        self.appended = 0  # pods ever appended: a kept task order is stale when this moves

    def append(self, pod: Pod) -> None:
        self._pods[id(pod)] = pod
        self.appended += 1

    def remove(self, pod: Pod) -> None:
        pods = self._pods
        pods.pop(id(pod), None)
        if not pods:
            self._pods = {}  # a dict keeps its largest table: a placed task's would stay

    def first(self) -> Pod:
        return next(iter(self._pods.values()))

    def __iter__(self) -> Iterator[Pod]:
        return iter(self._pods.values())

    def __reversed__(self) -> Iterator[Pod]:
        return reversed(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, pod: object) -> bool:
        return id(pod) in self._pods


@dataclass(slots=True)
class TaskOrder:
    """A large job's pending pods in task order with their pod-class keys, kept between
    sessions: a trace task of 15,000 instances or a Deployment of many replicas waiting on a
    full cluster would otherwise have its pods sorted and classed anew in every session, only
    for the first class to find no node. Made again only when pods join the job; pods that
    leave it stay in the lists and are skipped where met."""

    pods: list[Pod]
    keys: list[tuple]  # each pod's class key (equal keys are one object)
    #: For each pod, the index after the run of pods around it that share its key.
    run_end: list[int]
    requesting: int  # index of the first best-effort pod (they go last)
    appended: int  # the job's ``PendingPods.appended`` when the order was made
    flags: bool  # the search's ``key_flags`` the keys were worked out under
    head: int = 0  # the pods before it have all left the job
    #: Allocate's finding that every class left finds no node (``BeyondEveryNode``): the
    #: nodes' structure epoch then, and the most free it was told from.
    ruled_out: tuple[int, Any] | None = None

    def advance(self, pending: PendingPods) -> None:
        """Move ``head`` past pods that left the job, dropping them once they are half the
        lists (pods usually leave in task order, from the front)."""
        pods, head = self.pods, self.head
        while head < len(pods) and pods[head] not in pending:
            head += 1
        if head > 256 and 2 * head > len(pods):
            del pods[:head], self.keys[:head], self.run_end[:head]
            self.run_end[:] = [end - head for end in self.run_end]
            self.requesting = max(self.requesting - head, 0)
            head = 0
        self.head = head


@dataclass(slots=True)
class JobInfo:
    group: PodGroup
    pending: PendingPods = field(default_factory=PendingPods)
    bound: dict[str, Pod] = field(default_factory=dict)  # on nodes (committed), by pod key
    allocated: int = 0  # placed by the open statement, not yet committed
    placeholder: bool = False  # pods name this group but the PodGroup has not arrived
    #: Resources of the bound pods and of the open statement's placements (drf's share).
    held: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Resources the pending pods request (what proportion counts as the job's demand).
    asking: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: The group's minResources as a vector, built on first use (reset with the group).
    _min_request: np.ndarray | None = None
    #: Pending pods that request something besides the pod slot (allocate's, not backfill's).
    requesting: int = 0
    #: When the job last started waiting (the scheduler's count): the placing actions serve
    #: waiting jobs in this order, wherever admission kept them.
    since: int = 0
    #: When the scheduler first knew it (its count): its place in the scheduler's job table,
    #: which is the order the running jobs are listed in (``Session.running_jobs``).
    serial: int = 0
    #: Placements of the open statement per task, kept only for groups with per-task minimums.
    task_allocated: dict[str, int] = field(default_factory=dict)
    #: Its pending pods' task order, kept for a job with many or one that waited
    #: (``berth.actions.allocate``), and whether allocate has ordered them before.
    task_order: TaskOrder | None = None
    waited: bool = False
    #: ``namespace/name``, fixed for the job's life (a replacement PodGroup keeps it); asked
    #: for millions of times on a long backlog, so not rebuilt from the group each time.
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = self.group.key

    def min_request(self, state: ClusterState) -> np.ndarray:
        if self._min_request is None:
            self._min_request = state.request_vector(self.group.min_resources).astype(np.float64)
        return self._min_request

    def kept_order(self, flags: bool) -> TaskOrder | None:
        """The kept task order while it holds: no pod joined the job since it was made, and
        its class keys were worked out under the search's ``flags``."""
        kept = self.task_order
        if kept is None or kept.appended != self.pending.appended or kept.flags != flags:
            return None
        return kept

    def respecified(self) -> None:
        """A waiting pod's spec was changed in place (its tolerations): the kept task order,
        which holds the pods' classes, no longer holds."""
        self.task_order = None

    def only_best_effort(self) -> bool:
        """Whether every pending pod is best-effort (backfill's share)."""
        return self.requesting == 0

    @property
    def queue(self) -> str:
        return self.group.queue

    @property
    def active(self) -> int:
        """Pods bound or running."""
        return len(self.bound)

    def add_pending(self, pod: Pod, request: np.ndarray) -> None:
        self.pending.append(pod)
        self.requesting += not pod.best_effort
        self.asking = added(self.asking, request, 1)

    def remove_pending(self, pod: Pod, request: np.ndarray) -> None:
        self.pending.remove(pod)
        if not self.pending:
            self.task_order = None  # no pod left to order: its lists go
        self.requesting -= not pod.best_effort
        self.asking = added(self.asking, request, -1)


def demand(job: JobInfo, state: ClusterState) -> np.ndarray | None:
    """What a waiting job asks of its queue (proportion's request): its pending pods, or, for a
    batch Job's group before admission (no pods yet), its minResources, so that its queue can
    come to deserve that much. None for pods whose PodGroup has not arrived."""
    if job.placeholder:
        return None
    if job.group.owned and not job.pending:
        return job.min_request(state).astype(np.int64)
    return job.asking


def charge(
    queue_allocated: dict[str, np.ndarray], job: JobInfo, request: np.ndarray, sign: int
) -> None:
    """Add (sign=1) or remove (sign=-1) a pod's request from its job's and its queue's
    running totals."""
    queue_allocated[job.queue] = added(queue_allocated.get(job.queue), request, sign)
    job.held = added(job.held, request, sign)
