"""Sums over the schedulable nodes of a per-node figure, kept current from ClusterState's
change log: a session reads the cluster's idle capacity, a sample its stranded capacity and a
gang's turn the room its pods' class has, after a handful of binds have touched a handful of
rows, on clusters of thousands of nodes.

The figures are integers, so a sum patched row by row is exactly the sum taken afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class NodeRows(Protocol):
    """What a total reads of ClusterState (which keeps its totals, so does not come here)."""

    n: int
    free: np.ndarray
    requested: np.ndarray
    schedulable: np.ndarray
    structure_epoch: int

    @property
    def log_position(self) -> int: ...

    def changed_rows(self, since: int) -> np.ndarray | None: ...


#: A per-node figure: the state and the rows asked about (all, as a slice, or some) -> an
#: integer figure per row (or a row of them per row).
Figure = Callable[[Any, slice | np.ndarray], np.ndarray]


class NodeTotal:
    def __init__(self, figure: Figure) -> None:
        self.figure = figure
        self._rows = np.zeros((0, 0), dtype=np.int64)  # each node's figure as last summed
        self._total = np.zeros(0, dtype=np.int64)
        self._seen: tuple[int, int] | None = None  # (structure epoch, log position)

    def read(self, state: NodeRows) -> np.ndarray:
        seen = self._seen
        changed = None
        if seen is not None and seen[0] == state.structure_epoch:
            changed = state.changed_rows(seen[1])
        if changed is None:
            n = state.n
            rows = self.figure(state, slice(0, n))
            rows[~state.schedulable[:n]] = 0
            self._rows, self._total = rows, rows.sum(axis=0)
        elif len(changed):
            rows = self.figure(state, changed)
            rows[~state.schedulable[changed]] = 0
            self._total = self._total + (rows - self._rows[changed]).sum(axis=0)
            self._rows[changed] = rows
        self._seen = (state.structure_epoch, state.log_position)
        return self._total


def idle(state: NodeRows, rows: slice | np.ndarray) -> np.ndarray:
    return np.maximum(state.free[rows], 0)


def stranded(state: NodeRows, rows: slice | np.ndarray) -> np.ndarray:
    """Free room on nodes already partly allocated in that resource: room a job needing whole
    nodes cannot use (fragmentation)."""
    free = state.free[rows]
    return np.where((free > 0) & (state.requested[rows] > 0), free, 0)
