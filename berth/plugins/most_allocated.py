"""most-allocated: prefer nodes that are already full, keeping whole nodes free for large jobs
and reducing fragmentation.

By default it is Volcano's binpack: only the resources the pod requests pull it towards full
nodes, at their requests. ``onlyRequested: false`` makes it kube-scheduler's MostAllocated
scoring strategy: cpu and memory count for every pod (a container that requests none counted
at 100m / 200 MiB), other resources when the pod requests them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Rows
from berth.framework.podclass import PodClass
from berth.plugins.allocation import AllocationScorer, weighted_fraction
from berth.resources import CPU, GPU, MEMORY


class MostAllocated(AllocationScorer):
    name = "most-allocated"
    default_resources = {CPU: 1.0, MEMORY: 1.0, GPU: 1.0}

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.only_requested = self.bool_arg("onlyRequested", True)

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        if self.only_requested:
            request = cls.request
            weights = [
                (col, weight)
                for col, weight in self.resource_weights(state)
                if col < len(request) and request[col]
            ]
        else:
            weights = self.weighed(cls, state)
        used, _ = weighted_fraction(cls, state, rows, weights, nonzero=not self.only_requested)
        return 100.0 * used
