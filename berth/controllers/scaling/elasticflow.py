"""ElasticFlow's scaling of admitted elastic jobs (ASPLOS'23; the artifact's
``ef_sim_allocation`` and ``allocate_free_gpus``), over the GPUs elastic jobs may use: those
they hold and the idle ones.

Jobs with a deadline, earliest first, each take their minimum satisfactory share from a plan
of those GPUs (``berth.plugins.elasticflow.Plan``: the smallest number of workers that,
filling backwards from the deadline, finishes its remaining work in time); its target is the
workers that share gives it now, never below its minimum. A job that no share satisfies keeps
its minimum. Then the GPUs left go one worker at a time to the job whose next worker saves
the most seconds of its remaining run per GPU (the artifact's marginal GPU-time), until no
job can take one. Jobs without a deadline take part in the second step only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from berth.controllers.scaling.aryl import ElasticJob
from berth.plugins.elasticflow import Demand, Plan


def share_now(job: ElasticJob, plan: Plan, deadline: float, now: float) -> int | None:
    """Workers of the job's minimum satisfactory share at ``now`` (taken from ``plan``), or
    None when no share meets the deadline."""
    workers = np.arange(job.min_workers, job.max_workers + 1)
    demand = Demand(
        job.key,
        deadline,
        job.remaining,
        tuple(int(w) * job.gpus for w in workers),
        tuple(job.throughput.speeds(workers).tolist()),
    )
    taken = plan.admit(demand)
    if taken is None:
        return None
    gpus = max((size for start, end, size in taken if start <= now < end), default=0)
    return gpus // job.gpus if job.gpus else job.min_workers


def scale(
    jobs: list[ElasticJob], deadlines: Mapping[str, float], idle_gpus: int, now: float
) -> dict[str, int]:
    """Each job's target workers."""
    pool = idle_gpus + sum(j.workers * j.gpus for j in jobs if not j.waiting)
    plan = Plan(now, pool)
    targets = {j.key: j.min_workers for j in jobs}
    planned = sorted(
        (j for j in jobs if deadlines.get(j.key, math.inf) < math.inf),
        key=lambda j: (deadlines[j.key], j.key),
    )
    for job in planned:
        workers = share_now(job, plan, deadlines[job.key], now)
        if workers is not None:
            targets[job.key] = max(job.min_workers, min(workers, job.max_workers))
    left = pool - sum(targets[j.key] * j.gpus for j in jobs)
    while True:
        best, gain = None, 0.0
        for job in jobs:
            now_workers = targets[job.key]
            if now_workers >= job.max_workers or job.gpus > left:
                continue
            speed, faster = job.throughput.speeds(np.array([now_workers, now_workers + 1]))
            saved = (job.remaining / speed - job.remaining / faster) / max(job.gpus, 1)
            if saved > gain:
                best, gain = job, saved
        if best is None:
            return targets
        targets[best.key] += 1
        left -= best.gpus
