"""Elastic jobs under a scaling policy in ``berth serve --scaling edl|aryl``.

The simulator's rules (``berth.sim.scaling``), against the API: every ``interval`` seconds, when
what the policy sees has changed, the policy's round sets a target of workers for each elastic
job the
Job controllers run (Volcano Jobs; with ``--kubeflow``, PyTorchJobs too, whose targets
``berth.k8s.kubeflow`` also writes into their Worker replicas), and ``Holding`` applies it.
Workers beyond a target stay Pending in the API, out of the scheduler's sight, and their
PodScheduled condition says why; running workers beyond it are evicted through the Eviction
API (a PodDisruptionBudget may refuse, and the worker stays until the next round); the Job
controller replaces an evicted worker, and the replacement is held. An evicted worker still
shutting down (its grace period, a deletionTimestamp) is load on its node but no longer one of
the job's workers, so no round cuts it twice; a worker whose bind is in flight is not evicted.

``aryl`` values each extra worker by the completion time it saves: each job's remaining work
comes from its trainer's report or an estimate (``berth.k8s.remaining``).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from berth.api.objects import FINAL_JOB_PHASES, BatchJob, Pod
from berth.controllers.scaling.config import ScalingConfig
from berth.controllers.scaling.holding import Holding
from berth.controllers.scaling.starvation import apply_guarded
from berth.controllers.scaling.view import ArylRound, ElasticJob, edl_targets, request_vector
from berth.defaults import SERVE_SCALING_POLICIES
from berth.framework.scheduler import Scheduler
from berth.k8s.books import PodBooks
from berth.k8s.cache import KubeStore
from berth.k8s.conditions import SchedulingConditions
from berth.k8s.metrics import Metrics
from berth.k8s.remaining import RemainingWork


def unsupported(policy: str) -> str | None:
    """Why ``berth serve`` cannot run a scaling policy (None: it can)."""
    if policy in SERVE_SCALING_POLICIES:
        return None
    return (
        f"scaling policy {policy!r}: berth serve runs {', '.join(SERVE_SCALING_POLICIES)} "
        "(elasticflow runs only in the simulator)"
    )


class RunsOwner(Protocol):
    """What the policy reads of the Job controllers: each job's run, by key."""

    @property
    def runs(self) -> Mapping[str, Any]: ...


class JobRuns:
    """The runs of several Job controllers as one (Volcano's Jobs, and with ``--kubeflow``
    the PyTorchJobs): a job is found by its key in the first that has it."""

    def __init__(self, *owners: RunsOwner | None) -> None:
        self.runs: Mapping[str, Any] = ChainMap(*(o.runs for o in owners if o is not None))


class ServeScaling:
    """``take_off(pods, reason)`` evicts running workers through the API and returns how many
    it evicted; ``removable(pod)`` is False while a pod's bind is in flight."""

    def __init__(
        self,
        config: ScalingConfig,
        scheduler: Scheduler,
        books: PodBooks,
        controller: RunsOwner,
        take_off: Callable[[list[Pod], str], int],
        clock: Callable[[], float],
        store: KubeStore,
        removable: Callable[[Pod], bool] = lambda pod: True,
    ) -> None:
        why = unsupported(config.policy)
        if why is not None:
            raise ValueError(why)
        self.config = config
        self.scheduler = scheduler
        self.controller = controller
        self.clock = clock
        self.holding = Holding(
            config.policy,
            scheduler,
            books.submit,
            books.withdraw,
            take_off,
            clock,
            removable=removable,
        )
        self.due = 0.0  # when the next round is due
        #: A pod was held since the held pods' conditions were last written.
        self.newly_held = False
        self._seen: tuple | None = None
        self.remaining = RemainingWork(store, scheduler)
        #: Under capacity loaning: the nodes training may use of those given, and whether a
        #: waiting pod is training's (inference pods are no load for the policy).
        self.training_rows: Callable[[np.ndarray], np.ndarray] = lambda rows: rows
        self.is_training: Callable[[Pod], bool] = lambda pod: True
        #: Seconds before the starvation guard serves a waiting gang (inf: never); capacity
        #: loaning turns it on by default.
        self.wait = config.wait_with(loaning=False)
        self.aryl = ArylRound(scheduler, lambda pod: self.is_training(pod), self._batch_job)

    # ------------------------------------------------------------------ pods

    def holds(self, pod: Pod) -> bool:
        """Whether a pending pod stays out of the scheduler's sight (``Holding.holds``)."""
        job = self._elastic(pod.owner)
        if job is None:
            self.holding.forget(pod)  # its job ended: the scheduler may have it
            return False
        was_held = self.holding.is_held(pod)
        if not self.holding.holds(pod, job.min_workers):
            return False
        self.newly_held |= not was_held
        return True

    def forget(self, pod: Pod) -> None:
        """A pod that ended, or that was bound by someone else while held."""
        self.holding.forget(pod)

    def held(self) -> Iterator[tuple[Pod, str]]:
        """Every pod held back, with why (for its PodScheduled condition)."""
        for key, pods in self.holding.held.items():
            reason = self.holding.reason(key)
            for pod in pods:
                yield pod, reason

    def _elastic(self, key: str) -> ElasticJob | None:
        """The elastic job ``key`` while it runs."""
        run = self.controller.runs.get(key)
        if run is None or run.job.elastic is None or run.job.phase in FINAL_JOB_PHASES:
            return None
        return ElasticJob.of(run.job)

    # ------------------------------------------------------------------ rounds

    def serve(self, conditions: SchedulingConditions, metrics: Metrics) -> None:
        """The round when due; the held pods' conditions when a round ran or a pod was newly
        held; the metrics, whatever happened."""
        record = self.holding.record
        rounds, removed = record.rounds, record.workers_removed
        try:
            if self.clock() >= self.due:
                self.tick()
            elif not self.newly_held:
                return
            self.newly_held = False
            conditions.write(self.held())
        finally:
            metrics.scaling_rounds.inc(record.rounds - rounds)
            metrics.scaling_scaled_in.inc(record.workers_removed - removed)
            metrics.scaling_held.set(self.holding.held_count())
            if self.config.policy == "aryl":
                for source, count in self.remaining.counts().items():
                    metrics.aryl_jobs.labels(source).set(count)

    def tick(self) -> None:
        """A round, if the cluster changed since the last; the next is due ``interval``
        seconds on."""
        self.due = self.clock() + self.config.interval
        jobs = [
            job
            for job in map(self._elastic, list(self.controller.runs))
            if job is not None and job.key in self.scheduler.jobs
        ]
        live = {job.key for job in jobs}
        if self.config.policy == "aryl":
            self.remaining.observe([self.controller.runs[key].job for key in live], self.clock())
        for key in [k for k in self.holding.targets if k not in live]:
            self.holding.drop(key)
        for job in jobs:
            if job.key not in self.holding.targets:
                # A job met for the first time keeps what it runs (after a restart, or a
                # leader change, that may be more than its minimum).
                visible = self.holding.visible(job.key)
                self.holding.targets[job.key] = min(max(visible, job.min_workers), job.max_workers)
        state = self.scheduler.state
        rows = self.training_rows(state.schedulable[: state.n].copy())
        seen = (
            tuple(state.requested[: state.n][rows].sum(axis=0).tolist()),
            len(self.scheduler.waiting),
            tuple(sorted(live)),
            state.structure_epoch,
            # the workers each job has (a worker starting to leave changes nothing above)
            tuple(self.holding.visible(job.key) for job in jobs),
            # aryl: a trainer's new report of its progress
            tuple(self.remaining.reported(job.key) for job in jobs)
            if self.config.policy == "aryl"
            else (),
        )
        if seen == self._seen or not jobs:
            self._seen = seen
            return
        self.holding.record.rounds += 1
        if self.config.policy == "aryl":
            batches = [self.controller.runs[job.key].job for job in jobs]
            targets = self.aryl.targets([(b, self.remaining.remaining(b)) for b in batches], rows)
        else:
            targets = edl_targets(
                self.scheduler,
                self.holding,
                jobs,
                rows,
                self.config.max_load_desired,
                self.is_training,
                departing=self._departing(jobs, rows),
            )
        minimum = {job.key: job.min_workers for job in jobs}
        args = (rows, self.wait, self.clock(), self.is_training, self._batch_job)
        apply_guarded(self.holding, targets, minimum, *args)
        # A round is not run again for the same cluster only when it went through and every
        # cut was made: a write that failed, a bind still in flight or an eviction a budget
        # refused leaves the next round to try again.
        if all(self.holding.visible(k) <= t for k, t in self.holding.targets.items()):
            self._seen = seen

    def _batch_job(self, key: str) -> BatchJob | None:
        run = self.controller.runs.get(key)
        return None if run is None else run.job

    def _departing(self, jobs: list[ElasticJob], rows: np.ndarray) -> np.ndarray:
        """(cpu, memory, GPU) of the jobs' workers on the nodes ``rows`` that are being
        deleted: still on their nodes, but as good as gone for the policy."""
        state = self.scheduler.state
        total = np.zeros(3)
        for job in jobs:
            for pod in self.scheduler.jobs[job.key].bound.values():
                row = state.rows.get(pod.bound_node)
                if pod.terminating and row is not None and rows[row]:
                    total += request_vector(pod.requests)
        return total
