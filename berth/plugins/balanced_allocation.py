"""balanced-allocation: prefer nodes whose resources would be used in equal proportion, so no
node ends with CPU exhausted and memory idle (or the reverse)."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, fraction_after


class BalancedAllocation(AllocationScorer):
    name = "balanced-allocation"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        cols = [col for col, _ in self.resource_weights(state) if col < state.width]
        if len(cols) < 2:
            return np.full(len(rows), 100.0)
        fractions = [fraction_after(cls, state, rows, col) for col in cols]
        if len(cols) == 2:  # the usual cpu+memory case: std of two values is half their gap
            return 100.0 * (1.0 - 0.5 * np.abs(fractions[0] - fractions[1]))
        return 100.0 * (1.0 - np.std(np.vstack(fractions), axis=0))
