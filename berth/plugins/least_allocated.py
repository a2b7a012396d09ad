"""least-allocated: prefer nodes with the most room left after placement, spreading load
(kube-scheduler's LeastAllocated scoring strategy)."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, fraction_after, weighted_mean


class LeastAllocated(AllocationScorer):
    name = "least-allocated"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return weighted_mean(
            cls,
            state,
            rows,
            self.weighed(cls, state),
            lambda col: 100.0 * (1.0 - fraction_after(cls, state, rows, col, nonzero=True)),
        )
