"""gpu-clustering: pods of the same GPU kind together (the FGD paper's clustering baseline). The
kinds are the simulator's: a share of one device (any size), or 1, 2, 4, 8... whole GPUs.

Scores: a node holding only pods of the pod's own GPU ask 75..100, that ask among others
50..75, a node with no GPU pod 25..50, other nodes 0..25; within each band, fuller nodes (less
idle GPU, against 8 GPUs) score higher. CPU-only pods score 0 everywhere."""

from __future__ import annotations

import numpy as np

from berth.cluster.devices import MILLI
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows, row_index
from berth.framework.podclass import PodClass
from berth.plugins.gpu_placement import MAX_SPEC_GPU, gpu_milli, idle_gpu


def _kind(milli: int) -> int:
    """0 for a share of one device, else the number of whole GPUs (rounded up)."""
    return 0 if milli < MILLI else -(-milli // MILLI)


class GpuClustering(Plugin):
    name = "gpu-clustering"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score" and cls.gpu is not None

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        idx = row_index(state, rows)
        if cls.gpu is None:
            return np.zeros(len(idx))
        present: dict[int, np.ndarray] = {}
        for milli, held in state.gpus.kinds.items():
            kind = _kind(milli)
            here = held[idx] > 0
            present[kind] = present[kind] | here if kind in present else here
        kinds = sum((p.astype(np.int64) for p in present.values()), np.zeros(len(idx), np.int64))
        same = present.get(_kind(gpu_milli(cls)), np.zeros(len(idx), dtype=bool))
        fill = 25.0 * (MAX_SPEC_GPU - idle_gpu(state, idx)) / MAX_SPEC_GPU
        band = np.where(same, np.where(kinds == 1, 75.0, 50.0), np.where(kinds == 0, 25.0, 0.0))
        return band + fill
