"""balanced-allocation: prefer nodes whose resources would be used in equal proportion, so no
node ends with CPU exhausted and memory idle (or the reverse): kube-scheduler's
NodeResourcesBalancedAllocation.

Two forms, by the ``balance`` argument:

- ``after`` (the default, as Volcano's nodeorder runs it): 100 × (1 − the standard deviation
  of the fractions with the pod placed).
- ``change`` (kube-scheduler v1.37, the release berth's control plane pins, and what a
  KubeSchedulerConfiguration gets): how much placing the pod improves the node's balance,
  50 + (50 + balance with the pod − balance without it) / 2, each balance an integer
  100 × (1 − deviation) as kube-scheduler truncates it; about 75 when the pod changes little.

The fractions are of the requests as they are, over the weighed resources the node has (an
extended resource only for pods that request it); the weights only select resources. A pod
that requests none of them is not scored (every node gets 0), as kube-scheduler skips it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import PluginArgumentError, Rows, row_count
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, fraction_after, fraction_before, present

BALANCES = ("after", "change")


class BalancedAllocation(AllocationScorer):
    name = "balanced-allocation"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.balance = self.arguments.get("balance", "after")
        if self.balance not in BALANCES:
            raise PluginArgumentError(
                f"plugin {self.name}: argument balance: expected one of {', '.join(BALANCES)} "
                f"(got {self.balance!r})"
            )

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        cols = [col for col, _ in self.weighed(cls, state)]
        if not self._requests_any(cls, cols):
            count = row_count(state, rows)
            return np.zeros(count)
        after = self._balance(
            cls, state, rows, cols, [fraction_after(cls, state, rows, c) for c in cols]
        )
        if self.balance == "after":
            return after
        before = self._balance(
            cls, state, rows, cols, [fraction_before(state, rows, c) for c in cols]
        )
        return 50.0 + np.floor((50.0 + np.floor(after) - np.floor(before)) / 2.0)

    def _balance(
        self,
        cls: PodClass,
        state: ClusterState,
        rows: Rows,
        cols: list[int],
        fractions: list[np.ndarray],
    ) -> np.ndarray:
        """100 × (1 − the standard deviation of ``fractions``) per row."""
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
