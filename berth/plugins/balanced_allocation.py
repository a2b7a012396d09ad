"""balanced-allocation: prefer nodes whose resources would be used in equal proportion, so no
node ends with CPU exhausted and memory idle (or the reverse): kube-scheduler's
NodeResourcesBalancedAllocation, 100 × (1 − the standard deviation of the fractions).

The fractions are of the requests as they are, over the weighed resources the node has (an
extended resource only for pods that request it); the weights only select resources. A pod
that requests none of them is not scored (every node gets 0), as kube-scheduler skips it.
"""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, fraction_after


class BalancedAllocation(AllocationScorer):
    name = "balanced-allocation"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        count = len(state.schedulable[rows]) if isinstance(rows, slice) else len(rows)
        cols = [col for col, _ in self.weighed(cls, state) if col < state.width]
        request = cls.request
        if not any(col < len(request) and request[col] for col in cols):
            return np.zeros(count)
        fractions = np.vstack([fraction_after(cls, state, rows, col) for col in cols])
        has = np.vstack([state.allocatable[:, col][rows] > 0 for col in cols])
        present = has.sum(axis=0)
        if len(cols) == 2 and has.all():
            # The usual cpu+memory case: the deviation of two values is half their gap.
            deviation = 0.5 * np.abs(fractions[0] - fractions[1])
        else:
            shown = np.maximum(present, 1)
            mean = (fractions * has).sum(axis=0) / shown
            spread = (((fractions - mean) ** 2) * has).sum(axis=0) / shown
            deviation = np.where(present > 1, np.sqrt(spread), 0.0)
        return 100.0 * (1.0 - deviation)
