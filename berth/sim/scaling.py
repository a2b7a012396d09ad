"""Elastic jobs under a scaling policy (``simulation.scaling``; the policies are in
``berth.controllers.scaling``).

Every ``interval`` seconds, when the cluster changed since the last round, the policy sets a
target of workers for each elastic job. A job's pods beyond its target (bound, or waiting in
the scheduler) are held back here, out of the scheduler's sight, and given to it when the
target rises; when it falls, the job's waiting pods beyond it are held back and, if that is
not enough, running workers are taken off their nodes (those on lent nodes first, then the
latest to start). The Job controller replaces a worker taken away, and the replacement is
held. A job that has not reached its minimum is given its minimum's pods at once: a target
is never below the minimum, so the gang never waits for a round.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from berth.api.objects import BatchJob, Pod
from berth.controllers.scaling import aryl, edl
from berth.framework.scheduler import Scheduler
from berth.framework.session import JobInfo
from berth.resources import CPU, GPU, MEMORY
from berth.sim.agent import Clock, NodeAgent
from berth.sim.elastic import ElasticProgress, JobProgress
from berth.sim.events import Ev, EventQueue
from berth.sim.scaling_config import ScalingConfig

if TYPE_CHECKING:
    from berth.sim.loaning import Loaning

#: How the reason of a worker taken away by a scaling policy begins (summary.json counts them).
SCALED_IN = "scaled in by "


@dataclass(slots=True)
class ScalingRecord:
    """What the policy did in a run, for summary.json."""

    policy: str
    rounds: int = 0  # rounds that ran the policy (the cluster had changed)
    grown: int = 0  # target raises
    shrunk: int = 0  # target cuts
    workers_removed: int = 0  # running workers taken away to meet a cut

    def summary(self, held: int) -> dict[str, int | str]:
        """``held``: pods held back at the end."""
        return {
            "policy": self.policy,
            "rounds": self.rounds,
            "targets_raised": self.grown,
            "targets_cut": self.shrunk,
            "workers_removed": self.workers_removed,
            "pods_held_at_end": held,
        }


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
        self.agent = agent
        self.elastic = elastic
        self.queue = queue
        self.clock = clock
        self.submit = submit
        self.request_session = request_session
        self.loaning = loaning
        self.batch_jobs = {job.key: job for job in batch_jobs}
        self.targets: dict[str, int] = {}  # elastic job key → target workers
        #: Elastic jobs the scheduler knows (their PodGroup arrived) that have not ended.
        self.live: dict[str, JobProgress] = {}
        self.held: dict[str, list[Pod]] = {}  # elastic job key → pods held back, oldest first
        self.record = ScalingRecord(config.policy)
        self._seen: tuple | None = None
        self._waiting: dict[str, aryl.WaitingJob | None] = {}
        self._gpus: dict[str, int] = {}  # whole GPUs of one worker, by elastic job
        state = scheduler.state
        self._columns = [state.axis.index(CPU), state.axis.index(MEMORY), state.gpu_column]
        queue.push(0.0, Ev.TICK, self._tick)

    # ------------------------------------------------------------------ pods

    def holds(self, pod: Pod) -> bool:
        """Whether an arriving pod is held back: its elastic job has as many pods bound or
        waiting in the scheduler as its target."""
        progress = self.elastic.jobs.get(pod.owner)
        if progress is None or progress.done:
            return False
        key = pod.owner
        self.live[key] = progress
        if self._visible(key) < self.target(key, progress):
            return False
        self.held.setdefault(key, []).append(pod)
        return True

    def forget(self, pod: Pod) -> bool:
        """A pending pod deleted by its controller: True if it was held back here (the
        scheduler never had it)."""
        held = self.held.get(pod.owner)
        if held is None or all(p is not pod for p in held):
            return False
        held[:] = [p for p in held if p is not pod]
        return True

    def held_reason(self, pod: Pod) -> str | None:
        held = self.held.get(pod.owner)
        if held is None or all(p is not pod for p in held):
            return None
        target = self.targets.get(pod.owner, 0)
        return f"held back by the {self.config.policy} scaling policy (target {target} workers)"

    def target(self, key: str, progress: JobProgress) -> int:
        return self.targets.get(key, progress.spec.min_workers)

    def _visible(self, key: str) -> int:
        job = self.scheduler.jobs.get(key)
        return 0 if job is None else len(job.bound) + len(job.pending)

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
            self._drop(key)
        if not live:
            return
        self.record.rounds += 1
        if self.config.policy == "edl":
            targets = self._edl(live, rows)
        else:
            targets = self._aryl(live, rows)
        for key, target in targets.items():
            self._apply(key, target)

    def _drop(self, key: str) -> None:
        """A job that ended: nothing of it is held any more (its controller deleted them)."""
        self.targets.pop(key, None)
        self.held.pop(key, None)
        self._gpus.pop(key, None)

    def _rows(self) -> np.ndarray:
        """Rows of the nodes training may use: schedulable, and not the inference pool's
        unless lent."""
        state = self.scheduler.state
        rows = state.schedulable[: state.n].copy()
        if self.loaning is not None:
            rows &= self.loaning.training_rows(state.n)
        return rows

    def _by_column(self, array: np.ndarray) -> np.ndarray:
        """(cpu, memory, GPU) columns of a rows × resources array (zeros where absent)."""
        width = array.shape[-1]
        picked = [array[..., c] if c < width else np.zeros(array.shape[:-1]) for c in self._columns]
        return np.stack(picked, axis=-1).astype(np.float64)

    def _worker_request(self, progress: JobProgress) -> np.ndarray:
        requests = progress.job.tasks[-1].template.requests
        return np.array(
            [requests.get(CPU, 0), requests.get(MEMORY, 0), requests.get(GPU, 0)], dtype=np.float64
        )

    def _is_training(self, pod: Pod) -> bool:
        return self.loaning is None or not self.loaning.is_inference(pod)

    def _edl(self, live: dict[str, JobProgress], rows: np.ndarray) -> dict[str, int]:
        state = self.scheduler.state
        n = state.n
        asking = [
            job.asking
            for job in self.scheduler.waiting.values()
            if job.pending and len(job.asking) and self._is_training(job.pending[0])
        ]
        waiting = np.zeros(3)
        for vector in asking:
            waiting += self._by_column(vector[None, :])[0]
        # EDL's jobs have the pods of their targets, bound or pending; here the ones not yet
        # made or given to the scheduler count as well.
        for key, progress in live.items():
            missing = self.target(key, progress) - self._visible(key)
            if missing > 0:
                waiting += missing * self._worker_request(progress)
        load = edl.Load(
            total=self._by_column(state.allocatable[:n][rows]).sum(axis=0),
            requested=self._by_column(state.requested[:n][rows]).sum(axis=0) + waiting,
            idle=self._by_column(np.maximum(state.free[:n][rows], 0)),
        )
        jobs = [
            edl.Job(
                key,
                progress.spec.min_workers,
                progress.spec.max_workers,
                self.target(key, progress),
                self._worker_request(progress),
            )
            for key, progress in live.items()
        ]
        diff = edl.scale(jobs, load, self.config.max_load_desired)
        return {job.key: job.workers + diff[job.key] for job in jobs}

    def _aryl(self, live: dict[str, JobProgress], rows: np.ndarray) -> dict[str, int]:
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
                gpus = self._gpus[key] = math.ceil(self._worker_request(progress)[2] / 1000)
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
        for key, job in self.scheduler.waiting.items():
            if key in live or len(job.bound) >= job.group.min_member:
                continue
            entry = self._waiting_job(job)
            if entry is not None:
                waiting.append(entry)
        return aryl.scale(jobs, waiting, idle)

    def _waiting_job(self, job: JobInfo) -> aryl.WaitingJob | None:
        """A waiting rigid training job as phase 1 sees it: the GPUs of its minimum and its
        run time (a Job's from its task templates while the Job controller has made no pods
        yet). None for inference and for jobs without a run time. Kept per job once its pods
        are known, since a backlog is asked about every round."""
        key = job.key
        if key in self._waiting:
            return self._waiting[key]
        if job.pending:
            pod = job.pending[0]
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

    # ------------------------------------------------------------------ targets

    def _apply(self, key: str, target: int) -> None:
        progress = self.elastic.jobs[key]
        before = self.target(key, progress)
        if target > before:
            self.record.grown += 1
        elif target < before:
            self.record.shrunk += 1
        self.targets[key] = target
        job = self.scheduler.jobs.get(key)
        if job is None:
            return
        visible = len(job.bound) + len(job.pending)
        if visible == target:
            return
        held = self.held.setdefault(key, [])
        if target > visible and held:
            released, held[:] = held[: target - visible], held[target - visible :]
            for pod in released:
                self.submit(pod)
            self.request_session()
            return
        excess = visible - target
        if excess <= 0:
            return
        for pod in list(reversed(job.pending))[:excess]:
            self.scheduler.withdraw(pod)
            held.insert(0, pod)
            excess -= 1
        if excess > 0:
            self._remove(job.bound.values(), excess, target)

    def _remove(self, bound, count: int, target: int) -> None:
        """Take ``count`` running workers away: those on lent nodes first, then the latest
        to start, then the last by name (the highest index)."""
        lent = self.loaning.lent if self.loaning is not None else set()
        victims = sorted(
            bound,
            key=lambda p: (p.bound_node in lent, p.start_time or self.clock.now, p.name),
            reverse=True,
        )[:count]
        reason = f"{SCALED_IN}the {self.config.policy} scaling policy to {target} workers"
        self.agent.take_off(victims, reason)
        self.record.workers_removed += len(victims)
        self.request_session()

    def summary(self) -> dict[str, int | str]:
        return self.record.summary(sum(len(pods) for pods in self.held.values()))
