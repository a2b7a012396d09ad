"""Capacity loaning in ``berth serve --loaning FILE``: the simulator's rules
(``berth.sim.loaning``, docs/loaning.md) written as label and taint changes on the nodes.

The pools are read from the nodes' ``<poolLabel>`` label, which is the state of record: a node
labelled ``<inferencePool>`` is an inference node, one labelled ``<lentPool>`` is an inference
node lent to training, every other node is training's. So a restarted berth (or a new leader)
finds every loan where it was. Each pool node carries one taint ``<poolLabel>=<its label
value>:NoSchedule`` that berth keeps in line with the label; lending and reclaiming change
label and taint together in one merge patch guarded by the node's resourceVersion.

Pods are sorted as in the simulator: an inference pod asks for ``<poolLabel>: <inferencePool>``
in its nodeSelector, every other pod is training's. Berth gives each pod it schedules the
toleration of its side in its own view (the pod objects are not changed): training tolerates
the lent taint, inference the inference taint. Pods other schedulers place tolerate neither,
so they stay on the training pool.

Every ``checkInterval`` seconds, inference pods get a ``controller.kubernetes.io/
pod-deletion-cost`` of how many inference pods share their node (so whoever scales the
Deployment down empties nodes), and inference nodes idle for ``idleBeforeLend`` seconds are
lent unless inference pods wait. After every scheduling cycle that leaves inference pods
pending (whoever made them: an HPA, a person), lent nodes are taken back cheapest first
(``reclaim_costs``, ``reclaim_order``) until they cover the pending pods' requests: the node is
relabelled first, then its training pods are evicted through the Eviction API, and the
inference pods' binds to it wait until those pods are gone. A training pod found on an
inference node that is not lent (a reclaim cut short by a restart) is evicted the same way
while inference pods wait.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from berth.api.keys import DELETION_COST_ANNOTATION
from berth.api.objects import FINAL_JOB_PHASES, Pod, PodPhase
from berth.api.selectors import Toleration
from berth.controllers.loaning import (
    LENT_NODE_TAKEN_BACK,
    keep_off,
    reclaim_costs,
    reclaim_order,
    without,
)
from berth.controllers.loaning_config import LoaningConfig, LoaningConfigError
from berth.framework.scheduler import Scheduler
from berth.k8s.cache import KubeStore
from berth.k8s.client import MERGE_PATCH, ApiError, ConnectionLost
from berth.k8s.informer import Event
from berth.k8s.kinds import NODE, POD
from berth.k8s.metrics import Metrics
from berth.k8s.parts import ServeParts
from berth.k8s.scaling import JobRuns, RunsOwner

log = logging.getLogger("berth.k8s")

#: How many of the latest waits, lends and reclaims a server keeps (for tests and debugging).
RECORDS = 1000


def read_config(path: Path, period: float) -> LoaningConfig:
    """``--loaning FILE``: a scheduler configuration whose ``simulation.loaning`` section turns
    loaning on (the file ``berth simulate --config`` takes), or that section's mapping alone.
    LoaningConfigError says what is wrong in one line, as does a wait bound the scheduling
    period cannot keep."""
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LoaningConfigError(f"{path}: cannot read: {str(exc).splitlines()[0]}") from None
    if isinstance(raw, dict) and isinstance(raw.get("simulation"), dict):
        if "loaning" not in raw["simulation"]:
            raise LoaningConfigError(f"{path}: simulation.loaning: field required")
        raw = raw["simulation"]["loaning"]
    config = LoaningConfig.from_raw(raw, str(path))
    if config.wait_bound < 2 * period:
        raise LoaningConfigError(
            f"{path}: simulation.loaning.waitBound: {config.wait_bound:g}s cannot be kept with "
            f"a scheduling period of {period:g}s (expected at least two periods)"
        )
    return config


class ServeLoaning:
    """``take_off(pods, reason)`` evicts pods berth has on nodes and says how many it did;
    ``runs`` are the Job controllers' runs (an elastic job's workers above its minimum cost
    nothing to take back)."""

    def __init__(
        self,
        config: LoaningConfig,
        scheduler: Scheduler,
        store: KubeStore,
        runs: RunsOwner,
        take_off: Callable[[list[Pod], str], int],
        clock: Callable[[], float],
        metrics: Metrics,
    ) -> None:
        self.config = config
        self.scheduler = scheduler
        self.store = store
        self.runs = runs
        self.take_off = take_off
        self.clock = clock
        self.metrics = metrics
        self.due = 0.0  # when the next idle check is due
        self._idle_since: dict[str, float] = {}
        self._waiting_since: dict[str, float] = {}  # inference pods not bound yet
        #: The latest inference pods' waits (first seen pending → seen bound), in seconds, and
        #: the latest lends and reclaims (the metrics count them all).
        self.waits: deque[float] = deque(maxlen=RECORDS)
        self.lends: deque[tuple[float, str]] = deque(maxlen=RECORDS)
        self.reclaims: deque[tuple[float, str, float]] = deque(maxlen=RECORDS)  # time, node, cost
        self._pool: tuple[tuple[int, int], dict[str, str]] = ((-1, -1), {})
        #: Rigid jobs a reclaim restarted, kept off lent nodes while their PodGroup lives
        #: (``relendRestarted: false``); a restarted berth forgets them.
        self.restarted: set[str] = set()
        key = config.pool_label
        self._inference_toleration = Toleration(key, "Equal", config.inference_pool, "NoSchedule")
        self._lent_toleration = Toleration(key, "Equal", config.lent_pool, "NoSchedule")

    # ------------------------------------------------------------------ pools

    def pool(self) -> dict[str, str]:
        """Inference nodes (lent or not) by name → their pool label value; read again only
        when a node was added or changed (every cycle with inference pods waiting asks)."""
        state = self.scheduler.state
        seen = (state.n, self.scheduler.admission_epoch)
        if self._pool[0] != seen:
            key = self.config.pool_label
            pools = (self.config.inference_pool, self.config.lent_pool)
            found = {
                node.name: node.labels[key]
                for node in state.nodes[: state.n]
                if node.labels.get(key) in pools
            }
            self._pool = (seen, found)
        return self._pool[1]

    @property
    def lent(self) -> set[str]:
        return {name for name, value in self.pool().items() if value == self.config.lent_pool}

    def training_rows(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` less the inference nodes not lent (what training may use)."""
        state = self.scheduler.state
        out = rows.copy()
        for name, value in self.pool().items():
            if value == self.config.inference_pool:
                out[state.rows[name]] = False
        return out

    @classmethod
    def attach(cls, server: ServeParts) -> ServeLoaning:
        """Loaning for ``server`` (its options name the config); its scaling policy, if any,
        then sees what training may use and takes workers off lent nodes first, as in the
        simulator."""
        assert server.options.loaning is not None
        loaning = cls(
            server.options.loaning,
            server.scheduler,
            server.store,
            JobRuns(server.controller, server.kubeflow, server.paddle),
            server.evict_running,
            server.clock,
            server.metrics,
        )
        scaling = server.scaling
        if scaling is not None:
            scaling.training_rows = loaning.training_rows
            scaling.is_training = loaning.is_training
            scaling.wait = scaling.config.wait_with(loaning=True)
            scaling.holding.lent = lambda: loaning.lent
        return loaning

    # ------------------------------------------------------------------ pods

    def is_inference(self, pod: Pod) -> bool:
        return pod.node_selector.get(self.config.pool_label) == self.config.inference_pool

    def is_training(self, pod: Pod) -> bool:
        return not self.is_inference(pod)

    def observe(self, pod: Pod) -> None:
        """Every pod event: the toleration of its side (before the scheduler sees it), and an
        inference pod's wait from its first pending sight to its bind."""
        inference = self.is_inference(pod)
        toleration = self._inference_toleration if inference else self._lent_toleration
        elastic = not inference and self.elastic(pod)
        if not inference and not elastic and self.restarted and pod.job_key in self.restarted:
            pod.tolerations = without(pod.tolerations, toleration)  # not lent to again
        elif inference or elastic or self.config.lend_to == "all":
            if toleration not in pod.tolerations:
                pod.tolerations = (*pod.tolerations, toleration)
        if not inference:
            return
        if pod.phase in (PodPhase.DELETED, PodPhase.EVICTED, PodPhase.FAILED):
            self._waiting_since.pop(pod.key, None)
        elif not pod.bound_node:
            self._waiting_since.setdefault(pod.key, self.clock())
        elif pod.key in self._waiting_since:
            wait = self.clock() - self._waiting_since.pop(pod.key)
            self.waits.append(wait)
            self.metrics.loaning_inference_wait.observe(wait)

    def elastic(self, pod: Pod) -> bool:
        """A pod of an elastic job (``lendTo: elastic`` lends only to those)."""
        run = self.runs.runs.get(pod.owner)
        return run is not None and run.job.elastic is not None

    def above_minimum(self, pod: Pod) -> bool:
        """A running worker of an elastic job with more running workers than its minimum:
        taking it costs the job none of its work."""
        run = self.runs.runs.get(pod.owner)
        job = self.scheduler.jobs.get(pod.owner)
        if run is None or run.job.elastic is None or run.job.phase in FINAL_JOB_PHASES:
            return False
        if job is None or pod.phase != PodPhase.RUNNING:
            return False
        running = sum(1 for p in job.bound.values() if p.phase == PodPhase.RUNNING)
        return running > run.job.elastic.min_workers

    # ------------------------------------------------------------------ idle checks

    def tick(self) -> None:
        """When due: the pool nodes' taints in line with their labels, the inference pods'
        deletion costs, and the loans of nodes idle for long enough."""
        now = self.clock()
        if now < self.due:
            return
        self.due = now + self.config.check_interval
        self.restarted &= self.scheduler.jobs.keys()
        pool = self.pool()
        state = self.scheduler.state
        for name, value in pool.items():
            if self._taint_value(name) != value:
                self._set_pool(name, value)
        inference: list[tuple[str, Pod]] = []
        for name in pool:
            inference += [
                (name, p)
                for p in state.pods_on[state.rows[name]].values()
                # berth's books, not the pod's phase: a bind held for victims to leave is
                # still Pending in the API, and its node is not idle
                if self.is_inference(p) and not p.terminating
            ]
        occupied = Counter(name for name, _ in inference)
        for name, pod in inference:
            self._deletion_cost(pod, str(occupied[name]))
        waiting = self._pending()
        for name, value in pool.items():
            if value != self.config.inference_pool or name in occupied:
                self._idle_since.pop(name, None)
                continue
            since = self._idle_since.setdefault(name, now)
            if now - since >= self.config.idle_before_lend and not waiting:
                if self._set_pool(name, self.config.lent_pool):
                    self._idle_since.pop(name, None)
                    self.lends.append((now, name))
                    self.metrics.loaning_lends.inc()
                    log.info("lent", extra={"node": name})
        self.metrics.loaning_lent_nodes.set(len(self.lent))

    # ------------------------------------------------------------------ reclaims

    def after_cycle(self) -> None:
        """Take lent nodes back while the cycle left inference pods pending."""
        pending = self._pending()
        if not pending:
            return
        state = self.scheduler.state
        pool = self.pool()
        need = np.sum([state.request_vector(p.requests) for p in pending], axis=0)
        covered = np.zeros_like(need)
        # A reclaim cut short (relabelled, not yet emptied): finish it first; its node counts.
        for name, value in pool.items():
            stray = self._training_on(name) if value == self.config.inference_pool else []
            if stray:
                log.info("reclaim resumed", extra={"node": name, "pods": len(stray)})
                self._evict(name, stray)
                covered = covered + state.allocatable[state.rows[name], : len(need)]
        lent = [name for name, value in pool.items() if value == self.config.lent_pool]
        if not lent:
            return
        on_node = {name: self._training_on(name) for name in lent}
        jobs = self.scheduler.jobs
        keys = {p.job_key for pods in on_node.values() for p in pods}
        job_pods = {k: list(jobs[k].bound.values()) if k in jobs else [] for k in keys}
        costs = reclaim_costs(
            self.config.reclaim_cost,
            on_node,
            job_pods,
            self.above_minimum,
            self.elastic,
            self.clock(),
        )
        for name in reclaim_order(costs):
            if np.all(covered >= need):
                break
            if not self._set_pool(name, self.config.inference_pool):
                continue
            covered = covered + state.allocatable[state.rows[name], : len(need)]
            self.reclaims.append((self.clock(), name, costs[name]))
            self.metrics.loaning_reclaims.inc()
            log.info("reclaimed", extra={"node": name, "cost": costs[name]})
            self._evict(name, self._with_gangs(self._training_on(name)))
        self.metrics.loaning_lent_nodes.set(len(self.lent))

    def _pending(self) -> list[Pod]:
        """Inference pods the scheduler has waiting."""
        return [
            pod
            for job in self.scheduler.waiting.values()
            for pod in job.pending
            if self.is_inference(pod)
        ]

    def _training_on(self, name: str) -> list[Pod]:
        state = self.scheduler.state
        return [
            p
            for p in state.pods_on[state.rows[name]].values()
            if not self.is_inference(p) and not p.terminating
        ]

    def _with_gangs(self, pods: list[Pod]) -> list[Pod]:
        """The node's pods, and the other bound pods of each plain (controller-less) gang
        that would run short of its minMember (as the simulator's reclaim does)."""
        chosen = {p.key: p for p in pods}
        for key in sorted({p.job_key for p in pods}):
            job = self.scheduler.jobs.get(key)
            if job is None or job.group.owned or job.group.implicit:
                continue
            left = [p for p in job.bound.values() if p.key not in chosen and not p.terminating]
            if len(left) < job.group.min_member:
                chosen.update((p.key, p) for p in left)
        return list(chosen.values())

    def _evict(self, name: str, pods: list[Pod]) -> None:
        reason = f"{LENT_NODE_TAKEN_BACK}{name} taken back for inference"
        if not self.config.relend_restarted:
            keep_off(self.scheduler, self.restarted, pods, self.elastic, self._lent_toleration)
        self.metrics.loaning_preempted.inc(self.take_off(pods, reason))

    # ------------------------------------------------------------------ writes

    def _taint_value(self, name: str) -> str | None:
        raw = self.store.raw("Node", name) or {}
        for taint in (raw.get("spec") or {}).get("taints") or []:
            if taint.get("key") == self.config.pool_label and taint.get("effect") == "NoSchedule":
                return taint.get("value")
        return None

    def _set_pool(self, name: str, pool: str) -> bool:
        """Label and taint a node as ``pool``'s in one patch, guarded by the resourceVersion
        berth last saw (a concurrent change makes it fail: the next check tries again). The
        answer is applied at once, so the next cycle sees the node's new pool."""
        raw = self.store.raw("Node", name)
        if raw is None:
            return False
        key = self.config.pool_label
        taints = [t for t in (raw.get("spec") or {}).get("taints") or [] if t.get("key") != key] + [
            {"key": key, "value": pool, "effect": "NoSchedule"}
        ]
        meta = raw.get("metadata") or {}
        body: dict[str, Any] = {
            "metadata": {"labels": {key: pool}, "resourceVersion": meta.get("resourceVersion")},
            "spec": {"taints": taints},
        }
        try:
            answer = self.store.client.request(
                "PATCH", NODE.item(None, name), body=body, content_type=MERGE_PATCH
            )
        except (ApiError, ConnectionLost) as exc:
            log.warning("node pool not written", extra={"node": name, "error": str(exc)})
            return False
        self.store.apply(Event("Node", "MODIFIED", answer))
        return True

    def _deletion_cost(self, pod: Pod, cost: str) -> None:
        """Write the pod's deletion cost when it differs (only on a controller's pods)."""
        raw = self.store.raw("Pod", pod.key) or {}
        meta = raw.get("metadata") or {}
        if not any(ref.get("controller") for ref in meta.get("ownerReferences") or []):
            return
        if (meta.get("annotations") or {}).get(DELETION_COST_ANNOTATION) == cost:
            return
        body = {"metadata": {"annotations": {DELETION_COST_ANNOTATION: cost}}}
        try:
            self.store.client.request(
                "PATCH", POD.item(pod.namespace, pod.name), body=body, content_type=MERGE_PATCH
            )
        except (ApiError, ConnectionLost) as exc:
            log.warning("deletion cost not written", extra={"pod": pod.key, "error": str(exc)})
