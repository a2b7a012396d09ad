"""The cluster as a scaling policy sees it, read from the Scheduler: (cpu, memory, GPU) of
nodes, of waiting pods and of one worker; and the ``edl`` and ``aryl`` rounds both backends
run on it."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from berth.api.objects import BatchJob, Pod
from berth.cluster.state import ClusterState
from berth.controllers.scaling import aryl, edl
from berth.controllers.scaling.holding import Holding
from berth.framework.job_info import JobInfo
from berth.framework.scheduler import Scheduler
from berth.resources import CPU, GPU, MEMORY


class Columns:
    """Picks (cpu, memory, GPU) out of the state's resource axis (zeros where it has none)."""

    def __init__(self, state: ClusterState) -> None:
        self.columns = [state.axis.index(CPU), state.axis.index(MEMORY), state.gpu_column]

    def __call__(self, array: np.ndarray) -> np.ndarray:
        width = array.shape[-1]
        picked = [array[..., c] if c < width else np.zeros(array.shape[:-1]) for c in self.columns]
        return np.stack(picked, axis=-1).astype(np.float64)


def request_vector(requests: Mapping[str, int]) -> np.ndarray:
    """A pod's (cpu, memory, GPU) requests."""
    return np.array(
        [requests.get(CPU, 0), requests.get(MEMORY, 0), requests.get(GPU, 0)], dtype=np.float64
    )


def worker_request(job: BatchJob) -> np.ndarray:
    """One worker's (cpu, memory, GPU): the last task's, the one an elastic job scales."""
    return request_vector(job.tasks[-1].template.requests)


@dataclass(frozen=True, slots=True)
class ElasticJob:
    """What the policies need of an elastic job that has not ended."""

    key: str
    min_workers: int
    max_workers: int
    request: np.ndarray  # one worker's (cpu, memory, GPU)

    @classmethod
    def of(cls, job: BatchJob) -> ElasticJob:
        """An elastic job (``job.elastic`` set) as the policies see it."""
        spec = job.elastic
        assert spec is not None
        return cls(job.key, spec.min_workers, spec.max_workers, worker_request(job))


def edl_targets(
    scheduler: Scheduler,
    holding: Holding,
    jobs: Iterable[ElasticJob],
    rows: np.ndarray,
    max_load: float,
    counts: Callable[[Pod], bool] = lambda pod: True,
    departing: np.ndarray | None = None,
) -> dict[str, int]:
    """EDL's new target for each job, over the nodes ``rows`` (a mask). The load is what
    those nodes' pods request plus what waits: the jobs whose first waiting pod ``counts``,
    and the pods of the elastic jobs' targets not yet made or given to the scheduler; less
    ``departing`` (cpu, memory, GPU of workers already taken off that have not left yet, as a
    simulated cut frees its room at once)."""
    state = scheduler.state
    n = state.n
    pick = Columns(state)
    waiting = np.zeros(3)
    for job in scheduler.waiting.values():
        if job.pending and len(job.asking) and counts(job.pending.first()):
            waiting += pick(job.asking[None, :])[0]
    planned = []
    for job in jobs:
        target = holding.target(job.key, job.min_workers)
        visible = holding.visible(job.key)
        if target > visible:
            waiting += (target - visible) * job.request
        # A cut not made yet (serve: a bind in flight, a refused eviction) leaves the job
        # with more workers than its target, all in the load: EDL starts from what it has.
        workers = max(target, visible)
        planned.append(edl.Job(job.key, job.min_workers, job.max_workers, workers, job.request))
    load = edl.Load(
        total=pick(state.allocatable[:n][rows]).sum(axis=0),
        requested=pick(state.requested[:n][rows]).sum(axis=0)
        + waiting
        - (0.0 if departing is None else departing),
        idle=pick(np.maximum(state.free[:n][rows], 0)),
    )
    diff = edl.scale(planned, load, max_load)
    return {job.key: job.workers + diff[job.key] for job in planned}


class ArylRound:
    """Aryl's inputs read from the Scheduler, for both backends; what differs is how a job's
    remaining work is known (the simulator integrates it, ``berth serve`` reads the trainer's
    report or estimates it). ``is_training(pod)`` excludes inference pods from phase 1;
    ``batch_job(key)`` is the Job behind a waiting job whose pods are not made yet."""

    def __init__(
        self,
        scheduler: Scheduler,
        is_training: Callable[[Pod], bool],
        batch_job: Callable[[str], BatchJob | None],
    ) -> None:
        self.scheduler = scheduler
        self.is_training = is_training
        self.batch_job = batch_job
        self._waiting: dict[str, aryl.WaitingJob | None] = {}

    def targets(
        self, jobs: Iterable[tuple[BatchJob, float | None]], rows: np.ndarray
    ) -> dict[str, int]:
        """Each elastic job's target over the nodes ``rows``: ``jobs`` pairs each live elastic
        job with its remaining one-worker seconds (None: unknown, which values no extra worker
        and puts the job last in phase 1)."""
        return aryl.scale(*self.inputs(jobs, rows))

    def inputs(
        self, jobs: Iterable[tuple[BatchJob, float | None]], rows: np.ndarray, rigid: bool = True
    ) -> tuple[list[aryl.ElasticJob], list[aryl.WaitingJob], int]:
        """The elastic jobs as aryl (and elasticflow) see them, the jobs waiting to start (the
        rigid ones only with ``rigid``: aryl's phase 1) and the idle GPUs of ``rows``."""
        state = self.scheduler.state
        free = np.zeros(0)
        if state.gpu_column < state.width:
            free = np.maximum(state.free[: state.n][rows, state.gpu_column], 0)
        idle = int(np.floor(free / 1000).sum())
        elastic, waiting, live = [], [], set()
        for batch, remaining in jobs:
            spec = batch.elastic
            assert spec is not None
            key = batch.key
            live.add(key)
            job = self.scheduler.jobs.get(key)
            bound = 0 if job is None else len(job.bound)
            started = bound >= spec.min_workers
            gpus = math.ceil(worker_request(batch)[2] / 1000)
            left = 0.0 if remaining is None else remaining
            elastic.append(
                aryl.ElasticJob(
                    key,
                    spec.min_workers,
                    spec.max_workers,
                    bound if started else 0,
                    gpus,
                    left,
                    spec.throughput,
                    spec.pause,
                    waiting=not started,
                )
            )
            if not started:
                duration = (
                    math.inf
                    if remaining is None
                    else left / spec.throughput.speed(spec.min_workers)
                )
                waiting.append(aryl.WaitingJob(key, spec.min_workers * gpus, duration))
        for key, job in self.scheduler.waiting.items() if rigid else ():
            if key in live or len(job.bound) >= job.group.min_member:
                continue
            entry = self._waiting_job(job)
            if entry is not None:
                waiting.append(entry)
        return elastic, waiting, idle

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
            if not self.is_training(pod) or pod.duration is None:
                entry = None
            else:
                gpus = math.ceil(pod.requests.get(GPU, 0) / 1000) * max(job.group.min_member, 1)
                entry = aryl.WaitingJob(key, gpus, pod.duration)
            self._waiting[key] = entry
            return entry
        batch = self.batch_job(key)
        durations = [t.template.duration for t in batch.tasks] if batch is not None else []
        if not durations or None in durations:
            return None
        state = self.scheduler.state
        request = job.min_request(state)
        gpus = request[state.gpu_column] if state.gpu_column < len(request) else 0
        return aryl.WaitingJob(key, math.ceil(gpus / 1000), max(durations))
