"""The cluster as a scaling policy sees it, read from the Scheduler: (cpu, memory, GPU) of
nodes, of waiting pods and of one worker; and the ``edl`` round both backends run on it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from berth.api.objects import BatchJob, Pod
from berth.cluster.state import ClusterState
from berth.controllers.scaling import edl
from berth.controllers.scaling.holding import Holding
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
