"""The starvation guard: whole servers freed for a wide job that elastic jobs keep out.

A scaling policy hands every idle GPU to elastic jobs above their minimum. Once they fill the
cluster, a gang that needs several whole servers waits until the GPUs it needs happen to come
free on the same servers at once, which, with elastic jobs refilling each gap within a round,
may be never. Counting GPUs (Aryl's phase 1) does not help: the GPUs a cut frees are spread
over servers and go to whatever fits first.

So when a job has waited ``starvationWait`` (``simulation.scaling``, ``berth serve
--scaling``), the oldest one that can be served this way gets whole servers: on the servers
that need the fewest elastic workers taken off to hold one more of its pods, the workers above
their jobs' minimum are taken off, until its missing pods fit. Those workers cost nothing but
the job's resize: elastic jobs keep their progress, and never go below their minimum. When
they cannot free enough servers (rigid pods hold the rest) nothing is cut. While the job is
served so, no elastic job grows, so that the freed servers stay free until it has started
(the oldest job waiting for its gang is first in the scheduler's job order; a Job awaiting
admission is admitted once its room is idle).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from berth.api.objects import BatchJob, Pod
from berth.controllers.scaling.holding import Holding
from berth.controllers.scaling.view import Columns, request_vector
from berth.framework.job_info import JobInfo
from berth.framework.scheduler import Scheduler


def slots(room: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Whole ``slot`` s that fit in each row of ``room`` (resources with no ask ignored)."""
    asked = slot > 0
    if not len(room) or not asked.any():
        return np.zeros(len(room), dtype=np.int64)
    return np.maximum(np.floor(room[:, asked] / slot[asked]).min(axis=1), 0).astype(np.int64)


def free_servers(
    free: np.ndarray,
    pod_rows: np.ndarray,
    pod_jobs: np.ndarray,
    pod_requests: np.ndarray,
    budgets: np.ndarray,
    slot: np.ndarray,
    need: int,
) -> np.ndarray | None:
    """The elastic workers to take off so that ``need`` slots fit; None when they cannot.

    ``free`` is each node's room (nodes × resources); worker i of job ``pod_jobs[i]`` holds
    ``pod_requests[i]`` on node ``pod_rows[i]``, and job j may lose at most ``budgets[j]``
    workers (those above its minimum). Nodes are taken in order of the workers a slot costs
    there (whole free nodes first), then of the slots they gain, then of their row; on each,
    its workers go largest first until it holds every slot it could, or the slots still
    missing. Returns indices into the
    worker arrays, empty when the slots fit already.
    """
    have = slots(free, slot)
    if have.sum() >= need:
        return np.zeros(0, dtype=np.intp)
    n = len(free)
    room = free.astype(np.float64).copy()
    np.add.at(room, pod_rows, pod_requests)
    gain = slots(room, slot) - have
    cost = np.bincount(pod_rows, minlength=n)
    candidates = np.flatnonzero(gain > 0)
    per_slot = cost[candidates] / gain[candidates]
    order = candidates[np.lexsort((candidates, -gain[candidates], per_slot))]
    left = budgets.astype(np.int64).copy()
    # Each node's workers, largest first (then by index), for the few nodes visited.
    by_node = np.lexsort((np.arange(len(pod_rows)), -pod_requests.sum(axis=1), pod_rows))
    starts = np.searchsorted(pod_rows[by_node], np.arange(n + 1))
    total = int(have.sum())
    victims: list[int] = []
    for row in order.tolist():
        target = have[row] + min(gain[row], need - total)
        node_room = free[row].astype(np.float64).copy()
        taken = []
        for i in by_node[starts[row] : starts[row + 1]].tolist():
            if slots(node_room[None, :], slot)[0] >= target:
                break
            job = pod_jobs[i]
            if left[job] <= 0:
                continue
            left[job] -= 1
            node_room += pod_requests[i]
            taken.append(i)
        got = int(slots(node_room[None, :], slot)[0]) - int(have[row])
        if got <= 0:
            for i in taken:
                left[pod_jobs[i]] += 1
            continue
        victims += taken
        total += got
        if total >= need:
            return np.array(sorted(victims), dtype=np.intp)
    return None


def starving_cuts(
    scheduler: Scheduler,
    elastic: Iterable[tuple[str, int]],
    rows: np.ndarray,
    wait: float,
    now: float,
    counts: Callable[[Pod], bool] = lambda pod: True,
    batch_job: Callable[[str], BatchJob | None] = lambda key: None,
    removable: Callable[[Pod], bool] = lambda pod: True,
) -> dict[str, list[Pod]] | None:
    """The elastic workers to take off, by job, so that the oldest job waiting for its gang
    since ``wait`` seconds or more that whole servers can be freed for fits; None when no
    job starves or none can be served so. While one is served, its caller grows no elastic
    job: the room freed is the starving job's until it has started (a Job awaiting admission
    has its pods made only once admitted).

    ``elastic`` pairs each live elastic job with its minimum; ``rows`` masks the nodes the
    starving jobs may use; ``counts(pod)`` says whether a waiting job whose first pod it is
    may starve (training, not inference); ``batch_job(key)`` is the Job behind a waiting job
    whose pods are not made yet; ``removable(pod)`` whether a worker may be taken off now."""
    starving = []
    for job in scheduler.waiting.values():
        if now - job.group.submit_time < wait:
            continue
        gang = _gang(job, counts, batch_job)
        if gang is not None:
            starving.append((job.group.submit_time, job.key, *gang))
    if not starving:
        return None
    state = scheduler.state
    where = np.full(state.n, -1, dtype=np.intp)
    where[np.flatnonzero(rows)] = np.arange(int(rows.sum()))
    pods: list[Pod] = []
    pod_rows, pod_jobs, budgets = [], [], []
    for key, minimum in elastic:
        job = scheduler.jobs.get(key)
        if job is None:
            continue
        alive = [p for p in job.bound.values() if not p.terminating]
        budget = len(alive) - minimum
        if budget <= 0:
            continue
        for pod in alive:
            row = where[state.rows[pod.bound_node]] if pod.bound_node in state.rows else -1
            if row >= 0 and removable(pod):
                pods.append(pod)
                pod_rows.append(row)
                pod_jobs.append(len(budgets))
        budgets.append(budget)
    requests = np.array([request_vector(p.requests) for p in pods]).reshape(len(pods), 3)
    free = np.maximum(Columns(state)(state.free[: state.n][rows]), 0)
    for _, _, need, slot in sorted(starving, key=lambda s: (s[0], s[1])):
        cut = free_servers(
            free,
            np.array(pod_rows, dtype=np.intp),
            np.array(pod_jobs, dtype=np.intp),
            requests,
            np.array(budgets, dtype=np.int64),
            slot,
            need,
        )
        if cut is None:
            continue
        out: dict[str, list[Pod]] = {}
        for i in cut.tolist():
            out.setdefault(pods[i].owner, []).append(pods[i])
        return out
    return None


def _gang(
    job: JobInfo, counts: Callable[[Pod], bool], batch_job: Callable[[str], BatchJob | None]
) -> tuple[int, np.ndarray] | None:
    """The pods a waiting job still misses to start and the (cpu, memory, GPU) slot that fits
    any of them; None for a job that may not starve (inference) or whose pods are unknown."""
    need = max(job.group.min_member, 1) - job.active
    if need <= 0:
        return None
    if job.pending:
        if len(job.pending) < need or not counts(job.pending.first()):
            return None
        return need, np.max([request_vector(p.requests) for p in job.pending], axis=0)
    batch = batch_job(job.key)
    if batch is None or not batch.tasks:
        return None
    return need, np.max([request_vector(t.template.requests) for t in batch.tasks], axis=0)


def apply_guarded(
    holding: Holding,
    targets: dict[str, int],
    minimum: dict[str, int],
    rows: np.ndarray,
    wait: float,
    now: float,
    counts: Callable[[Pod], bool],
    batch_job: Callable[[str], BatchJob | None],
) -> bool:
    """Apply a round's targets (``Holding.apply``) once the guard has spoken: when whole
    servers are freed for a job starving since ``wait`` (``starving_cuts``; its arguments as
    there), no job grows, each keeps at most what it runs less the workers chosen, which go
    first, and none goes below its minimum. True when the scheduler has new work."""
    scheduler = holding.scheduler
    cuts = None
    if wait < math.inf:
        elastic = list(minimum.items())
        cuts = starving_cuts(
            scheduler, elastic, rows, wait, now, counts, batch_job, holding.removable
        )
    work = False
    for key, target in targets.items():
        cut = [] if cuts is None else cuts.get(key, [])
        if cuts:
            target = min(target, max(_alive(scheduler, key) - len(cut), minimum[key]))
        work |= holding.apply(key, target, minimum[key], cut)
    return work


def _alive(scheduler: Scheduler, key: str) -> int:
    """The job's running workers, less those on their way out."""
    job = scheduler.jobs.get(key)
    return 0 if job is None else sum(not p.terminating for p in job.bound.values())
