"""Capacity loaning between inference and training (Aryl, EuroSys'23).

Nodes labelled ``<poolLabel>=<inferencePool>`` form the inference pool; pods whose
nodeSelector names that pool are inference pods, every other pod is training. At the start the
pool's nodes are tainted ``<poolLabel>=<inferencePool>:NoSchedule`` and inference pods are given
the toleration, so training stays off them. An inference node that has held no inference pod for
``idleBeforeLend`` seconds (checked every ``checkInterval``) is lent: its label and taint become
``<lentPool>``, which training pods tolerate (each gets the toleration when it is submitted) and
inference pods' nodeSelector no longer matches. When a session leaves inference pods pending,
lent nodes are taken back, cheapest first, until their capacity covers the pending pods: their
training pods are evicted, their jobs restarted, and label and taint return to the inference
pool, all at once, so the next session can place the inference pods.

The cost of taking a node back is, over the jobs on it, the sum of (the job's GPUs on that node
/ the job's GPUs) — the share of each job that is lost (a job without GPUs counts pods instead).
Pods that are ``free to remove`` cost nothing: workers of an elastic job above its minimum
(``berth.sim.elastic``), which leave a job that keeps its progress; a rigid job loses its work.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from berth.api.keys import DELETION_COST_ANNOTATION
from berth.api.objects import GroupPhase, Node, Pod, PodPhase
from berth.api.selectors import Taint, Toleration
from berth.controllers.loaning import (
    LENT_NODE_TAKEN_BACK,
    FreeToRemove,
    keep_off,
    reclaim_costs,
    reclaim_order,
    rigid,
    without,
)
from berth.controllers.loaning_config import LoaningConfig
from berth.framework.scheduler import Scheduler
from berth.resources import GPU
from berth.sim.agent import Clock, NodeAgent, pending_copy
from berth.sim.events import Ev, EventQueue

ACTIVE = (PodPhase.BOUND, PodPhase.RUNNING)


@dataclass(slots=True)
class ReclaimEvent:
    time: float
    node: str
    cost: float
    gpus: float  # GPUs the node returned to inference
    pods_preempted: int  # training pods evicted (the node's, and their gangs' elsewhere)
    #: GPU-hours the preempted pods of rigid jobs had run, lost since they restart from the
    #: start (an elastic job keeps its progress).
    gpu_hours_lost: float = 0.0
    #: Jobs stopped or restarted (not those that only lost workers above their minimum).
    jobs: list[str] = field(default_factory=list)


class Loaning:
    """Lends idle inference nodes to training and takes them back for inference.

    ``submit(pod)`` hands a replacement pod to the simulation (counted and scheduled like any
    arriving pod); ``request_session`` asks for a scheduling cycle.
    """

    def __init__(
        self,
        config: LoaningConfig,
        scheduler: Scheduler,
        agent: NodeAgent,
        queue: EventQueue,
        clock: Clock,
        submit: Callable[[Pod], None],
        request_session: Callable[[], None],
        free_to_remove: FreeToRemove = rigid,
    ) -> None:
        self.config = config
        self.scheduler = scheduler
        self.agent = agent
        self.queue = queue
        self.clock = clock
        self.submit = submit
        self.request_session = request_session
        self.free_to_remove = free_to_remove
        #: Whether a pod's job keeps the work it did when the pod is stopped (elastic jobs).
        self.keeps_work: FreeToRemove = rigid
        state = scheduler.state
        self.nodes = [
            n.name
            for n in state.nodes[: state.n]
            if n.labels.get(config.pool_label) == config.inference_pool
        ]
        self.lent: set[str] = set()
        self._idle_since: dict[str, float | None] = dict.fromkeys(self.nodes)
        self.inference_pods: list[Pod] = []
        self.reclaims: list[ReclaimEvent] = []
        self.lends: list[tuple[float, str]] = []
        #: Plain pods restarted by a reclaim: original name → replacements made so far, and
        #: each replacement's original name.
        self._attempts: dict[str, int] = {}
        self._original: dict[str, str] = {}
        #: Rigid jobs a reclaim restarted, kept off lent nodes from then on (relendRestarted).
        self.restarted: set[str] = set()
        self._inference_toleration = Toleration(
            config.pool_label, "Equal", config.inference_pool, "NoSchedule"
        )
        self._lent_toleration = Toleration(
            config.pool_label, "Equal", config.lent_pool, "NoSchedule"
        )
        pool_rows = np.zeros(state.capacity, dtype=bool)
        pool_rows[[state.rows[name] for name in self.nodes]] = True
        self._pool_rows = pool_rows
        for name in self.nodes:
            self._set_pool(name, config.inference_pool)
        queue.push(0.0, Ev.TICK, self._tick)

    # ------------------------------------------------------------------ pods

    def is_inference(self, pod: Pod) -> bool:
        return pod.node_selector.get(self.config.pool_label) == self.config.inference_pool

    def admit(self, pod: Pod) -> None:
        """Give a pod arriving at the scheduler the toleration of its side: inference pods
        the inference pool's taint, training pods the lent nodes' taint (with ``lendTo:
        elastic``, only an elastic job's)."""
        if self.is_inference(pod):
            toleration = self._inference_toleration
            self.inference_pods.append(pod)
        elif self.keeps_work(pod):
            toleration = self._lent_toleration
        elif self.restarted and pod.job_key in self.restarted:
            # Not lent to again; a copy of its pod may still tolerate the lent taint.
            pod.tolerations = without(pod.tolerations, self._lent_toleration)
            return
        elif self.config.lend_to == "all":
            toleration = self._lent_toleration
        else:
            return
        if toleration not in pod.tolerations:
            pod.tolerations = (*pod.tolerations, toleration)

    # ------------------------------------------------------------------ nodes

    def _set_pool(self, name: str, pool: str) -> None:
        """Label and taint a node as belonging to ``pool`` (an update the scheduler sees)."""
        state = self.scheduler.state
        node = state.nodes[state.rows[name]]
        key = self.config.pool_label
        taints = tuple(t for t in node.taints if t.key != key) + (Taint(key, pool, "NoSchedule"),)
        updated: Node = replace(node, labels={**node.labels, key: pool}, taints=taints)
        schedulable = bool(state.schedulable[state.rows[name]])
        self.scheduler.update_node(updated)
        if not schedulable:  # a failed node stays cordoned whatever its pool
            self.scheduler.set_schedulable(name, False)

    def _tick(self) -> None:
        """Lend the inference nodes idle for long enough (none while inference pods wait).

        Inference pods are also given a ``controller.kubernetes.io/pod-deletion-cost`` of how
        many inference pods share their node, so a scale-down removes those on the emptiest
        nodes first and drains nodes that can then be lent (Kubernetes' own order would spread
        the survivors over every node and leave none idle)."""
        now = self.clock.now
        live: list[Pod] = []
        active: list[Pod] = []
        waiting = False
        for pod in self.inference_pods:
            if pod.phase in ACTIVE:
                live.append(pod)
                active.append(pod)
            elif pod.phase == PodPhase.PENDING:
                live.append(pod)
                waiting = True
        self.inference_pods = live
        occupied = Counter(p.bound_node for p in active)
        costs = {node: str(count) for node, count in occupied.items()}
        for pod in active:
            if pod.owner:
                cost = costs[pod.bound_node]
                pod.annotations = {**pod.annotations, DELETION_COST_ANNOTATION: cost}
        lent_any = False
        for name in self.nodes:
            if name in self.lent:
                continue
            if name in occupied:
                self._idle_since[name] = None
                continue
            since = self._idle_since[name]
            if since is None:
                self._idle_since[name] = now
            elif now - since >= self.config.idle_before_lend and not waiting:
                self.lent.add(name)
                self.lends.append((now, name))
                self._set_pool(name, self.config.lent_pool)
                lent_any = True
        if lent_any:
            self.request_session()
        self.queue.push(now + self.config.check_interval, Ev.TICK, self._tick)

    def training_rows(self, count: int) -> np.ndarray:
        """Rows of the nodes training may use: outside the inference pool, or lent."""
        rows = ~self._pool_rows[:count]
        rows[[self.scheduler.state.rows[name] for name in self.lent]] = True
        return rows

    # ------------------------------------------------------------------ reclaim

    def after_session(self) -> None:
        """Take lent nodes back when the session left inference pods pending."""
        pending = [p for p in self.inference_pods if p.phase == PodPhase.PENDING]
        if not pending or not self.lent:
            return
        state = self.scheduler.state
        need = np.sum([state.request_vector(p.requests) for p in pending], axis=0)
        on_node = {name: list(state.pods_on[state.rows[name]].values()) for name in self.lent}
        costs = reclaim_costs(
            self.config.reclaim_cost,
            on_node,
            self._job_pods(on_node),
            self.free_to_remove,
            self.keeps_work,
            self.clock.now,
        )
        covered = np.zeros_like(need)
        for name in reclaim_order(costs):
            if np.all(covered >= need):
                break
            covered = covered + state.allocatable[state.rows[name], : len(need)]
            self._reclaim(name, costs[name])
        self.request_session()

    def _job_pods(self, on_node: dict[str, list[Pod]]) -> dict[str, list[Pod]]:
        """The bound pods of each job that has a pod on one of ``on_node``'s nodes."""
        jobs = self.scheduler.jobs
        keys = {p.job_key for pods in on_node.values() for p in pods}
        return {key: list(jobs[key].bound.values()) if key in jobs else [] for key in keys}

    def _reclaim(self, name: str, cost: float) -> None:
        state = self.scheduler.state
        # Read now: an earlier reclaim of this pass may have restarted a gang that spanned both.
        pods = list(state.pods_on[state.rows[name]].values())
        reason = f"{LENT_NODE_TAKEN_BACK}{name} taken back for inference"
        victims = self._with_gangs(pods)
        # A worker free to remove shrinks its job without stopping it; an elastic job's work
        # survives even a stop (it resumes from its checkpoint), a rigid job's does not.
        jobs = sorted({p.job_key for p in victims if not self.free_to_remove(p)})
        now = self.clock.now
        lost = sum(
            (now - p.start_time) * p.requests.get(GPU, 0) / 1000 / 3600
            for p in victims
            if p.start_time is not None and not self.keeps_work(p)
        )
        if not self.config.relend_restarted:
            keep_off(
                self.scheduler, self.restarted, victims, self.keeps_work, self._lent_toleration
            )
        self._evict(victims, reason)
        self.lent.discard(name)
        self._idle_since[name] = None
        self._set_pool(name, self.config.inference_pool)
        gpus = state.allocatable[state.rows[name], state.gpu_column] / 1000
        self.reclaims.append(ReclaimEvent(now, name, cost, float(gpus), len(victims), lost, jobs))

    def _with_gangs(self, pods: list[Pod]) -> list[Pod]:
        """The node's pods, and the other bound pods of each plain (controller-less) job that
        would be left with fewer than its minMember: a rigid gang cannot run short, so it
        restarts as a whole. A controller's job decides for itself (its lifecycle policy)."""
        chosen = {p.ref: p for p in pods}
        for key in sorted({p.job_key for p in pods}):
            job = self.scheduler.jobs.get(key)
            if job is None or job.group.owned or id(job.group) in self.agent.controlled:
                continue
            left = [p for p in job.bound.values() if p.ref not in chosen]
            if len(left) < job.group.min_member:
                chosen.update((p.ref, p) for p in left)
        return list(chosen.values())

    def _evict(self, victims: list[Pod], reason: str) -> None:
        """Off their nodes; a plain pod gets a pending replacement at once (its job
        re-queued, from the start), a controller's pod is replaced by its controller."""
        for pod in victims:
            self.scheduler.release(pod)
            self.agent.reasons[pod.ref] = reason
        for pod in victims:
            if not pod.owner:
                self.submit(self._replacement(pod))
        for key in {p.job_key for p in victims if not p.owner}:
            job = self.scheduler.jobs.get(key)
            if job is not None and not job.group.implicit:
                job.group.phase = GroupPhase.INQUEUE  # admitted still, waiting for room again
        self.agent.evicted(victims)

    def _replacement(self, pod: Pod) -> Pod:
        base = self._original.get(pod.name, pod.name)
        attempt = self._attempts.get(base, 0) + 1
        self._attempts[base] = attempt
        name = f"{base}.{attempt}"
        self._original[name] = base
        return pending_copy(pod, name, self.clock.now)

    # ------------------------------------------------------------------ metrics

    def record(self, pods: list[Pod]) -> LoaningRecord:
        """The run's loaning, over ``pods`` (the pods the run reports)."""
        inference = [p for p in pods if self.is_inference(p)]
        waits = [p.bind_time - p.submit_time for p in inference if p.bind_time is not None]
        return LoaningRecord(
            self.config,
            len(self.nodes),
            list(self.lends),
            list(self.reclaims),
            np.array(waits, dtype=np.float64),
            sum(1 for p in inference if p.phase == PodPhase.PENDING),
        )

    def sample(self) -> dict[str, float]:
        """GPUs lent, and each pool's GPUs allocated and schedulable, for the time series."""
        state = self.scheduler.state
        count, column = state.n, state.gpu_column
        if column >= state.width:
            allocatable = requested = np.zeros(count)
        else:
            allocatable = state.allocatable[:count, column] * state.schedulable[:count]
            requested = state.requested[:count, column]
        pool = self._pool_rows[:count]
        lent = np.zeros(count, dtype=bool)
        lent[[state.rows[name] for name in self.lent]] = True
        inference = pool & ~lent
        training = ~pool
        columns = {"lent_gpus": allocatable[lent].sum() / 1000}
        for label, rows in (("inference", inference), ("lent", lent), ("training", training)):
            columns[f"{label}_gpus_allocated"] = requested[rows].sum() / 1000
            columns[f"{label}_gpus_capacity"] = allocatable[rows].sum() / 1000
        return columns


@dataclass(slots=True)
class LoaningRecord:
    """What loaning did in a run, for the summary (``berth.metrics.loaning``)."""

    config: LoaningConfig
    inference_nodes: int
    lends: list[tuple[float, str]]
    reclaims: list[ReclaimEvent]
    #: Bind − submit of every inference pod that was bound, in seconds.
    inference_waits: np.ndarray
    inference_pending: int  # inference pods still pending at the end
