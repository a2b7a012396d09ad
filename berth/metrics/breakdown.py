"""Queueing delay and JCT per queue and per job size.

A headline mean hides who pays for a policy: packing GPUs may shorten the wait of one-GPU jobs
and lengthen that of 64-GPU gangs, or favour one queue. ``JobSample`` keeps, per job, what a
breakdown needs (its queue, its size, its wait and JCT) as compact arrays that cross process
boundaries cheaply; ``breakdown`` groups them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.api.objects import GroupPhase, Pod, PodGroup
from berth.resources import GPU

#: The job sizes a breakdown groups by: GPUs when any job asks for them, else pods.
BY_GPUS = "GPUs per job"
BY_PODS = "pods per job"


@dataclass(slots=True)
class JobSample:
    """One run's jobs as parallel arrays (NaN: not started, or not completed)."""

    queues: list[str]
    gpus: np.ndarray  # GPUs the job's pods ask for together
    pods: np.ndarray  # distinct pods the job ran (replacements of a pod count once)
    wait: np.ndarray  # submit to start
    jct: np.ndarray  # submit to end, completed jobs only

    def __len__(self) -> int:
        return len(self.queues)

    @property
    def queueing(self) -> np.ndarray:
        return self.wait[~np.isnan(self.wait)]

    @property
    def completion(self) -> np.ndarray:
        return self.jct[~np.isnan(self.jct)]


def job_sample(pods: Sequence[Pod], groups: Sequence[PodGroup]) -> JobSample:
    index = {group.key: i for i, group in enumerate(groups)}
    gpus = np.zeros(len(groups))
    sizes = np.zeros(len(groups))
    seen: set[tuple[int, str]] = set()
    for pod in pods:
        i = index.get(pod.job_key)
        if i is None or (i, pod.name) in seen:
            continue
        seen.add((i, pod.name))
        sizes[i] += 1
        gpus[i] += pod.requests.get(GPU, 0) / 1000.0
    nan = float("nan")
    wait = [g.start_time - g.submit_time if g.start_time is not None else nan for g in groups]
    jct = [
        g.end_time - g.submit_time
        if g.phase == GroupPhase.COMPLETED and g.end_time is not None
        else nan
        for g in groups
    ]
    return JobSample(
        [g.queue for g in groups], gpus, sizes, np.array(wait, float), np.array(jct, float)
    )


def size_dimension(samples: Sequence[JobSample]) -> str:
    """GPUs per job when some job asks for a GPU, else pods per job (a CPU-only workload)."""
    return BY_GPUS if any(s.gpus.any() for s in samples) else BY_PODS


def size_bucket(value: float) -> tuple[float, str]:
    """(sort key, label) of the power-of-two bucket holding ``value``: 0 ("none"), under one
    ("<1"), 1, 2, 3–4, 5–8, 9–16 and so on."""
    if value <= 0:
        return 0.0, "none"
    if value < 1:
        return 0.5, "<1"
    whole = int(np.ceil(value - 1e-9))
    top = 1 << max(whole - 1, 0).bit_length()
    if top <= 2:
        return float(top), str(top)
    return float(top), f"{top // 2 + 1}–{top}"


def _stats(wait: np.ndarray, jct: np.ndarray) -> dict[str, float | None]:
    started, done = wait[~np.isnan(wait)], jct[~np.isnan(jct)]
    return {
        "jobs": float(len(wait)),
        "queueing_mean": float(started.mean()) if len(started) else None,
        "queueing_p95": float(np.percentile(started, 95)) if len(started) else None,
        "jct_mean": float(done.mean()) if len(done) else None,
    }


#: The figures a breakdown gives per group (each delay: lower is better).
BREAKDOWN_STATS = ("jobs", "queueing_mean", "queueing_p95", "jct_mean")


def _groups(sample: JobSample, by: str) -> dict[str, tuple[float, np.ndarray]]:
    """Job indices per group label, with the label's sort key."""
    if by == "queue":
        labels = [(0.0, queue) for queue in sample.queues]
    else:
        sizes = sample.gpus if by == BY_GPUS else sample.pods
        labels = [size_bucket(float(v)) for v in sizes]
    groups: dict[str, tuple[float, list[int]]] = {}
    for i, (key, label) in enumerate(labels):
        groups.setdefault(label, (key, []))[1].append(i)
    return {label: (key, np.array(rows, int)) for label, (key, rows) in groups.items()}


def breakdown(runs: Mapping[str, Sequence[JobSample]], by: str) -> dict[str, Any]:
    """Per group (a queue, or a size bucket when ``by`` is BY_GPUS or BY_PODS) and per
    configuration: each figure's mean over the configuration's runs (seeds), its spread (sample
    standard deviation, None with one run) and every run's value."""
    per_run: dict[str, list[dict[str, dict[str, float | None]]]] = {}
    keys: dict[str, float] = {}
    for config, samples in runs.items():
        per_run[config] = []
        for sample in samples:
            figures = {}
            for label, (key, rows) in _groups(sample, by).items():
                keys[label] = key
                figures[label] = _stats(sample.wait[rows], sample.jct[rows])
            per_run[config].append(figures)
    rows = []
    for label in sorted(keys, key=lambda name: (keys[name], name)):
        values: dict[str, dict[str, Any]] = {}
        for config, figures in per_run.items():
            values[config] = {
                stat: aggregate([f.get(label, {}).get(stat) for f in figures])
                for stat in BREAKDOWN_STATS
            }
        rows.append({"group": label, "values": values})
    return {"by": by, "rows": rows}


def aggregate(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean and spread (sample standard deviation) of one figure over runs; runs without a
    value (no job started, say) are left out of both but kept in ``runs``."""
    known = np.array([v for v in values if v is not None], dtype=float)
    return {
        "mean": float(known.mean()) if len(known) else None,
        "spread": float(known.std(ddof=1)) if len(known) > 1 else None,
        "runs": list(values),
    }
