"""gpu-bestfit: the node the pod leaves least free, cpu and GPU weighed equally, each against a
large node (128 cores, 8 GPUs), as in the FGD paper's best-fit baseline; the share goes to the
fitting device with least left (the default device choice)."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows, row_index
from berth.framework.podclass import PodClass
from berth.plugins.gpu_placement import (
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    cpu_column,
    gpu_milli,
    idle_gpu,
    pod_cpu,
)


class GpuBestFit(Plugin):
    name = "gpu-bestfit"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score"

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        idx = row_index(state, rows)
        cpu_left = state.free[idx, cpu_column(state)] - pod_cpu(cls, state)
        gpu_left = idle_gpu(state, idx) - gpu_milli(cls)
        left = 0.5 * cpu_left / MAX_SPEC_CPU + 0.5 * gpu_left / MAX_SPEC_GPU
        return np.clip(100.0 * (1.0 - left), 0.0, 100.0)
