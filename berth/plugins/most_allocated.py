"""most-allocated (Volcano's binpack): prefer nodes that are already full, keeping whole nodes
free for large jobs and reducing fragmentation."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, weighted_fraction
from berth.resources import CPU, GPU, MEMORY


class MostAllocated(AllocationScorer):
    name = "most-allocated"
    default_resources = {CPU: 1.0, MEMORY: 1.0, GPU: 1.0}

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        # Only resources the pod asks for pull it towards full nodes, as in Volcano's binpack.
        request = cls.request
        weights = [
            (col, weight)
            for col, weight in self.resource_weights(state)
            if col < len(request) and request[col]
        ]
        return 100.0 * weighted_fraction(cls, state, rows, weights)
