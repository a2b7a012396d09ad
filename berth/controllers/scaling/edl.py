"""PaddlePaddle EDL's autoscaler: fulfillment-ordered scaling under a maximum load.

A job's fulfillment is (workers − min) / (max − min). In passes until one changes nothing,
every elastic job, least fulfilled first, may grow by one worker: when it is below its
maximum, when one worker fits on some node, and when the cluster's cpu, memory and GPU
requests with that worker stay within ``max_load`` of the totals. Then every job, most
fulfilled first, shrinks by one while any of the three is above ``max_load`` (and it is above
its minimum) or while it is above its maximum. The load counts every pod bound or waiting, so
jobs waiting for room make elastic jobs shrink for them.

Two deliberate differences from upstream's ``scaleAllJobsDryRun`` (its own test table holds,
ported in tests/controllers/test_scaling_edl.py):

- growth is checked against ``max_load`` for GPU and memory as for cpu (upstream lets GPU and
  memory grow to the full cluster and shrinks them above ``max_load``, so with ``max_load``
  below 1 a job can grow and shrink forever);
- jobs are ranked by the fulfillment they have planned so far in this computation (upstream
  ranks by the fulfillment they had before it, the same order in every pass), and a node
  fits a worker when it holds every resource of it (upstream asks cpu and memory).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.defaults import EDL_MAX_LOAD


@dataclass(slots=True)
class Load:
    """The cluster as EDL sees it, over (cpu, memory, GPU): totals, what pods bound or
    waiting request, and each node's idle room (rows: nodes)."""

    total: np.ndarray
    requested: np.ndarray
    idle: np.ndarray


@dataclass(frozen=True, slots=True)
class Job:
    key: str
    min_workers: int
    max_workers: int
    workers: int  # its target now: the workers it runs or may place
    request: np.ndarray  # one worker's (cpu, memory, GPU)

    def fulfillment(self, planned: int) -> float:
        if self.max_workers == self.min_workers:
            return 1.0
        return (planned - self.min_workers) / (self.max_workers - self.min_workers)


def step(load: Load, job: Job, diff: int, max_load: float, down: bool) -> int:
    """One job's move in a pass (+1, 0 or −1, or back to its maximum), applied to ``load``."""
    planned = job.workers + diff
    limit = load.total * max_load
    if down:
        if planned > job.max_workers:
            return _apply(load, job, -1, None)
        if (load.requested > limit).any() and planned > job.min_workers:
            return _apply(load, job, -1, None)
        return 0
    if planned >= job.max_workers:
        return _apply(load, job, job.max_workers - planned, None)
    cpu, memory, gpu = job.request
    if limit[1] - load.requested[1] <= memory:
        return 0
    fits = np.flatnonzero((load.idle >= job.request).all(axis=1))
    if not len(fits):
        return 0
    if limit[0] - load.requested[0] < cpu:
        return 0
    if gpu > 0 and limit[2] - load.requested[2] < gpu:
        return 0
    return _apply(load, job, 1, int(fits[0]))


def _apply(load: Load, job: Job, additional: int, node: int | None) -> int:
    load.requested = load.requested + job.request * additional
    if node is not None:
        load.idle[node] -= job.request * additional
    return additional


def ranked(jobs: list[Job], planned: dict[str, int]) -> list[Job]:
    """Elastic jobs (min below max), least fulfilled first; ties by the smaller GPU, cpu, then
    memory request, then by key."""
    elastic = [j for j in jobs if j.min_workers < j.max_workers]
    return sorted(
        elastic,
        key=lambda j: (
            j.fulfillment(planned.get(j.key, j.workers)),
            j.request[2],
            j.request[0],
            j.request[1],
            j.key,
        ),
    )


def scale(jobs: list[Job], load: Load, max_load: float = EDL_MAX_LOAD) -> dict[str, int]:
    """Each job's change of workers. Terminates: a job grows only while every resource stays
    within ``max_load`` and shrinks only while one is above it or it is above its maximum,
    so once the load is within bounds nothing shrinks, and growth stops at the maxima."""
    diff = {job.key: 0 for job in jobs}
    while True:
        changed = False
        order = ranked(jobs, {j.key: j.workers + diff[j.key] for j in jobs})
        for job in order:
            move = step(load, job, diff[job.key], max_load, down=False)
            diff[job.key] += move
            changed |= move != 0
        for job in reversed(order):
            move = step(load, job, diff[job.key], max_load, down=True)
            diff[job.key] += move
            changed |= move != 0
        if not changed:
            return diff
