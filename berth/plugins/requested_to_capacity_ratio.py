"""requested-to-capacity-ratio: kube-scheduler's RequestedToCapacityRatio scoring strategy.

Each weighed resource's utilization after placement (requested ÷ allocatable, in whole
percent, 100 when over) is mapped through a piecewise-linear ``shape`` of (utilization, score)
points, scores 0..10 scaled to 0..100; the node's score is the weighted mean over the
resources that score above 0, rounded. A shape rising with utilization packs (binpack of
chosen resources, e.g. GPUs); a falling one spreads. The arithmetic is kube-scheduler's, in
whole numbers, so scores agree with it exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import PluginArgumentError, Rows, row_count
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, requested_after

#: kube-scheduler's default shape: an empty node scores 10, a full one 0.
DEFAULT_SHAPE = ((0, 10), (100, 0))
MAX_SHAPE_SCORE = 10


def broken_linear(points: tuple[tuple[int, int], ...], utilization: np.ndarray) -> np.ndarray:
    """The shape's score at each utilization: the first point's score below it, the last's
    above, linear in between with the fraction truncated towards zero (integer arithmetic)."""
    xs = np.array([p[0] for p in points], dtype=np.int64)
    ys = np.array([p[1] for p in points], dtype=np.int64)
    index = np.searchsorted(xs, utilization, side="left")
    result = np.where(index == 0, ys[0], ys[-1])
    inner = (index > 0) & (index < len(xs))
    right = np.clip(index, 1, len(xs) - 1)
    left = right - 1
    rise = (ys[right] - ys[left]) * (utilization - xs[left])
    run = xs[right] - xs[left]
    step = np.sign(rise) * (np.abs(rise) // run)
    return np.where(inner, ys[left] + step, result)


def parse_shape(plugin: str, raw: Any) -> tuple[tuple[int, int], ...]:
    if raw is None:
        return DEFAULT_SHAPE
    where = f"plugin {plugin}: argument shape"
    if not isinstance(raw, list) or not raw:
        raise PluginArgumentError(f"{where}: expected a non-empty list of {{utilization, score}}")
    points: list[tuple[int, int]] = []
    for index, point in enumerate(raw):
        if not isinstance(point, dict) or set(point) - {"utilization", "score"}:
            raise PluginArgumentError(f"{where}[{index}]: expected {{utilization, score}}")
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        for name, value, top in (("utilization", utilization, 100), ("score", score, 10)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                raise PluginArgumentError(
                    f"{where}[{index}].{name}: expected an integer 0..{top} (got {value!r})"
                )
        if points and utilization <= points[-1][0]:
            raise PluginArgumentError(
                f"{where}[{index}].utilization: must increase from point to point"
            )
        points.append((utilization, score))
    return tuple(points)


class RequestedToCapacityRatio(AllocationScorer):
    name = "requested-to-capacity-ratio"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.shape = tuple(
            (u, s * (100 // MAX_SHAPE_SCORE))
            for u, s in parse_shape(self.name, self.arguments.get("shape"))
        )

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        summed: np.ndarray | int = 0
        total: np.ndarray | int = 0
        for col, weight in self.weighed(cls, state):
            if col >= state.width:
                continue
            alloc = state.allocatable[:, col][rows]
            after = requested_after(cls, state, rows, col, nonzero=True)
            utilization = np.where(after > alloc, 100, after * 100 // np.maximum(alloc, 1))
            points = broken_linear(self.shape, utilization)
            counts = (alloc > 0) & (points > 0)
            summed = summed + np.where(counts, points * weight, 0)
            total = total + np.where(counts, weight, 0)
        if isinstance(total, int):
            return np.zeros(row_count(state, rows))
        mean = np.where(total > 0, summed / np.maximum(total, 1e-12), 0.0)
        return np.floor(mean + 0.5)  # rounded half away from zero (the mean is never negative)
