"""gpu-topology: for a pod of several whole GPUs, the nodes where one interconnect group
(NVLink island, ``berth.io/gpu-topology``) has all the devices it asks idle score 100; others
score the share of its devices the best group could give. The devices themselves are chosen
within one group whenever one has enough (``berth.cluster.devices``), with or without this
score. Pods of less than two GPUs are left alone."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


class GpuTopology(Plugin):
    name = "gpu-topology"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score" and cls.gpu is not None and cls.gpu.whole >= 2

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        assert cls.gpu is not None
        whole = cls.gpu.whole
        best = state.gpus.largest_group_idle(rows)
        return 100.0 * np.minimum(best, whole) / whole
