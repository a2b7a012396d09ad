"""Aryl's scheduling of elastic jobs (Lyra, EuroSys'23), in two phases over GPUs.

Phase 1 serves the waiting jobs, shortest first: each takes its minimum's GPUs from the idle
GPUs and the GPUs elastic jobs hold above their minimum, when they cover it (a job that does
not fit is passed over, and shorter ones behind it still go). Phase 2 hands what is left to
the elastic jobs, running and just admitted, as a multiple-choice knapsack: from each job one
choice of 0 to (max − min) extra workers, weighing their GPUs and worth the completion time
they save, ``remaining / speed(min) − remaining / speed(min + k)`` seconds, less the resize
pause for a running job whose workers would change. Solved exactly by dynamic programming
(``berth.controllers.scaling.knapsack``).

The policy decides how many workers; where they go is the scheduler's (Aryl places them
best-fit decreasing; berth's scorers decide, binpack being the closest). An elastic job that
waits and is not served keeps its minimum as its target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.api.elastic import Throughput
from berth.controllers.scaling import knapsack


@dataclass(frozen=True, slots=True)
class ElasticJob:
    key: str
    min_workers: int
    max_workers: int
    workers: int  # running now (0 for a job that has not started)
    gpus: int  # GPUs one worker holds (whole GPUs)
    remaining: float  # one-worker seconds of work left
    throughput: Throughput
    pause: float = 0.0
    waiting: bool = False  # not started: its minimum competes in phase 1

    def choices(self) -> list[tuple[int, float]]:
        """(GPUs, seconds saved) for 0 .. max − min extra workers."""
        sizes = np.arange(self.min_workers, self.max_workers + 1)
        times = self.remaining / self.throughput.speeds(sizes)
        saved = times[0] - times
        if not self.waiting:
            saved -= np.where(sizes != self.workers, self.pause, 0.0)
        return [(extra * self.gpus, value) for extra, value in enumerate(saved.tolist())]


@dataclass(frozen=True, slots=True)
class WaitingJob:
    key: str
    gpus: int  # GPUs its minimum needs
    duration: float  # its run time at its minimum (shortest first)


def admit(waiting: list[WaitingJob], pool: int) -> tuple[set[str], int]:
    """Phase 1: the waiting jobs served shortest first out of ``pool`` GPUs, and what is left."""
    admitted = set()
    for job in sorted(waiting, key=lambda j: (j.duration, j.key)):
        if job.gpus <= pool:
            pool -= job.gpus
            admitted.add(job.key)
    return admitted, pool


def scale(jobs: list[ElasticJob], waiting: list[WaitingJob], idle_gpus: int) -> dict[str, int]:
    """Each elastic job's target workers. ``waiting`` holds every job waiting to start, rigid
    or elastic (an elastic one also in ``jobs``, marked waiting, at its minimum's GPUs)."""
    pool = idle_gpus + sum((j.workers - j.min_workers) * j.gpus for j in jobs if not j.waiting)
    admitted, pool = admit(waiting, pool)
    served = [j for j in jobs if not j.waiting or j.key in admitted]
    groups = [j.choices() for j in served]
    # Beyond every job's largest choice together, more capacity changes nothing.
    capacity = min(max(pool, 0), sum(group[-1][0] for group in groups))
    chosen = knapsack.solve(groups, capacity)
    targets = {j.key: j.min_workers for j in jobs}
    for job, extra in zip(served, chosen, strict=True):
        targets[job.key] = job.min_workers + extra
    return targets
