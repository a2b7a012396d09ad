"""Shared arithmetic of the allocation scorers: the fraction of each weighted resource a node
would have requested after placing the pod."""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows
from berth.framework.podclass import PodClass
from berth.resources import CPU, MEMORY


def resource_weights(
    plugin_name: str, state: ClusterState, raw: Any, default: dict[str, float] | None = None
) -> list[tuple[int, float]]:
    """Parse ``resources`` arguments: a list of {name, weight} (kube-scheduler style) or a
    mapping name → weight. Returns (column, weight) pairs."""
    if raw is None:
        raw = default or {CPU: 1.0, MEMORY: 1.0}
    if isinstance(raw, list):
        try:
            raw = {item["name"]: item.get("weight", 1) for item in raw}
        except (TypeError, KeyError) as exc:
            raise PluginArgumentError(
                f"plugin {plugin_name}: argument resources: expected a list of {{name, weight}}"
            ) from exc
    if not isinstance(raw, dict):
        raise PluginArgumentError(
            f"plugin {plugin_name}: argument resources: expected a mapping of resource to weight"
        )
    pairs = []
    for name, weight in raw.items():
        try:
            value = float(weight)
        except (TypeError, ValueError) as exc:
            raise PluginArgumentError(
                f"plugin {plugin_name}: argument resources.{name}: {weight!r} is not a number"
            ) from exc
        if value < 0:
            raise PluginArgumentError(
                f"plugin {plugin_name}: argument resources.{name}: must be >= 0 (got {weight})"
            )
        if value:
            pairs.append((state.axis.index(name), value))
    return pairs


def fractions_after(
    cls: PodClass, state: ClusterState, rows: Rows, weights: list[tuple[int, float]]
) -> tuple[list[np.ndarray], list[float]]:
    """requested-after-placement / allocatable per weighted resource the node has (clipped to
    1). Resources a node does not have are skipped for that node by giving them weight 0."""
    fractions, node_weights = [], []
    for col, weight in weights:
        if col >= state.width:
            continue
        alloc = state.allocatable[rows, col]
        after = state.requested[rows, col] + (cls.request[col] if col < len(cls.request) else 0)
        has = alloc > 0
        fraction = np.where(has, np.minimum(after / np.maximum(alloc, 1), 1.0), 0.0)
        fractions.append(fraction)
        node_weights.append(np.where(has, weight, 0.0))
    return fractions, node_weights


class AllocationScorer(Plugin):
    """Base of the scorers that rank nodes by the fractions above."""

    #: Resources weighed when the configuration names none.
    default_resources: dict[str, float] = {CPU: 1.0, MEMORY: 1.0}

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self._weights: list[tuple[int, float]] | None = None

    def resource_weights(self, state: ClusterState) -> list[tuple[int, float]]:
        if self._weights is None:
            self._weights = resource_weights(
                self.name, state, self.arguments.get("resources"), self.default_resources
            )
        return self._weights


def weighted_mean(values: list[np.ndarray], weights: list[np.ndarray], size: int) -> np.ndarray:
    if not values:
        return np.zeros(size)
    total_weight = np.sum(weights, axis=0)
    summed = np.sum([v * w for v, w in zip(values, weights, strict=True)], axis=0)
    return np.where(total_weight > 0, summed / np.maximum(total_weight, 1e-12), 0.0)
