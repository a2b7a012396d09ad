"""Elastic jobs under a scaling policy in the simulator (``simulation.scaling``; the policies
are in ``berth.controllers.scaling``).

Every ``interval`` seconds, when what training sees of the cluster changed since the last
round, the policy sets a target of workers for each elastic job, and ``Holding`` applies it:
pods beyond a target are held back from the scheduler, running workers beyond it are taken
off their nodes (counted as ``scaled_in``). A job that has not reached its minimum is given
its minimum's pods at once: a target is never below the minimum, so the gang never waits for
a round.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from berth.api.deadline import deadline_of
from berth.api.objects import BatchJob, Pod
from berth.controllers.scaling import aryl, elasticflow
from berth.controllers.scaling.config import ScalingConfig
from berth.controllers.scaling.holding import Holding
from berth.controllers.scaling.view import ElasticJob, edl_targets, worker_request
from berth.framework.job_info import JobInfo
from berth.framework.scheduler import Scheduler
from berth.resources import GPU
from berth.sim.agent import Clock, NodeAgent
from berth.sim.elastic import ElasticProgress, JobProgress
from berth.sim.events import Ev, EventQueue

if TYPE_CHECKING:
    from berth.sim.loaning import Loaning


class Scaler:
    """Runs a scaling policy over the elastic jobs of a simulation. ``submit(pod)`` hands a
    pod that was held back to the scheduler; ``request_session`` asks for a cycle."""

    def __init__(
        self,
        config: ScalingConfig,
        scheduler: Scheduler,
        agent: NodeAgent,
        elastic: ElasticProgress,
        queue: EventQueue,
        clock: Clock,
        submit: Callable[[Pod], None],
        request_session: Callable[[], None],
        loaning: Loaning | None = None,
        batch_jobs: Sequence[BatchJob] = (),
    ) -> None:
        self.config = config
        self.scheduler = scheduler
        self.elastic = elastic
        self.queue = queue
        self.clock = clock
        self.request_session = request_session
        self.loaning = loaning
        self.batch_jobs = {job.key: job for job in batch_jobs}
        self.holding = Holding(
            config.policy,
            scheduler,
            submit,
            scheduler.withdraw,
            agent.take_off,
            lambda: clock.now,
            (lambda: loaning.lent) if loaning is not None else tuple,
        )
        #: Elastic jobs the scheduler knows (their PodGroup arrived) that have not ended.
        self.live: dict[str, JobProgress] = {}
        self._seen: tuple | None = None
        self._waiting: dict[str, aryl.WaitingJob | None] = {}
        self._gpus: dict[str, int] = {}  # whole GPUs of one worker, by elastic job
        queue.push(0.0, Ev.TICK, self._tick)

    # ------------------------------------------------------------------ pods

    def holds(self, pod: Pod) -> bool:
        """Whether an arriving pod is held back (``Holding.holds``)."""
        progress = self.elastic.jobs.get(pod.owner)
        if progress is None or progress.done:
            return False
        self.live[pod.owner] = progress
        return self.holding.holds(pod, progress.spec.min_workers)

    def forget(self, pod: Pod) -> bool:
        return self.holding.forget(pod)

    def held_reason(self, pod: Pod) -> str | None:
        return self.holding.held_reason(pod)

    # ------------------------------------------------------------------ rounds

    def _tick(self) -> None:
        state = self.scheduler.state
        # What training sees: requests on the nodes it may use (inference pods coming and
        # going on their own pool change nothing for it), jobs waiting, nodes changed.
        rows = self._rows()
        seen = (
            tuple(state.requested[: state.n][rows].sum(axis=0).tolist()),
            len(self.scheduler.waiting),
            len(self.live),
            state.structure_epoch,
        )
        if seen != self._seen:
            self._seen = seen
            self.rescale(rows)
        self.queue.push(self.clock.now + self.config.interval, Ev.TICK, self._tick)

    def rescale(self, rows: np.ndarray) -> None:
        """One round over the nodes training may use (``rows``): the policy's targets,
        applied."""
        live = self.live
        elastic = self.elastic.jobs
        for key in self.scheduler.waiting:
            if key not in live and key in elastic and not elastic[key].done:
                live[key] = elastic[key]
        for key in [k for k, progress in live.items() if progress.done]:
            del live[key]
            self.holding.drop(key)
            self._gpus.pop(key, None)
        if not live:
            return
        self.holding.record.rounds += 1
        if self.config.policy == "edl":
            jobs = [ElasticJob.of(progress.job) for progress in live.values()]
            targets = edl_targets(
                self.scheduler,
                self.holding,
                jobs,
                rows,
                self.config.max_load_desired,
                self._is_training,
            )
        elif self.config.policy == "elasticflow":
            jobs, _, idle = self._elastic_jobs(live, rows, rigid=False)
            deadlines = {}
            for key, progress in live.items():
                found = deadline_of(progress.job.annotations)
                if found is not None:
                    deadlines[key] = found
            targets = elasticflow.scale(jobs, deadlines, idle, self.clock.now)
        else:
            targets = aryl.scale(*self._elastic_jobs(live, rows))
        for key, target in targets.items():
            if self.holding.apply(key, target, live[key].spec.min_workers):
                self.request_session()

    def _rows(self) -> np.ndarray:
        """Rows of the nodes training may use: schedulable, and not the inference pool's
        unless lent."""
        state = self.scheduler.state
        rows = state.schedulable[: state.n].copy()
        if self.loaning is not None:
            rows &= self.loaning.training_rows(state.n)
        return rows

    def _is_training(self, pod: Pod) -> bool:
        return self.loaning is None or not self.loaning.is_inference(pod)

    def _elastic_jobs(
        self, live: dict[str, JobProgress], rows: np.ndarray, rigid: bool = True
    ) -> tuple[list[aryl.ElasticJob], list[aryl.WaitingJob], int]:
        """The elastic jobs as aryl and elasticflow see them, the jobs waiting to start (the
        rigid ones only with ``rigid``; aryl's phase 1) and the idle GPUs of ``rows``."""
        state = self.scheduler.state
        now = self.clock.now
        free = np.zeros(0)
        if state.gpu_column < state.width:
            free = np.maximum(state.free[: state.n][rows, state.gpu_column], 0)
        idle = int(np.floor(free / 1000).sum())
        jobs, waiting = [], []
        for key, progress in live.items():
            spec = progress.spec
            job = self.scheduler.jobs.get(key)
            bound = 0 if job is None else len(job.bound)
            started = bound >= spec.min_workers
            gpus = self._gpus.get(key)
            if gpus is None:
                gpus = self._gpus[key] = math.ceil(worker_request(progress.job)[2] / 1000)
            remaining = self.elastic.remaining(key, now)
            jobs.append(
                aryl.ElasticJob(
                    key,
                    spec.min_workers,
                    spec.max_workers,
                    bound if started else 0,
                    gpus,
                    remaining,
                    spec.throughput,
                    spec.pause,
                    waiting=not started,
                )
            )
            if not started:
                duration = remaining / spec.throughput.speed(spec.min_workers)
                waiting.append(aryl.WaitingJob(key, spec.min_workers * gpus, duration))
        for key, job in self.scheduler.waiting.items() if rigid else ():
            if key in live or len(job.bound) >= job.group.min_member:
                continue
            entry = self._waiting_job(job)
            if entry is not None:
                waiting.append(entry)
        return jobs, waiting, idle

    def _waiting_job(self, job: JobInfo) -> aryl.WaitingJob | None:
        """A waiting rigid training job as phase 1 sees it: the GPUs of its minimum and its
        run time (a Job's from its task templates while the Job controller has made no pods
        yet). None for inference and for jobs without a run time. Kept per job once its pods
        are known, since a backlog is asked about every round."""
        key = job.key
        if key in self._waiting:
            return self._waiting[key]
        if job.pending:
            pod = job.pending.first()
            if not self._is_training(pod) or pod.duration is None:
                entry = None
            else:
                gpus = math.ceil(pod.requests.get(GPU, 0) / 1000) * max(job.group.min_member, 1)
                entry = aryl.WaitingJob(key, gpus, pod.duration)
            self._waiting[key] = entry
            return entry
        batch = self.batch_jobs.get(key)
        durations = [t.template.duration for t in batch.tasks] if batch is not None else []
        if not durations or None in durations:
            return None
        state = self.scheduler.state
        request = job.min_request(state)
        gpus = request[state.gpu_column] if state.gpu_column < len(request) else 0
        return aryl.WaitingJob(key, math.ceil(gpus / 1000), max(durations))

    def summary(self) -> dict[str, int | str]:
        return self.holding.record.summary(self.holding.held_count())
