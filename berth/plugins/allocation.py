"""Shared arithmetic of the allocation scorers: what a node would have requested after placing
the pod, as a fraction of what it has, per weighed resource.

Which resources count follows kube-scheduler: a resource a node does not have is left out for
that node, and an extended resource (a GPU, a device) only counts for pods that request it, so
a cpu-only pod is not pulled towards or pushed away from GPU nodes by their GPUs. cpu and
memory count for every pod; least-allocated, kube-scheduler's MostAllocated and
requested-to-capacity-ratio count them as kube-scheduler's allocation scores do, with a
container that requests none counted at 100m cpu or 200 MiB memory (``Pod.nonzero_requests``).

Unlike kube-scheduler, the scores are not cut to whole points (per resource, then the mean):
exact values tell apart nodes it would call equal (docs/configuration.md, "Differences from
kube-scheduler").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows, row_count
from berth.framework.podclass import PodClass
from berth.resources import CPU, MEMORY

#: Resources weighed for every pod; any other only for the pods that request it.
ALWAYS_WEIGHED = frozenset({CPU, MEMORY, "ephemeral-storage"})


def resource_weights(
    plugin_name: str, raw: Any, default: dict[str, float] | None = None
) -> list[tuple[str, float]]:
    """Parse ``resources`` arguments: a list of {name, weight} (kube-scheduler style) or a
    mapping name → weight. Returns (resource, weight) pairs with non-zero weight."""
    if raw is None:
        raw = default or {CPU: 1.0, MEMORY: 1.0}
    if isinstance(raw, list):
        try:
            raw = {item["name"]: item.get("weight", 1) for item in raw}
        except (TypeError, KeyError, AttributeError) as exc:
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
            pairs.append((str(name), value))
    return pairs


def requested_after(
    cls: PodClass, state: ClusterState, rows: Rows, col: int, nonzero: bool
) -> np.ndarray:
    """What each node would have requested of resource ``col`` with the pod placed;
    ``nonzero``: cpu and memory counted as kube-scheduler's allocation scores count them."""
    if nonzero and col < 2:
        extra = state.nonzero_extra[:, col][rows]
        return state.requested[:, col][rows] + extra + cls.scored_cpu_memory[col]
    request = cls.request[col] if col < len(cls.request) else 0
    return state.requested[:, col][rows] + request


def fraction_after(
    cls: PodClass, state: ClusterState, rows: Rows, col: int, nonzero: bool = False
) -> np.ndarray:
    """requested-after-placement / allocatable of resource ``col`` per row, clipped to 1, and 0
    on nodes that do not have the resource.

    Cached per evaluation in the class's scratch space, so the allocation scorers together pay
    for each resource column once (the scored and the plain cpu/memory once too, while no pod
    has scored requests that differ from its requests).
    """
    if nonzero and (col >= 2 or _scored_is_requested(cls, state)):
        nonzero = False
    key = ("fraction", col, nonzero)
    cached = cls.scratch.get(key)
    if cached is not None:
        return cached
    after = requested_after(cls, state, rows, col, nonzero)
    fraction = _clipped(after, state.allocatable[:, col][rows], state.held_everywhere()[col])
    cls.scratch[key] = fraction
    return fraction


def fraction_before(state: ClusterState, rows: Rows, col: int) -> np.ndarray:
    """requested / allocatable of resource ``col`` per row as the node is, clipped to 1, and 0
    on nodes that do not have the resource."""
    return _clipped(
        state.requested[:, col][rows], state.allocatable[:, col][rows], state.held_everywhere()[col]
    )


def _clipped(requested: np.ndarray, alloc: np.ndarray, everywhere: bool | np.bool_) -> np.ndarray:
    """``requested / alloc`` clipped to 1, and 0 where ``alloc`` is 0; ``everywhere``: no
    node lacks the resource, so there is no 0 to guard (the same values, fewer passes)."""
    if everywhere:
        return np.minimum(requested / alloc, 1.0)
    return np.where(alloc > 0, np.minimum(requested / np.maximum(alloc, 1), 1.0), 0.0)


def present(cls: PodClass, state: ClusterState, rows: Rows, col: int) -> np.ndarray:
    """Which rows' nodes have resource ``col`` at all (cached per evaluation like the
    fractions)."""
    key = ("present", col)
    cached = cls.scratch.get(key)
    if cached is None:
        cached = cls.scratch[key] = state.allocatable[:, col][rows] > 0
    return cached


def _scored_is_requested(cls: PodClass, state: ClusterState) -> bool:
    scored = cls.scored_cpu_memory
    return bool(
        state.nonzero_differs == 0 and scored[0] == cls.request[0] and scored[1] == cls.request[1]
    )


def weighted_fraction(
    cls: PodClass,
    state: ClusterState,
    rows: Rows,
    weights: list[tuple[int, float]],
    nonzero: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The ``fraction_after`` of the weighted resources, averaged by weight over the resources
    each node has, and which nodes have any of them (None: all do; the others get 0)."""
    weights = [(col, weight) for col, weight in weights if col < state.width]
    held = state.held_everywhere()
    if weights and all(held[col] for col, _ in weights):
        # No node lacks any of them: a plain weighted mean, no masks (a weight of 1 and the
        # sum's start at 0 add passes, not value).
        summed: Any = None
        for col, weight in weights:
            term = fraction_after(cls, state, rows, col, nonzero)
            term = term if weight == 1 else weight * term
            summed = term if summed is None else summed + term
        return summed / sum(weight for _, weight in weights), None
    count = row_count(state, rows)
    summed, total = np.zeros(count), np.zeros(count)
    for col, weight in weights:
        node_weight = weight * present(cls, state, rows, col)
        summed += node_weight * fraction_after(cls, state, rows, col, nonzero)
        total += node_weight
    counted = total > 0
    return np.where(counted, summed / np.maximum(total, 1e-12), 0.0), counted


class AllocationScorer(Plugin):
    """Base of the scorers that rank nodes by the fractions above."""

    #: Resources weighed when the configuration names none.
    default_resources: dict[str, float] = {CPU: 1.0, MEMORY: 1.0}

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        # Parsed now so a bad argument fails when the scheduler is built, not mid-session.
        self._named = resource_weights(
            self.name, self.arguments.get("resources"), self.default_resources
        )
        self._weights: list[tuple[int, float]] | None = None
        self._weighed_key = self.name + ":weighed"

    def resource_weights(self, state: ClusterState) -> list[tuple[int, float]]:
        """(column, weight) pairs; columns are registered on the state's axis on first use."""
        if self._weights is None:
            self._weights = [(state.axis.index(name), w) for name, w in self._named]
        return self._weights

    def weighed(self, cls: PodClass, state: ClusterState) -> list[tuple[int, float]]:
        """The configured resources that count for this pod: cpu, memory and ephemeral
        storage always, any other only when the pod requests it (kept with the class)."""
        key = self._weighed_key
        cached = cls.static.get(key)
        if cached is None:
            request = cls.request
            names = state.axis.names
            cached = cls.static[key] = [
                (col, weight)
                for col, weight in self.resource_weights(state)
                if col < state.width
                and (names[col] in ALWAYS_WEIGHED or (col < len(request) and request[col]))
            ]
        return cached
