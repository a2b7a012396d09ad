"""What ``berth compare`` compares: each run's outcome, the headline metrics with their
direction, and the table built from them (means over seeds, spread, ratios to the first
configuration, and whether each configuration did better or worse).

It sits below both the command that runs the configurations and the report that draws them,
so that the report never needs the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.metrics.breakdown import JobSample, aggregate, breakdown, size_dimension

#: Headline rows: (label, path into summary.json, lower is better, unit). Durations are in
#: seconds, fractions in 0..1, counts plain.
METRICS: tuple[tuple[str, tuple[str, ...], bool, str], ...] = (
    ("jobs completed", ("jobs", "completed"), False, "count"),
    ("jobs pending at end", ("jobs", "pending"), True, "count"),
    ("queueing delay mean", ("queueing_delay", "mean"), True, "seconds"),
    ("queueing delay p50", ("queueing_delay", "p50"), True, "seconds"),
    ("queueing delay p95", ("queueing_delay", "p95"), True, "seconds"),
    ("JCT mean", ("jct", "mean"), True, "seconds"),
    ("JCT p50", ("jct", "p50"), True, "seconds"),
    ("JCT p95", ("jct", "p95"), True, "seconds"),
    ("makespan", ("makespan",), True, "seconds"),
    ("pods evicted", ("pods", "evicted"), True, "count"),
    ("pods preempted", ("evictions", "preempted"), True, "count"),
    ("pods reclaimed", ("evictions", "reclaimed"), True, "count"),
)
#: Rows for runs with deadlines (``berth.io/deadline``, or ``--deadlines``): added when every
#: run has a ``deadlines`` section.
DEADLINE_METRICS: tuple[tuple[str, tuple[str, ...], bool, str], ...] = (
    ("deadlines met", ("deadlines", "met"), False, "count"),
    ("deadlines met, share", ("deadlines", "met_share"), False, "fraction"),
    ("deadlines missed", ("deadlines", "missed"), True, "count"),
    ("jobs dropped", ("deadlines", "dropped"), True, "count"),
)
#: Resources whose shares are too small or uniform to compare usefully.
_SKIP_RESOURCES = {"pods"}
#: A difference smaller than this share of the first configuration's value is no difference.
SAME_WITHIN = 0.01
#: With several seeds, a difference must also exceed this many standard errors.
NOISE_ERRORS = 2.0

BETTER, WORSE, SAME = "better", "worse", "same"


@dataclass
class RunOutcome:
    """One run of one configuration: its summary, its jobs, its allocation over time."""

    config: str
    seed: int
    summary: dict[str, Any]
    jobs: JobSample
    times: np.ndarray
    allocation: np.ndarray  # (T, R) fraction of capacity
    resources: list[str]
    #: ``SimResult.quiet_from``: when the run had nothing left to do before its end, if it had.
    quiet_from: float | None = None

    @property
    def queueing(self) -> np.ndarray:
        return self.jobs.queueing

    @property
    def jct(self) -> np.ndarray:
        return self.jobs.completion


def _lookup(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return None if value is None else float(value)


def by_config(outcomes: Sequence[RunOutcome]) -> dict[str, list[RunOutcome]]:
    """Runs per configuration, configurations in order of first appearance."""
    runs: dict[str, list[RunOutcome]] = {}
    for outcome in outcomes:
        runs.setdefault(outcome.config, []).append(outcome)
    return runs


def verdict(base: dict[str, Any], other: dict[str, Any], lower_is_better: bool) -> str | None:
    """``better``, ``worse`` or ``same`` for ``other`` against ``base`` (both as made by
    ``aggregate``): the same when the means differ by at most SAME_WITHIN of the base, or, with
    several seeds, by at most NOISE_ERRORS standard errors of the difference."""
    a, b = base["mean"], other["mean"]
    if a is None or b is None:
        return None
    errors = [
        (item["spread"] or 0.0) ** 2 / max(len([v for v in item["runs"] if v is not None]), 1)
        for item in (base, other)
    ]
    tolerance = max(SAME_WITHIN * abs(a), NOISE_ERRORS * float(np.sqrt(sum(errors))))
    difference = b - a
    if abs(difference) <= tolerance:
        return SAME
    return BETTER if (difference < 0) == lower_is_better else WORSE


def _metrics(runs: dict[str, list[RunOutcome]]) -> list[tuple[str, tuple[str, ...], bool, str]]:
    metrics = list(METRICS)
    everyone = [o for outcomes in runs.values() for o in outcomes]
    if everyone and all("deadlines" in o.summary for o in everyone):
        metrics.extend(DEADLINE_METRICS)
    resources = everyone[0].resources if everyone else []
    for resource in resources:
        if resource in _SKIP_RESOURCES:
            continue
        if all(resource in o.summary.get("allocation", {}) for o in everyone):
            metrics.append((f"{resource} allocation", ("allocation", resource), False, "fraction"))
            metrics.append(
                (f"{resource} utilization", ("utilization", resource), False, "fraction")
            )
        if all(resource in o.summary.get("fragmentation", {}) for o in everyone):
            metrics.append(
                (f"{resource} idle stranded", ("fragmentation", resource), True, "fraction")
            )
    return metrics


def comparison_table(outcomes: Sequence[RunOutcome]) -> dict[str, Any]:
    """Rows of metrics: per configuration the mean over its seeds (``values``), the spread
    (sample standard deviation, None with one seed), every run's value (``runs``, in seed
    order), the ratio of means to the first configuration and a verdict against it; then
    queueing delay and JCT broken down per queue and per job size."""
    runs = by_config(outcomes)
    names = list(runs)
    rows = []
    for label, path, lower_better, unit in _metrics(runs):
        figures = {
            name: aggregate([_lookup(o.summary, path) for o in runs[name]]) for name in names
        }
        base = figures[names[0]]["mean"] if names else None
        rows.append(
            {
                "metric": label,
                "unit": unit,
                "lower_is_better": lower_better,
                "values": {name: figures[name]["mean"] for name in names},
                "spread": {name: figures[name]["spread"] for name in names},
                "runs": {name: figures[name]["runs"] for name in names},
                "ratio_to_first": {
                    name: None
                    if figures[name]["mean"] is None or not base
                    else round(figures[name]["mean"] / base, 3)
                    for name in names
                },
                "verdict": {
                    name: verdict(figures[names[0]], figures[name], lower_better)
                    for name in names[1:]
                },
            }
        )
    samples = {name: [o.jobs for o in runs[name]] for name in names}
    everyone = [s for ss in samples.values() for s in ss]
    return {
        "configs": names,
        "seeds": {name: [o.seed for o in runs[name]] for name in names},
        "rows": rows,
        "breakdowns": {
            "queue": breakdown(samples, "queue"),
            "size": breakdown(samples, size_dimension(everyone)),
        },
    }
