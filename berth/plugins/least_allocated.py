"""least-allocated: prefer nodes with the most room left after placement, spreading load
(kube-scheduler's LeastAllocated scoring strategy)."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, weighted_fraction


class LeastAllocated(AllocationScorer):
    name = "least-allocated"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        used, counted = weighted_fraction(cls, state, rows, self.weighed(cls, state), nonzero=True)
        free = 100.0 * (1.0 - used)
        return free if counted is None else np.where(counted, free, 0.0)
