"""Capacity loaning in ``summary.json``: lending and reclaims, the jobs reclaims preempted,
how long inference pods waited against the stated bound, and each pool's GPU use."""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.metrics.summary import percentiles, time_weighted_fractions
from berth.sim.loaning import LoaningRecord
from berth.sim.timeseries import TimeSeries

POOLS = ("inference", "lent", "training")


def summarize_loaning(record: LoaningRecord, series: TimeSeries, end_time: float) -> dict[str, Any]:
    """The ``loaning`` part of the summary (floats rounded by the caller's summary)."""
    waits = record.inference_waits
    bound = record.config.wait_bound
    jobs = sorted({job for event in record.reclaims for job in event.jobs})
    pools: dict[str, dict[str, float | None]] = {}
    times = series.times
    for pool in POOLS:
        allocated = series.extra(f"{pool}_gpus_allocated")
        capacity = series.extra(f"{pool}_gpus_capacity")
        share = time_weighted_fractions(times, allocated[:, None], capacity[:, None], end_time)[0]
        mean = time_weighted_fractions(times, capacity[:, None], np.ones((len(times), 1)), end_time)
        pools[pool] = {
            "mean_gpus": None if np.isnan(mean[0]) else float(mean[0]),
            "gpu_allocation": None if np.isnan(share) else float(share),
        }
    lent = series.extra("lent_gpus")
    mean_lent = time_weighted_fractions(times, lent[:, None], np.ones((len(times), 1)), end_time)
    return {
        "inference_nodes": record.inference_nodes,
        "lends": len(record.lends),
        "reclaims": len(record.reclaims),
        "lent_gpus": {
            "mean": None if np.isnan(mean_lent[0]) else float(mean_lent[0]),
            "max": float(lent.max()) if len(lent) else 0.0,
        },
        "reclaim_events": [
            {
                "time": event.time,
                "node": event.node,
                "cost": event.cost,
                "gpus": event.gpus,
                "pods_preempted": event.pods_preempted,
                "gpu_hours_lost": event.gpu_hours_lost,
                "jobs": list(event.jobs),
            }
            for event in record.reclaims
        ],
        "pods_preempted": sum(event.pods_preempted for event in record.reclaims),
        "gpu_hours_lost": sum(event.gpu_hours_lost for event in record.reclaims),
        "jobs_preempted": len(jobs),
        "wait_bound": bound,
        "inference_wait": percentiles(waits),
        "inference_wait_over_bound": int(np.count_nonzero(waits > bound)),
        "inference_pending": record.inference_pending,
        "pools": pools,
    }
