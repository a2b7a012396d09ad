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
from berth.plugins.allocation import AllocationScorer, fraction_after, present


class BalancedAllocation(AllocationScorer):
    name = "balanced-allocation"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        cols = [col for col, _ in self.weighed(cls, state)]
        if not self._requests_any(cls, cols):
            count = len(state.schedulable[rows]) if isinstance(rows, slice) else len(rows)
            return np.zeros(count)
        fractions = [fraction_after(cls, state, rows, col) for col in cols]
        if len(cols) == 2:
            # The usual cpu+memory case: the deviation of two values is half their gap (none
            # where a node has only one of them).
            deviation = 0.5 * np.abs(fractions[0] - fractions[1])
            held = state.held_everywhere()
            if not (held[cols[0]] and held[cols[1]]):
                both = present(cls, state, rows, cols[0]) & present(cls, state, rows, cols[1])
                deviation = np.where(both, deviation, 0.0)
        else:
            has = [present(cls, state, rows, col) for col in cols]
            shown = np.vstack(has)
            values = np.vstack(fractions)
            counted = shown.sum(axis=0)
            mean = (values * shown).sum(axis=0) / np.maximum(counted, 1)
            spread = (((values - mean) ** 2) * shown).sum(axis=0) / np.maximum(counted, 1)
            deviation = np.where(counted > 1, np.sqrt(spread), 0.0)
        return 100.0 * (1.0 - deviation)

    def _requests_any(self, cls: PodClass, cols: list[int]) -> bool:
        key = self.name + ":requests"
        answer = cls.static.get(key)
        if answer is None:
            request = cls.request
            answer = cls.static[key] = any(col < len(request) and request[col] for col in cols)
        return answer
