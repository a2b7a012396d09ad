"""balanced-allocation: prefer nodes whose resources would be used in equal proportion, so no
node ends with CPU exhausted and memory idle (or the reverse)."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, fractions_after


class BalancedAllocation(AllocationScorer):
    name = "balanced-allocation"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        fractions, _ = fractions_after(cls, state, rows, self.resource_weights(state))
        if len(fractions) < 2:
            return np.full(len(rows), 100.0)
        return 100.0 * (1.0 - np.std(np.vstack(fractions), axis=0))
