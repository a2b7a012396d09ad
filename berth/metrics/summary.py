"""The headline numbers of a simulation run, as written to ``summary.json``.

Every float is rounded to three decimals before it leaves this module so that two runs with the
same seed produce byte-identical files; only ``wall_seconds`` is expected to differ.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any

import numpy as np

from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.controllers.scaling.holding import SCALED_IN
from berth.resources import GPU
from berth.sim.loaning import LENT_NODE_TAKEN_BACK
from berth.sim.timeseries import TimeSeries

Stats = dict[str, float | int | None]


def percentiles(values: np.ndarray) -> Stats:
    """Mean, p50/p95/p99 (linear interpolation), max and count; ``None`` stats when empty."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return {"mean": None, "p50": None, "p95": None, "p99": None, "max": None, "count": 0}
    p50, p95, p99 = np.percentile(data, [50, 95, 99])
    return {
        "mean": float(data.mean()),
        "p50": float(p50),
        "p95": float(p95),
        "p99": float(p99),
        "max": float(data.max()),
        "count": int(data.size),
    }


def time_weighted_fractions(
    times: np.ndarray, part: np.ndarray, whole: np.ndarray, end_time: float
) -> np.ndarray:
    """Mean of ``part / whole`` per column, each sample weighted by how long it held.

    A sample holds until the next one, the last until ``end_time``. Samples where ``whole`` is 0
    (no capacity yet) carry no weight rather than counting as 0%. A column whose capacity is
    always 0 comes out as NaN. When every weight is zero (a single sample at the very end) the
    samples count equally, so a run that sampled once still reports something.
    """
    if len(times) == 0:
        return np.full(part.shape[1], np.nan)
    ends = np.append(times[1:], max(end_time, float(times[-1])))
    durations = ends - times
    has_capacity = whole > 0
    ratio = np.divide(part, whole, out=np.zeros_like(part, dtype=np.float64), where=has_capacity)
    weights = durations[:, None] * has_capacity
    unweighted = weights.sum(axis=0) == 0
    weights[:, unweighted] = has_capacity[:, unweighted]
    weight_sum = weights.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        fractions: np.ndarray = (ratio * weights).sum(axis=0) / weight_sum
    return fractions


def _pod_counts(pods: list[Pod]) -> dict[str, int]:
    phases = Counter(pod.phase for pod in pods)  # one pass: a whole trace holds millions

    def count(*wanted: PodPhase) -> int:
        return sum(phases[phase] for phase in wanted)

    return {
        "submitted": len(pods),
        "completed": count(PodPhase.SUCCEEDED),
        "failed": count(PodPhase.FAILED),
        "evicted": count(PodPhase.EVICTED),
        "deleted": count(PodPhase.DELETED),
        "running": count(PodPhase.RUNNING, PodPhase.BOUND),
        "pending": count(PodPhase.PENDING),
    }


#: How the preempt and reclaim actions (and capacity loaning) begin the reasons they give,
#: and the cause each names. Counting by cause reads these prefixes because a reason is all
#: the simulator keeps of an eviction; anything else (a failed node, a reason missing) is
#: counted as "other".
_EVICTION_CAUSES = (
    ("preempted by ", "preempted"),
    ("reclaimed by ", "reclaimed"),
    (LENT_NODE_TAKEN_BACK, "loaning"),
    (SCALED_IN, "scaled_in"),
)


def eviction_cause(reason: str) -> str:
    """ "preempted", "reclaimed", "loaning" (a lent node taken back for inference),
    "scaled_in" (a worker taken away by a scaling policy) or "other", from an eviction's
    reason."""
    for prefix, cause in _EVICTION_CAUSES:
        if reason.startswith(prefix):
            return cause
    return "other"


def _eviction_counts(pods: list[Pod], reasons: Mapping[str, str]) -> dict[str, int]:
    counts = {cause: 0 for _, cause in _EVICTION_CAUSES} | {"other": 0}
    for pod in pods:
        if pod.phase == PodPhase.EVICTED:
            counts[eviction_cause(reasons.get(pod.ref, ""))] += 1
    return counts | {"total": sum(counts.values())}


def _job_counts(groups: list[PodGroup]) -> dict[str, int]:
    def count(*phases: GroupPhase) -> int:
        return sum(1 for group in groups if group.phase in phases)

    return {
        "submitted": len(groups),
        "completed": count(GroupPhase.COMPLETED),
        "failed": count(GroupPhase.FAILED),
        "running": count(GroupPhase.RUNNING),
        "pending": count(GroupPhase.PENDING, GroupPhase.INQUEUE),
    }


def _delays(pairs: Iterable[tuple[float | None, float]]) -> np.ndarray:
    """``later - earlier`` for the pairs whose later time is known, gathered straight into an
    array: as a list of floats they would add about 100 bytes per pod to the peak of a run's
    end."""
    known = (late - early for late, early in pairs if late is not None)
    return np.fromiter(known, dtype=np.float64)


def _makespan(groups: list[PodGroup]) -> float:
    ends = [
        g.end_time for g in groups if g.phase == GroupPhase.COMPLETED and g.end_time is not None
    ]
    if not ends:
        return 0.0
    return max(ends) - min(g.submit_time for g in groups)


def _rounded(value: Any) -> Any:
    """Round floats to 3 decimals all the way down; ``+ 0.0`` turns -0.0 into 0.0."""
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    if isinstance(value, float | np.floating):
        return round(float(value), 3) + 0.0
    if isinstance(value, np.integer):
        return int(value)
    return value


def summarize(
    pods: list[Pod],
    groups: list[PodGroup],
    series: TimeSeries,
    *,
    seed: int,
    events: int,
    wall_seconds: float,
    end_time: float,
    reasons: Mapping[str, str] | None = None,
    workloads: list[dict[str, Any]] | None = None,
    loaning: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the summary dict; see the module docstring for why every float is rounded.

    ``reasons`` (pod ref → why, as the simulator keeps them) is what tells a preempted pod from
    a reclaimed one; without it every eviction counts as "other". ``workloads`` (from
    ``berth.metrics.workloads``) is included when the run had workload objects, ``loaning``
    (``berth.metrics.loaning``) when it had capacity loaning.
    """
    completed = [g for g in groups if g.phase == GroupPhase.COMPLETED]
    allocation = time_weighted_fractions(series.times, series.allocated, series.capacity, end_time)
    utilization = time_weighted_fractions(series.times, series.used, series.capacity, end_time)
    # Fragmentation: the share of idle capacity stranded on partly allocated nodes.
    idle = np.maximum(series.capacity - series.allocated, 0.0)
    fragmentation = time_weighted_fractions(series.times, series.stranded, idle, end_time)
    gpu_fragmentation = _gpu_fragmentation(series, idle, end_time)
    fairness = time_weighted_fractions(
        series.times,
        series.fairness()[:, None],
        np.ones((len(series), 1)),
        end_time,
    )
    measured = [i for i, value in enumerate(allocation) if not np.isnan(value)]
    summary = {
        "seed": seed,
        "events": events,
        "wall_seconds": wall_seconds,
        "end_time": end_time,
        "pods": _pod_counts(pods),
        "jobs": _job_counts(groups),
        "evictions": _eviction_counts(pods, reasons or {}),
        "queueing_delay": percentiles(_delays((g.start_time, g.submit_time) for g in groups)),
        "pod_queueing_delay": percentiles(_delays((p.bind_time, p.submit_time) for p in pods)),
        "jct": percentiles(_delays((g.end_time, g.submit_time) for g in completed)),
        "makespan": _makespan(groups),
        "allocation": {series.resources[i]: float(allocation[i]) for i in measured},
        "utilization": {series.resources[i]: float(utilization[i]) for i in measured},
        "fairness": None if not series.queues or np.isnan(fairness[0]) else float(fairness[0]),
        "fragmentation": {
            series.resources[i]: float(fragmentation[i])
            for i in measured
            if not np.isnan(fragmentation[i])
        },
        "resources": list(series.resources),
    }
    if gpu_fragmentation is not None:
        summary["gpu_fragmentation"] = gpu_fragmentation
    if workloads:
        summary["workloads"] = workloads  # see berth.metrics.workloads
    if loaning is not None:
        summary["loaning"] = loaning
    rounded: dict[str, Any] = _rounded(summary)
    return rounded


def _gpu_fragmentation(
    series: TimeSeries, idle: np.ndarray, end_time: float
) -> dict[str, float] | None:
    """Idle GPU capacity the workload's typical pods cannot use, time-weighted: in GPUs, and as
    a share of the idle GPUs (None without GPUs)."""
    if GPU not in series.resources or not len(series):
        return None
    col = series.resources.index(GPU)
    if not series.capacity[:, col].max() > 0:
        return None
    fragmented = series.gpu_fragmented[:, None]
    ones = np.ones((len(series), 1))
    gpus = time_weighted_fractions(series.times, fragmented / 1000.0, ones, end_time)[0]
    share = time_weighted_fractions(series.times, fragmented, idle[:, col : col + 1], end_time)
    result = {"mean_gpus": float(gpus)}
    if not np.isnan(share[0]):
        result["share_of_idle"] = float(share[0])
    return result


def write_summary(path: str | PathLike[str], summary: dict[str, Any]) -> None:
    """Write ``summary.json`` with sorted keys so identical summaries are identical bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(summary, sort_keys=True, indent=2, allow_nan=False) + "\n")
