"""resource-fit: a node fits when its free capacity covers the pod's request in every resource."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


class ResourceFit(Plugin):
    name = "resource-fit"
    reason = "insufficient resources"
    checks_free_capacity = True

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        free = state.free
        request = cls.request
        cols = cls.nonzero
        if not len(cols):
            return np.ones(len(state.schedulable[rows]), dtype=bool)
        mask = free[:, cols[0]][rows] >= request[cols[0]]
        for col in cols[1:]:
            mask &= free[:, col][rows] >= request[col]
        return mask

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        return [
            (f"insufficient {state.axis.names[col]}", state.free[:, col][rows] < cls.request[col])
            for col in cls.nonzero
        ]
