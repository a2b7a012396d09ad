"""least-allocated: prefer nodes with the most room left after placement, spreading load."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, weighted_fraction


class LeastAllocated(AllocationScorer):
    name = "least-allocated"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return 100.0 * (1.0 - weighted_fraction(cls, state, rows, self.resource_weights(state)))
